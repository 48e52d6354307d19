"""The two build-variant name grammars (the legacy one and kernels 0.19's), each read into typed pieces.

Grammar (kernel-builder / ``kernels`` HEAD ``variants.py``); the pieces are ``variant_pieces``' values:

* ``torch<M><m>[-cxx11|-cxx98]-<backend>-<cpu>-<os>``: tied to one torch minor. ``torch210`` is torch 2.10: the
  first digit is the major, the rest the minor.
* ``torch-stable-abi<M><m>-<backend>-<cpu>-<os>``: built against torch's stable ABI, works on that torch or newer.
* ``tvm-ffi<M><m>-<backend>-<cpu>-<os>``: tvm-ffi kernels (parsed, never converted).
* ``torch-<backend>``: noarch (pure Python, picks its backend at run time); legacy ``torch-universal``.

kernels 0.19 added a second grammar beside that legacy one (both stay valid; ``Variant.python`` tells them apart):

* ``torch-2.14[-cxx11]-cuda-13.0-cpython-3.9-abi3-x86_64-linux``, ``torch-stable-abi-2.11-...``, ``tvm-ffi-0.1-...``:
  dotted versions, backends ``cuda-X.Y``, ``rocm-X.Y``, ``xpu-YYYY.N``, ``cann-X.Y``, ``cpu``, ``metal``, ``neuron``,
  ``tpu``, and ``cpython-X.Y-abi3|abi3t``: the lowest CPython the build loads on (a legacy name is implicitly
  ``cpython-3.9-abi3``). A new name and its legacy twin compare equal piece by piece (framework, arch, Python).
* ``sdk``, ``sdk-<backend>``, ``sdk[-<backend>-X.Y]-cpython-X.Y-abi3-<cpu>-<os>``: SDKs, no framework at all.
* ``mlx-<backend>``: an MLX noarch kernel. ``torch-cann`` is what 0.19 loads on Ascend (0.17 loaded ``torch-npu``).

Where kernels takes any text (CPU, OS, noarch backend names) this parser takes only the known values.
``parse_pieces`` raises ``InvalidVariantName`` with the exact reason; ``Variant.parse`` (``variants``) calls it and
refuses digits that do not read back the same (``cuda-13.00``): a name is exactly one folder.
"""

from __future__ import annotations

import re
from typing import Literal

from packaging.version import Version

from kernelwheel.format.variant_pieces import (
    CPUS,
    NOARCH_BACKENDS,
    OSES,
    Arch,
    Backend,
    CxxAbi,
    Framework,
    Noarch,
    Python,
    Sdk,
    Torch,
    TorchStableAbi,
    TvmFfi,
    dotted,
)
from kernelwheel.io.errors import InvalidVariantName

Pieces = tuple[Framework | Noarch | Sdk, Arch | None, Python | None]  # Variant's fields: framework, arch, python

_CXX_ABIS: dict[str, CxxAbi] = {"cxx11": "cxx11", "cxx98": "cxx98"}
_LEGACY_ARCH = re.compile(
    r"^(?P<fw>torch-stable-abi(?P<sv>[0-9]+)|tvm-ffi(?P<tv>[0-9]+)|torch(?P<v>[0-9]+)(?:-(?P<abi>cxx[0-9]+))?)"
    r"-(?P<rest>.+)$"
)


def parse_pieces(name: str) -> Pieces:
    """The pieces of a variant name in either grammar (an SDK, a noarch name, a 0.19 arch name, a legacy one)."""
    parts = name.split("-")
    if parts[0] == "sdk":
        return _sdk(parts[1:], name)
    if name == "torch-universal":
        return Noarch("universal"), None, None
    if parts[0] in ("torch", "mlx") and len(parts) > 1 and parts[1][:1].isalpha() and parts[1] != "stable":
        kind: Literal["torch", "mlx"] = "torch" if parts[0] == "torch" else "mlx"
        return Noarch(_noarch_backend("-".join(parts[1:]), name), kind), None, None
    new = _new_framework(parts, name)
    if new is not None:
        framework, taken = new
        backend, python, cpu, os_ = _compiled_tail(parts[taken:], name)
        if backend is None:
            raise InvalidVariantName(f"variant {name!r}: no backend before cpython-... (e.g. cuda-13.0, cpu)")
        return framework, _arch(backend, cpu, os_, name), python
    match = _LEGACY_ARCH.match(name)
    if not match:
        raise InvalidVariantName(
            f"variant {name!r}: expected torch<XY>[-cxx11|-cxx98]-<backend>-<cpu>-<os>, "
            "torch-stable-abi<XY>-<backend>-<cpu>-<os>, tvm-ffi<XY>-..., torch-<backend>, torch-universal, "
            "torch-X.Y[-cxx11]-<backend>-cpython-X.Y-abi3-<cpu>-<os>, mlx-<backend> or sdk[-...]"
        )
    framework = _legacy_framework(match, name)
    return framework, _legacy_arch(framework, match["rest"], name), None


