"""Kernel build-variant names (``build/<variant>/``) as typed values, and which of them can become wheels.

Grammar (kernel-builder / ``kernels`` HEAD ``variants.py``), one frozen dataclass per piece:

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

Where kernels takes any text (CPU, OS, noarch backend names) this parser takes only the known values, and it refuses
digits that do not read back the same (``cuda-13.00``): a name is exactly one folder.

``Variant.parse`` raises ``InvalidVariantName`` with the exact reason; ``str(variant)`` gives the name back. Names
are ASCII: a regex digit class and ``int()`` would otherwise read fullwidth digits (``torch２１３``) as numbers.
Which variants become wheels is decided in ``selection``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Literal

from packaging.version import Version

from kernelwheel.io.errors import InvalidVariantName

BackendKind = Literal["cuda", "rocm", "xpu", "cpu", "metal", "cann", "neuron", "tpu", "npu"]
CxxAbi = Literal["cxx11", "cxx98"]

CPUS: frozenset[str] = frozenset({"x86_64", "aarch64"})
OSES: frozenset[str] = frozenset({"linux", "darwin", "windows"})
# Backends whose variant string is the bare name (no version).
# (Neither kernels release reads an arch backend ``npu``: Ascend builds are ``cann``.)
_UNVERSIONED: dict[str, BackendKind] = {"cpu": "cpu", "metal": "metal", "neuron": "neuron", "tpu": "tpu"}
_VERSIONED: tuple[BackendKind, ...] = ("cuda", "rocm", "xpu", "cann")
_CXX_ABIS: dict[str, CxxAbi] = {"cxx11": "cxx11", "cxx98": "cxx98"}
NOARCH_BACKENDS: frozenset[str] = frozenset({"cpu", "cuda", "rocm", "xpu", "metal", "neuron", "tpu", "npu", "cann"})
PythonAbi = Literal["abi3", "abi3t"]
_PYTHON_ABIS: dict[str, PythonAbi] = {"abi3": "abi3", "abi3t": "abi3t"}
LEGACY_PYTHON = Version("3.9")  # what a legacy name implicitly is: cpython-3.9-abi3
ABI3T_MIN_PYTHON = Version("3.15")  # PEP 803: the free-threaded stable ABI starts with 3.15
_DOTTED = re.compile(r"([0-9]+)\.([0-9]+)")


def display_name(name: str) -> str:
    """``name`` as it can be shown on one line: itself when printable (and encodable: a folder name with invalid
    UTF-8 arrives as lone surrogates), else its ``ascii()`` escape."""
    if name.isprintable() and not any("\ud800" <= c <= "\udfff" for c in name):
        return name
    return ascii(name)


def _check_ascii(name: str, what: str) -> None:
    if not name.isascii() or not name.isprintable():
        odd = next(c for c in name if not c.isascii() or not c.isprintable())
        raise InvalidVariantName(
            f"{what} {name!r} holds {odd!r} (U+{ord(odd):04X}): variant names are ASCII letters, digits, '-' and '_'"
        )


def _torch_version(digits: str, name: str) -> Version:
    """``"210"`` → 2.10, ``"29"`` → 2.9: one major digit, then the minor (the kernels convention)."""
    if len(digits) < 2:
        raise InvalidVariantName(
            f"variant {name!r}: torch version {digits!r} needs a major digit and a minor (e.g. '29' = 2.9, "
            "'210' = 2.10)"
        )
    return Version(f"{digits[0]}.{int(digits[1:])}")


def _version_digits(version: Version) -> str:
    return f"{version.major}{version.minor}"


def _dotted(text: str, what: str, name: str) -> Version:
    """``"2.14"`` → 2.14: the 0.19 grammar writes every version as ``<major>.<minor>``."""
    match = _DOTTED.fullmatch(text)
    if not match:
        raise InvalidVariantName(f"variant {name!r}: {what} version {text!r} is not <major>.<minor> (e.g. '2.14')")
    return Version(f"{int(match[1])}.{int(match[2])}")


def _dotted_str(version: Version) -> str:
    return f"{version.major}.{version.minor}"


@dataclass(frozen=True)
class Backend:
    """A compute backend and its toolkit version: ``cu128`` = CUDA 12.8, ``rocm71``, ``xpu20253`` = 2025.3, ``cpu``."""

    kind: BackendKind
    version: Version | None = None

    # Legacy spellings, read as kernels 0.19 reads them: the last digit is the minor, except ``rocm714`` (7.14).
    _PATTERNS: ClassVar[tuple[tuple[BackendKind, re.Pattern[str]], ...]] = (
        ("cuda", re.compile(r"^cu([0-9]+)([0-9])$")),
        ("rocm", re.compile(r"^rocm(7(?=14$)|[0-9]+)([0-9]+)$")),
        ("xpu", re.compile(r"^xpu([0-9]+)([0-9])$")),
        ("cann", re.compile(r"^cann([0-9]+)([0-9])$")),
    )

    @classmethod
    def parse(cls, s: str) -> Backend:
        _check_ascii(s, "backend")
        if s in _UNVERSIONED:
            return cls(_UNVERSIONED[s])
        for kind, pattern in cls._PATTERNS:
            match = pattern.fullmatch(s)
            if match:
                major, minor = match.groups()
                return cls(kind, Version(f"{int(major)}.{int(minor)}"))
        raise InvalidVariantName(
            f"unknown backend {s!r}: expected cu<XY>, rocm<XY>, xpu<YYYYN>, cann<XY>, cpu, metal, neuron or tpu"
        )

    @classmethod
    def parse_dotted(cls, parts: list[str], name: str) -> Backend:
        """The 0.19 spelling, already split at '-': ``["cuda", "13.0"]``, ``["cpu"]``."""
        _check_ascii("-".join(parts), "backend")
        if len(parts) == 1 and parts[0] in _UNVERSIONED:
            return cls(_UNVERSIONED[parts[0]])
        if len(parts) == 2 and parts[0] in _VERSIONED:
            return cls(_VERSIONED[_VERSIONED.index(parts[0])], _dotted(parts[1], parts[0], name))
        raise InvalidVariantName(
            f"variant {name!r}: unknown backend {'-'.join(parts)!r}: expected cuda-X.Y, rocm-X.Y, xpu-YYYY.N, "
            "cann-X.Y, cpu, metal, neuron or tpu"
        )

    def spelled(self, *, legacy: bool) -> str:
        """``cu130`` (legacy) or ``cuda-13.0`` (kernels 0.19 grammar)."""
        if self.version is None:
            return self.kind
        if not legacy:
            return f"{self.kind}-{_dotted_str(self.version)}"
        prefix = {"cuda": "cu", "rocm": "rocm", "xpu": "xpu", "cann": "cann"}[self.kind]
        return f"{prefix}{self.version.major}{self.version.minor}"

    def __str__(self) -> str:
        return self.spelled(legacy=True)

    @property
    def tag(self) -> str:
        """The distribution-name suffix: ``cu128``, ``rocm71``, ``cpu`` (same as the variant string)."""
        return str(self)


@dataclass(frozen=True)
class Torch:
    """``torch<M><m>[-cxx11|-cxx98]``: a build tied to one torch minor."""

    version: Version
    cxx_abi: CxxAbi | None = None

    def spelled(self, *, legacy: bool) -> str:
        abi = f"-{self.cxx_abi}" if self.cxx_abi else ""
        if not legacy:
            return f"torch-{_dotted_str(self.version)}{abi}"
        return f"torch{_version_digits(self.version)}{abi}"

    def __str__(self) -> str:
        return self.spelled(legacy=True)


@dataclass(frozen=True)
class TorchStableAbi:
    """``torch-stable-abi<M><m>``: built against torch's stable C ABI; works on that torch minor or newer."""

    version: Version

    def spelled(self, *, legacy: bool) -> str:
        if not legacy:
            return f"torch-stable-abi-{_dotted_str(self.version)}"
        return f"torch-stable-abi{_version_digits(self.version)}"

    def __str__(self) -> str:
        return self.spelled(legacy=True)


