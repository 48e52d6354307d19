"""A release's own reading of ROCm backends: the version of a legacy tag and whether a build loads under a torch's
ROCm (run inside that release's venv, see tests/helpers/kernels_releases.py)."""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from tests.helpers.kernels_oracle.internals import internal, release


def _parse(tag: str) -> Any:
    backends = internal("backends")
    if release() >= Version("0.19"):
        return backends.parse_backend([tag], legacy=True)
    return backends.parse_backend(tag)


def rocm_version(payload: dict[str, str]) -> str:
    """``{"tag": "rocm714"}`` → the version the release reads (0.19.1: ``7.14``; 0.17.2: ``71.4``)."""
    return str(_parse(payload["tag"]).version)


def rocm_loads(payload: dict[str, str]) -> bool:
    """``{"tag": "rocm71", "system": "7.2"}``: whether the release picks a ``tag`` build for a torch whose ROCm is
    ``system``. 0.19.1: ``variants._backend_mismatch`` (CUDA's minor rule); 0.17.2: ``_check_variants`` compares the
    backends' ``variant_str`` (an exact match)."""
    build = _parse(payload["tag"])
    system = internal("backends").ROCm(version=Version(payload["system"]))
    if release() >= Version("0.19"):
        return internal("variants")._backend_mismatch(build, system, None) is None  # type: ignore[no-any-return]
    return bool(build.variant_str == system.variant_str)