def _sdk(rest: list[str], name: str) -> Pieces:
    """``sdk``, ``sdk-<backend>``, ``sdk[-<backend>-X.Y]-cpython-X.Y-<abi>-<cpu>-<os>`` (kernels 0.19)."""
    if not rest:
        return Sdk(), None, None
    if "cpython" not in rest:
        if len(rest) != 1:
            raise InvalidVariantName(
                f"variant {name!r}: expected sdk, sdk-<backend> or sdk[-<backend>]-cpython-X.Y-abi3-<cpu>-<os>"
            )
        return Sdk(_noarch_backend(rest[0], name)), None, None
    backend, python, cpu, os_ = _compiled_tail(rest, name)
    return Sdk(), _arch(backend, cpu, os_, name), python


def _torch_version(digits: str, name: str) -> Version:
    """``"210"`` → 2.10, ``"29"`` → 2.9: one major digit, then the minor (the kernels convention)."""
    if len(digits) < 2:
        raise InvalidVariantName(
            f"variant {name!r}: torch version {digits!r} needs a major digit and a minor (e.g. '29' = 2.9, "
            "'210' = 2.10)"
        )
    return Version(f"{digits[0]}.{int(digits[1:])}")


def _legacy_framework(match: re.Match[str], name: str) -> Framework:
    if match["sv"] is not None:
        return TorchStableAbi(_torch_version(match["sv"], name))
    if match["tv"] is not None:
        return TvmFfi(_torch_version(match["tv"], name))
    abi = match["abi"]
    if abi is not None and abi not in _CXX_ABIS:
        raise InvalidVariantName(f"variant {name!r}: C++ ABI {abi!r} is neither 'cxx11' nor 'cxx98'")
    return Torch(_torch_version(match["v"], name), None if abi is None else _CXX_ABIS[abi])


def _legacy_arch(framework: Framework, rest: str, name: str) -> Arch:
    parts = rest.split("-")
    if len(parts) != 3:
        raise InvalidVariantName(
            f"variant {name!r}: after {str(framework)!r} expected <backend>-<cpu>-<os> (3 parts), "
            f"got {len(parts)}: {rest!r}"
        )
    try:
        backend = Backend.parse(parts[0])
    except InvalidVariantName as exc:
        raise InvalidVariantName(f"variant {name!r}: {exc}") from None
    return _arch(backend, parts[1], parts[2], name)


def _arch(backend: Backend | None, cpu: str, os_: str, name: str) -> Arch:
    if cpu not in CPUS:
        raise InvalidVariantName(f"variant {name!r}: unknown CPU {cpu!r} (expected {' or '.join(sorted(CPUS))})")
    if os_ not in OSES:
        raise InvalidVariantName(f"variant {name!r}: unknown OS {os_!r} (expected {', '.join(sorted(OSES))})")
    return Arch(backend, cpu, os_)


def _new_framework(parts: list[str], name: str) -> tuple[Framework, int] | None:
    """The framework of a 0.19-grammar name and how many '-' parts it takes; None for a legacy name."""
    if parts[:3] == ["torch", "stable", "abi"] and len(parts) > 3:
        return TorchStableAbi(dotted(parts[3], "torch stable ABI", name)), 4
    if parts[:2] == ["tvm", "ffi"] and len(parts) > 2:
        return TvmFfi(dotted(parts[2], "tvm-ffi", name)), 3
    if parts[0] == "torch" and len(parts) > 1 and parts[1][:1].isdigit():
        cxx = _CXX_ABIS.get(parts[2]) if len(parts) > 2 else None
        return Torch(dotted(parts[1], "torch", name), cxx), 3 if cxx else 2
    return None


def _compiled_tail(parts: list[str], name: str) -> tuple[Backend | None, Python, str, str]:
    """``[<backend parts>,] cpython, X.Y, abi, cpu, os`` of a 0.19-grammar name."""
    if "cpython" not in parts:
        raise InvalidVariantName(
            f"variant {name!r}: the kernels 0.19 grammar needs cpython-<X.Y>-abi3|abi3t before <cpu>-<os>"
        )
    at = parts.index("cpython")
    if len(parts) - at != 5:
        raise InvalidVariantName(
            f"variant {name!r}: expected cpython-<X.Y>-abi3|abi3t-<cpu>-<os> at the end, got {'-'.join(parts[at:])!r}"
        )
    python = Python.parse(parts[at:at + 3], name)
    backend = Backend.parse_dotted(parts[:at], name) if parts[:at] else None
    return backend, python, parts[at + 3], parts[at + 4]


def _noarch_backend(backend: str, name: str) -> str:
    if backend not in NOARCH_BACKENDS:
        raise InvalidVariantName(
            f"variant {name!r}: unknown noarch backend {backend!r} (expected one of "
            f"{', '.join(sorted(NOARCH_BACKENDS))} or 'universal')"
        )
    return backend