@dataclass(frozen=True)
class TvmFfi:
    """``tvm-ffi<M><m>``: a tvm-ffi kernel (no torch extension inside)."""

    version: Version

    def spelled(self, *, legacy: bool) -> str:
        if not legacy:
            return f"tvm-ffi-{_dotted_str(self.version)}"
        return f"tvm-ffi{_version_digits(self.version)}"

    def __str__(self) -> str:
        return self.spelled(legacy=True)


@dataclass(frozen=True)
class Arch:
    """The ``<backend>-<cpu>-<os>`` tail of an arch variant (legacy spelling). ``backend`` is None only for an SDK
    with compiled parts that serves any backend (``sdk-cpython-3.12-abi3-x86_64-linux``)."""

    backend: Backend | None
    cpu: str
    os: str

    def __str__(self) -> str:
        return f"{self.backend}-{self.cpu}-{self.os}"


@dataclass(frozen=True)
class Python:
    """``cpython-X.Y-abi3|abi3t``: the lowest CPython the compiled parts load on, and which stable ABI they use."""

    version: Version = LEGACY_PYTHON
    abi: PythonAbi = "abi3"

    @classmethod
    def parse(cls, parts: list[str], name: str) -> Python:
        if len(parts) != 3 or parts[0] != "cpython":
            raise InvalidVariantName(
                f"variant {name!r}: expected cpython-<X.Y>-abi3|abi3t before <cpu>-<os>, got {'-'.join(parts)!r}"
            )
        version = _dotted(parts[1], "Python", name)
        abi = _PYTHON_ABIS.get(parts[2])
        if abi is None:
            raise InvalidVariantName(f"variant {name!r}: Python ABI {parts[2]!r} is neither 'abi3' nor 'abi3t'")
        if abi == "abi3t" and version < ABI3T_MIN_PYTHON:
            raise InvalidVariantName(
                f"variant {name!r}: abi3t needs Python {ABI3T_MIN_PYTHON} or later, not {_dotted_str(version)}"
            )
        return cls(version, abi)

    def __str__(self) -> str:
        return f"cpython-{_dotted_str(self.version)}-{self.abi}"

    @property
    def tag(self) -> str:
        """The wheel's Python tag: ``cp312`` for ``cpython-3.12``."""
        return f"cp{self.version.major}{self.version.minor}"


