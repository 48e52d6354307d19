"""The two build-variant name grammars (the legacy one and kernels 0.19's), each read into typed pieces.

Grammar (kernel-builder / ``kernels`` HEAD ``variants.py``); the pieces are ``variant_pieces``' values, the arch
frameworks those ``frameworks.FRAMEWORKS`` lists (each reads its own prefix: ``read_legacy``, ``read_dotted``):

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

from typing import Literal

from kernelwheel.format.frameworks import FRAMEWORKS, FrameworkRules, Noarch, Sdk
from kernelwheel.format.variant_pieces import CPUS, NOARCH_BACKENDS, OSES, Arch, Backend, Python
from kernelwheel.io.errors import InvalidVariantName

Pieces = tuple[FrameworkRules, Arch | None, Python | None]  # Variant's fields: framework, arch, python


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
    for registered in FRAMEWORKS:  # in order: the first whose prefix the name starts with
        legacy = registered.read_legacy(name)
        if legacy is not None:
            framework, rest = legacy
            return framework, _legacy_arch(framework, rest, name), None
    raise InvalidVariantName(
        f"variant {name!r}: expected torch<XY>[-cxx11|-cxx98]-<backend>-<cpu>-<os>, "
        "torch-stable-abi<XY>-<backend>-<cpu>-<os>, tvm-ffi<XY>-..., torch-<backend>, torch-universal, "
        "torch-X.Y[-cxx11]-<backend>-cpython-X.Y-abi3-<cpu>-<os>, mlx-<backend> or sdk[-...]"
    )


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


def _legacy_arch(framework: FrameworkRules, rest: str, name: str) -> Arch:
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


def _new_framework(parts: list[str], name: str) -> tuple[FrameworkRules, int] | None:
    """The framework of a 0.19-grammar name and how many '-' parts it takes; None for a legacy name."""
    for registered in FRAMEWORKS:
        new = registered.read_dotted(parts, name)
        if new is not None:
            return new
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
