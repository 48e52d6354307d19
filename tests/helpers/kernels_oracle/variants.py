"""What a kernels release makes of variant names, and which of them it would load on a given system.

Written against both shapes of kernels' ``variants`` module: 0.17 (``ArchVariant.arch`` holds backend, CPU and OS;
no Python part; ``_resolve_variant_for_system`` without Python or MLX parameters) and 0.19 (``ArchVariant.backend``,
``.python``, ``.system``; SDK and MLX variants). Arguments a release does not take are left out.
"""

from __future__ import annotations

import inspect
from typing import Any

from packaging.version import Version

from tests.helpers.kernels_oracle.internals import internal


def _version(value: Any) -> str | None:
    return None if value is None else f"{value.major}.{value.minor}"


def _backend(backend: Any) -> dict[str, Any]:
    """A backend object (CUDA, CPU, ...) or a noarch backend name (``Noarch``)."""
    if hasattr(backend, "backend_name"):
        return {"backend": backend.backend_name, "backend_version": None}
    return {"backend": backend.name, "backend_version": _version(getattr(backend, "version", None))}


def _framework(framework: Any) -> dict[str, Any]:
    kind = {"Torch": "torch", "TorchStableAbi": "torch-stable-abi", "TvmFfi": "tvm-ffi", "TorchNoarch": "torch",
            "MlxNoarch": "mlx"}[type(framework).__name__]
    cxx11 = getattr(framework, "cxx11_abi", None)
    return {"framework": kind, "framework_version": _version(getattr(framework, "version", None)), "cxx11": cxx11}


def _system(platform: str, os: str, python: Any) -> dict[str, Any]:
    if python is None:  # 0.17: every arch variant is implicitly cpython-3.9-abi3
        return {"cpu": platform, "os": os, "python": "3.9", "abi": "abi3"}
    return {"cpu": platform, "os": os, "python": _version(python.version), "abi": python.abi}


_NO_SYSTEM = {"cpu": None, "os": None, "python": None, "abi": None}


def describe(variant: Any) -> dict[str, Any]:
    """A release's parsed variant as plain data, the same shape for every release and kind."""
    kind = type(variant).__name__
    if kind == "SdkVariant":
        backend = _backend(variant.backend) if variant.backend is not None else {"backend": None,
                                                                                  "backend_version": None}
        system = (_system(variant.system.platform, variant.system.os, variant.python) if variant.system is not None
                  else _NO_SYSTEM)
        return {"kind": "sdk", "framework": "sdk", "framework_version": None, "cxx11": None, **backend, **system}
    backend_obj = getattr(variant, "backend", None) or variant.arch  # 0.19: .backend; 0.17: .arch (Arch or Noarch)
    if kind == "NoarchVariant":
        return {"kind": "noarch", **_framework(variant.framework), **_backend(backend_obj), **_NO_SYSTEM}
    if hasattr(variant, "system"):  # 0.19
        system = _system(variant.system.platform, variant.system.os, variant.python)
        backend = _backend(variant.backend)
    else:
        system = _system(variant.arch.platform, variant.arch.os, None)
        backend = _backend(variant.arch.backend)
    return {"kind": "arch", **_framework(variant.framework), **backend, **system}


def parse(names: list[str]) -> dict[str, Any]:
    """Each name → its description, or ``{"error": ...}`` where the release refuses it."""
    variants = internal("variants")
    answer: dict[str, Any] = {}
    for name in names:
        try:
            answer[name] = describe(variants.parse_variant(name))
        except Exception as exc:
            answer[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return answer


def _system_backend(spec: dict[str, Any]) -> Any:
    backends = internal("backends")
    classes = {"cuda": "CUDA", "rocm": "ROCm", "xpu": "XPU", "cann": "CANN", "cpu": "CPU", "metal": "Metal",
               "neuron": "Neuron", "tpu": "TPU"}
    cls = getattr(backends, classes[spec["kind"]])
    return cls(version=Version(spec["version"])) if spec.get("version") else cls()


def resolve(payload: dict[str, Any]) -> list[str]:
    """The names the release accepts on the system ``payload`` describes, most preferred first.

    payload: ``names``, ``backend`` ({kind, version}), ``cpu``, ``os``, ``torch`` ("2.14" or null), ``cxx11``,
    and optionally ``tvm_ffi``, ``python`` ("3.12"), ``free_threaded``, ``has_mlx``, ``macos``."""
    variants = internal("variants")
    parsed = []
    for name in payload["names"]:
        try:
            parsed.append(variants.parse_variant(name))
        except Exception:
            continue
    optional = {"python_version": payload.get("python"), "free_threaded": payload.get("free_threaded"),
                "has_mlx": payload.get("has_mlx"), "macos_version": payload.get("macos")}
    accepts = inspect.signature(variants._resolve_variant_for_system).parameters
    extra = {k: (Version(v) if k.endswith("_version") else v) for k, v in optional.items()
             if v is not None and k in accepts}
    version = payload.get("torch")
    tvm = payload.get("tvm_ffi")
    accepted, _trace = variants._resolve_variant_for_system(
        variants=parsed, selected_backend=_system_backend(payload["backend"]), cpu=payload["cpu"], os=payload["os"],
        torch_version=Version(version) if version else None, torch_cxx11_abi=payload.get("cxx11"),
        tvm_ffi_version=Version(tvm) if tvm else None, **extra,
    )
    return [v.variant_str for v in accepted]
