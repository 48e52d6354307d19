"""kernelwheel.format.variants against each supported kernels release's own parser and resolver.

Every release answers in its own venv (tests/helpers/kernels_releases.py, oracle tests/helpers/kernels_oracle/
variants.py). Where a release accepts a legacy-grammar name, our parser accepts it with the same meaning; the
newest release also decides the kernels 0.19 grammar (new names, SDKs, MLX): what it accepts we accept alike, what it
refuses we refuse. ``STRICTER`` lists the names we refuse on purpose although kernels takes them.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from kernelwheel.format.variant_pieces import Backend, Noarch, Sdk, Torch, TorchStableAbi
from kernelwheel.format.variants import Variant
from kernelwheel.index.target_environment import cuda_compatible
from kernelwheel.io.errors import InvalidVariantName
from tests.helpers.kernels_releases import RELEASES, ask

NEWEST = RELEASES[-1]

LEGACY = [
    "torch29-cxx11-cu128-x86_64-linux", "torch210-cxx11-cu130-x86_64-linux", "torch26-cxx98-cu124-aarch64-linux",
    "torch213-cxx11-rocm71-x86_64-linux", "torch213-xpu20253-x86_64-linux", "torch212-cxx11-cpu-aarch64-linux",
    "torch213-metal-aarch64-darwin", "torch210-cu128-x86_64-windows", "torch-stable-abi211-cu130-x86_64-linux",
    "tvm-ffi01-cu130-x86_64-linux", "torch213-cxx11-cann81-aarch64-linux", "torch214-neuron-x86_64-linux",
    "torch214-tpu-x86_64-linux", "torch-cuda", "torch-cpu", "torch-universal", "torch-npu", "torch-cann",
]
# Legacy names an older release reads otherwise; we read them as the newest release does.
NEWEST_READING = {"torch214-rocm714-x86_64-linux": "0.17 reads rocm714 as ROCm 71.4, 0.19 as 7.14"}
NEW = [
    "torch-2.14-cxx11-cuda-13.0-cpython-3.9-abi3-x86_64-linux", "torch-2.14-cuda-13.0-cpython-3.12-abi3-x86_64-linux",
    "torch-stable-abi-2.11-cuda-13.0-cpython-3.9-abi3-x86_64-linux",
    "tvm-ffi-0.1-cuda-12.8-cpython-3.9-abi3-aarch64-linux", "torch-2.14-rocm-7.1-cpython-3.9-abi3-x86_64-linux",
    "torch-2.14-rocm-7.14-cpython-3.9-abi3-x86_64-linux", "torch-2.14-xpu-2025.3-cpython-3.9-abi3-x86_64-linux",
    "torch-2.14-cann-8.1-cpython-3.9-abi3-aarch64-linux", "torch-2.14-cpu-cpython-3.15-abi3t-x86_64-linux",
    "torch-2.14-metal-cpython-3.9-abi3-aarch64-darwin", "torch-10.0-cuda-13.0-cpython-3.9-abi3-x86_64-linux",
    "sdk", "sdk-cuda", "sdk-cpython-3.12-abi3-x86_64-linux", "sdk-cuda-12.8-cpython-3.12-abi3-x86_64-linux",
    "sdk-cpu-cpython-3.9-abi3-aarch64-linux", "mlx-metal", "mlx-cpu",
]
INVALID = [
    "torch-2.14-cuda-13.0-cpython-3.12-abi3t-x86_64-linux",  # abi3t needs 3.15
    "torch-2.14-cuda-13.0-x86_64-linux", "torch-2.14-cu130-cpython-3.9-abi3-x86_64-linux",
    "torch214-cuda-13.0-x86_64-linux", "torch214-cu130-cpython-3.9-abi3-x86_64-linux",
    "torch-2.14-cpython-3.9-abi3-x86_64-linux", "torch-2.14-cuda-13-cpython-3.9-abi3-x86_64-linux",
    "torch-2.14-cuda-13.0-cpython-3-abi3-x86_64-linux", "torch-2.14-cuda-13.0-cpython-3.9-abi4-x86_64-linux",
    "sdk-cuda-12.8", "sdk-cuda-cpython-3.12-abi3-x86_64-linux", "mlx-0.29-metal-cpython-3.9-abi3-aarch64-darwin",
    "jax04-cu128-x86_64-linux", "torch214-npu-x86_64-linux", "torch2-cxx11-cu128-x86_64-linux",
    "torch28-cxx17-cu128-x86_64-linux", "torch-stable-abi",
]
STRICTER = {
    "torch-2.14-cuda-13.00-cpython-3.9-abi3-x86_64-linux": "digits that do not read back the same",
    "torch28-cxx11-cu0128-x86_64-linux": "digits that do not read back the same",
    "torch-2.14-cuda-13.0-cpython-3.9-abi3-riscv64-linux": "a CPU no wheel is made for",
    "torch-quantum": "a noarch backend kernels never selects",
    "sdk-quantum": "a backend kernels never selects",
}
ALL = [*LEGACY, *NEWEST_READING, *NEW, *INVALID, *STRICTER]


@functools.cache
def theirs(release: str) -> dict[str, Any]:
    answer: dict[str, Any] = ask(release, "variants", "parse", ALL)
    return answer


def _framework(variant: Variant) -> tuple[str, str | None, bool | None]:
    fw = variant.framework
    if isinstance(fw, Sdk):
        return "sdk", None, None
    if isinstance(fw, Noarch):
        return fw.framework, None, None
    version = f"{fw.version.major}.{fw.version.minor}"
    if isinstance(fw, Torch):
        return "torch", version, None if fw.cxx_abi is None else fw.cxx_abi == "cxx11"
    return ("torch-stable-abi" if isinstance(fw, TorchStableAbi) else "tvm-ffi"), version, None


def _backend(variant: Variant) -> tuple[str | None, str | None]:
    if variant.arch is None:
        fw = variant.framework
        return (fw.backend if isinstance(fw, (Noarch, Sdk)) else None), None
    backend = variant.arch.backend
    if backend is None:
        return None, None
    return backend.kind, None if backend.version is None else f"{backend.version.major}.{backend.version.minor}"


def ours(name: str) -> dict[str, Any]:
    """Our parse in the oracle's shape (``describe``)."""
    try:
        variant = Variant.parse(name)
    except InvalidVariantName as exc:
        return {"error": str(exc)}
    framework, framework_version, cxx11 = _framework(variant)
    backend, backend_version = _backend(variant)
    kind = "sdk" if variant.sdk else "noarch" if variant.arch is None else "arch"
    python = variant.python_floor
    return {
        "kind": kind, "framework": framework, "framework_version": framework_version, "cxx11": cxx11,
        "backend": backend, "backend_version": backend_version,
        "cpu": variant.arch.cpu if variant.arch else None, "os": variant.arch.os if variant.arch else None,
        "python": None if python is None else f"{python.version.major}.{python.version.minor}",
        "abi": None if python is None else python.abi,
    }