@dataclass(frozen=True)
class Noarch:
    """``torch-<backend>`` (pure Python, backend picked at run time), the legacy ``torch-universal``, or
    ``mlx-<backend>`` (an MLX kernel: no torch)."""

    backend: str
    framework: Literal["torch", "mlx"] = "torch"

    def __str__(self) -> str:
        return f"{self.framework}-{self.backend}"


@dataclass(frozen=True)
class Sdk:
    """An SDK (no framework). ``backend``: the bare backend name of ``sdk-<backend>``; an SDK with compiled parts
    keeps its backend in ``Variant.arch`` instead."""

    backend: str | None = None

    def __str__(self) -> str:
        return "sdk" if self.backend is None else f"sdk-{self.backend}"

    def spelled(self, *, legacy: bool) -> str:
        return str(self)


Framework = Torch | TorchStableAbi | TvmFfi


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
        return TorchStableAbi(_dotted(parts[3], "torch stable ABI", name)), 4
    if parts[:2] == ["tvm", "ffi"] and len(parts) > 2:
        return TvmFfi(_dotted(parts[2], "tvm-ffi", name)), 3
    if parts[0] == "torch" and len(parts) > 1 and parts[1][:1].isdigit():
        cxx = _CXX_ABIS.get(parts[2]) if len(parts) > 2 else None
        return Torch(_dotted(parts[1], "torch", name), cxx), 3 if cxx else 2
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