@pytest.mark.parametrize("release", RELEASES)
def test_legacy_names_mean_what_each_release_reads(release: str) -> None:
    answers = theirs(release)
    for name in LEGACY:
        assert "error" not in answers[name], f"kernels {release} refuses {name}: {answers[name]}"
        assert ours(name) == answers[name], name


@pytest.mark.parametrize("release", RELEASES)
def test_names_the_release_accepts_we_accept_alike(release: str) -> None:
    """For the newest release every fixture name; for an older one the legacy ones (it reads a 0.19 name such as
    torch-2.14-... as a noarch backend called '2.14-...', a meaning no build has)."""
    answers = theirs(release)
    names = ALL if release == NEWEST else [*LEGACY, *NEWEST_READING]
    for name in names:
        if "error" in answers[name] or name in STRICTER:
            continue
        if name in NEWEST_READING and release != NEWEST:
            assert ours(name) != answers[name]  # still the known difference (else drop it from NEWEST_READING)
            continue
        assert ours(name) == answers[name], f"{name}: kernels {release} reads {answers[name]}"


def test_names_the_newest_release_refuses_we_refuse() -> None:
    answers = theirs(NEWEST)
    for name in INVALID:
        assert "error" in answers[name], f"kernels {NEWEST} now accepts {name}: {answers[name]}"
        assert "error" in ours(name), name


def test_new_names_are_accepted_by_the_newest_release() -> None:
    answers = theirs(NEWEST)
    assert [n for n in [*NEW, *NEWEST_READING] if "error" in answers[n]] == []


@pytest.mark.parametrize("name", sorted(STRICTER))
def test_stricter_names_are_refused_in_one_line_though_kernels_takes_them(name: str) -> None:
    assert "error" not in theirs(NEWEST)[name]  # else it belongs in INVALID
    message = ours(name)["error"]
    assert name in message and "\n" not in message


@pytest.mark.parametrize("name", [*LEGACY, *NEWEST_READING, *NEW])
def test_every_accepted_name_round_trips(name: str) -> None:
    assert str(Variant.parse(name)) == name


# --- resolution: where our code has a preference, it is kernels' ------------------------------------------------

CUDA_BUILDS = ["11.8", "12.6", "12.8", "12.9", "13.0", "13.2"]


def _cuda_names(release: str) -> list[str]:
    if release == "0.17.2":
        return [f"torch-stable-abi210-{Backend('cuda', Version(b))}-x86_64-linux" for b in CUDA_BUILDS]
    return [f"torch-stable-abi-2.10-cuda-{b}-cpython-3.9-abi3-x86_64-linux" for b in CUDA_BUILDS]


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("runtime", ["12.8", "12.9", "13.0", "13.2", "11.8"])
def test_cuda_rule_matches_kernels_variant_resolution(release: str, runtime: str) -> None:
    """install.cuda_compatible, and higher CUDA minors first, as kernels resolves them (either grammar)."""
    names = _cuda_names(release)
    accepted = ask(release, "variants", "resolve", {
        "names": names, "backend": {"kind": "cuda", "version": runtime}, "cpu": "x86_64", "os": "linux",
        "torch": "2.14", "cxx11": True, "python": "3.12"})
    cuda = {n: (Variant.parse(n).arch.backend.version or Version("0")) for n in names}  # type: ignore[union-attr]
    ours_ = sorted((n for n in names if cuda_compatible(cuda[n], Version(runtime))), key=cuda.get, reverse=True)
    assert ours_ == accepted


PYTHON_NAMES = [f"torch-2.14-cpu-cpython-{py}-x86_64-linux" for py in ("3.9-abi3", "3.12-abi3", "3.13-abi3")]


@pytest.mark.parametrize("python", ["3.11", "3.12", "3.13"])
def test_requires_python_admits_exactly_the_pythons_kernels_loads_the_build_on(python: str) -> None:
    accepted = ask(NEWEST, "variants", "resolve", {
        "names": PYTHON_NAMES, "backend": {"kind": "cpu"}, "cpu": "x86_64", "os": "linux", "torch": "2.14",
        "cxx11": True, "python": python})
    ours_ = set()
    for name in PYTHON_NAMES:
        floor = Variant.parse(name).python_floor
        assert floor is not None
        if SpecifierSet(f">={floor.version}").contains(python):
            ours_.add(name)
    assert ours_ == set(accepted)