@dataclass(frozen=True)
class Variant:
    """One ``build/<variant>/`` name: an arch variant (framework + arch), a noarch one, or an SDK. ``python`` is the
    ``cpython-X.Y-abi`` a 0.19-grammar name spells; None for a legacy name (implicitly 3.9 abi3) or one without
    compiled parts."""

    framework: Framework | Noarch | Sdk
    arch: Arch | None = None
    python: Python | None = None

    _ARCH: ClassVar[re.Pattern[str]] = re.compile(
        r"^(?P<fw>torch-stable-abi(?P<sv>[0-9]+)|tvm-ffi(?P<tv>[0-9]+)|torch(?P<v>[0-9]+)(?:-(?P<abi>cxx[0-9]+))?)"
        r"-(?P<rest>.+)$"
    )

    @classmethod
    def parse(cls, name: str) -> Variant:
        """Parse a variant directory name (either grammar); ``InvalidVariantName`` says precisely what is wrong."""
        _check_ascii(name, "variant")
        variant = cls._parse(name)
        if str(variant) != name:  # e.g. torch2_09 / cu0128 / cuda-13.00: digits that do not round-trip
            raise InvalidVariantName(f"variant {name!r}: not in canonical form (reads back as {str(variant)!r})")
        return variant

    @classmethod
    def _parse(cls, name: str) -> Variant:
        parts = name.split("-")
        if parts[0] == "sdk":
            return cls._parse_sdk(parts[1:], name)
        if name == "torch-universal":
            return cls(Noarch("universal"))
        if parts[0] in ("torch", "mlx") and len(parts) > 1 and parts[1][:1].isalpha() and parts[1] != "stable":
            kind: Literal["torch", "mlx"] = "torch" if parts[0] == "torch" else "mlx"
            return cls(Noarch(_noarch_backend("-".join(parts[1:]), name), kind))
        new = _new_framework(parts, name)
        if new is not None:
            framework, taken = new
            backend, python, cpu, os_ = _compiled_tail(parts[taken:], name)
            if backend is None:
                raise InvalidVariantName(f"variant {name!r}: no backend before cpython-... (e.g. cuda-13.0, cpu)")
            return cls(framework, _arch(backend, cpu, os_, name), python)
        match = cls._ARCH.match(name)
        if not match:
            raise InvalidVariantName(
                f"variant {name!r}: expected torch<XY>[-cxx11|-cxx98]-<backend>-<cpu>-<os>, "
                "torch-stable-abi<XY>-<backend>-<cpu>-<os>, tvm-ffi<XY>-..., torch-<backend>, torch-universal, "
                "torch-X.Y[-cxx11]-<backend>-cpython-X.Y-abi3-<cpu>-<os>, mlx-<backend> or sdk[-...]"
            )
        framework = _legacy_framework(match, name)
        return cls(framework, _legacy_arch(framework, match["rest"], name))

    @classmethod
    def _parse_sdk(cls, rest: list[str], name: str) -> Variant:
        """``sdk``, ``sdk-<backend>``, ``sdk[-<backend>-X.Y]-cpython-X.Y-<abi>-<cpu>-<os>`` (kernels 0.19)."""
        if not rest:
            return cls(Sdk())
        if "cpython" not in rest:
            if len(rest) != 1:
                raise InvalidVariantName(
                    f"variant {name!r}: expected sdk, sdk-<backend> or sdk[-<backend>]-cpython-X.Y-abi3-<cpu>-<os>"
                )
            return cls(Sdk(_noarch_backend(rest[0], name)))
        backend, python, cpu, os_ = _compiled_tail(rest, name)
        return cls(Sdk(), _arch(backend, cpu, os_, name), python)

    def __str__(self) -> str:
        if self.arch is None:
            return str(self.framework)
        if self.python is None:
            return f"{self.framework}-{self.arch}"
        framework = self.framework
        assert not isinstance(framework, Noarch)  # a noarch variant has no arch
        parts = [framework.spelled(legacy=False)]
        if self.arch.backend is not None:
            parts.append(self.arch.backend.spelled(legacy=False))
        return "-".join([*parts, str(self.python), self.arch.cpu, self.arch.os])

    @property
    def legacy(self) -> bool:
        """Whether the name is in the legacy grammar, the one every supported kernels release reads."""
        return self.python is None and not isinstance(self.framework, Sdk)

    @property
    def python_floor(self) -> Python | None:
        """The Python the compiled parts need: as spelled, else 3.9 abi3 for a legacy arch name; None without an
        arch."""
        if self.arch is None:
            return None
        return self.python or Python()

    @property
    def sdk(self) -> bool:
        return isinstance(self.framework, Sdk)

    @property
    def stable_abi(self) -> bool:
        return isinstance(self.framework, TorchStableAbi)

    @property
    def torch(self) -> Version | None:
        """The torch minor this build targets (``None`` for noarch and SDKs)."""
        if isinstance(self.framework, (Noarch, Sdk)):
            return None
        return self.framework.version

    @property
    def depends_backend(self) -> str:
        """The backend kernels keys ``python-depends`` by: ``cuda``, ``cpu``, ... (``universal`` for the legacy
        noarch variant, which only gets the general names)."""
        if self.arch is not None:
            return "universal" if self.arch.backend is None else self.arch.backend.kind
        framework = self.framework
        if isinstance(framework, (Noarch, Sdk)) and framework.backend is not None:
            return framework.backend
        return "universal"

    @property
    def backend_tag(self) -> str | None:
        """The ``wheelname.distribution_name`` suffix: ``cu128``, ``rocm71``, ``cpu``; ``None`` for noarch."""
        if self.arch is None or self.arch.backend is None:
            return None
        return self.arch.backend.tag
