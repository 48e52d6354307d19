"""Kernel build-variant names (``build/<variant>/``) as typed values, and which of them can become wheels.

Grammar (kernel-builder / ``kernels`` HEAD ``variants.py``), one frozen dataclass per piece:

* ``torch<M><m>[-cxx11|-cxx98]-<backend>-<cpu>-<os>``: tied to one torch minor. ``torch210`` is torch 2.10: the
  first digit is the major, the rest the minor.
* ``torch-stable-abi<M><m>-<backend>-<cpu>-<os>``: built against torch's stable ABI, works on that torch or newer.
* ``tvm-ffi<M><m>-<backend>-<cpu>-<os>``: tvm-ffi kernels (parsed, never converted).
* ``torch-<backend>``: noarch (pure Python, picks its backend at run time); legacy ``torch-universal``.

``Variant.parse`` raises ``InvalidVariantName`` with the exact reason; ``str(variant)`` gives the name back. Names
are ASCII: a regex digit class and ``int()`` would otherwise read fullwidth digits (``torch２１３``) as numbers.
Which variants become wheels is decided in ``selection``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Literal

from packaging.version import Version

from tools.kernelwheel.errors import InvalidVariantName

BackendKind = Literal["cuda", "rocm", "xpu", "cpu", "metal", "cann", "neuron", "tpu", "npu"]
CxxAbi = Literal["cxx11", "cxx98"]

CPUS: frozenset[str] = frozenset({"x86_64", "aarch64"})
OSES: frozenset[str] = frozenset({"linux", "darwin", "windows"})
# Backends whose variant string is the bare name (no version).
_UNVERSIONED: dict[str, BackendKind] = {"cpu": "cpu", "metal": "metal", "neuron": "neuron", "tpu": "tpu", "npu": "npu"}
_CXX_ABIS: dict[str, CxxAbi] = {"cxx11": "cxx11", "cxx98": "cxx98"}
NOARCH_BACKENDS: frozenset[str] = frozenset({"cpu", "cuda", "rocm", "xpu", "metal", "neuron", "tpu", "npu"})


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


@dataclass(frozen=True)
class Backend:
    """A compute backend and its toolkit version: ``cu128`` = CUDA 12.8, ``rocm71``, ``xpu20253`` = 2025.3, ``cpu``."""

    kind: BackendKind
    version: Version | None = None

    _PATTERNS: ClassVar[tuple[tuple[BackendKind, re.Pattern[str]], ...]] = (
        ("cuda", re.compile(r"^cu([0-9]+)([0-9])$")),
        ("rocm", re.compile(r"^rocm([0-9]+)([0-9])$")),
        ("xpu", re.compile(r"^xpu([0-9]{4})([0-9]+)$")),
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
            f"unknown backend {s!r}: expected cu<XY>, rocm<XY>, xpu<YYYYN>, cann<XY>, cpu, metal, neuron, tpu or npu"
        )

    def __str__(self) -> str:
        if self.version is None:
            return self.kind
        prefix = {"cuda": "cu", "rocm": "rocm", "xpu": "xpu", "cann": "cann"}[self.kind]
        return f"{prefix}{self.version.major}{self.version.minor}"

    @property
    def tag(self) -> str:
        """The distribution-name suffix: ``cu128``, ``rocm71``, ``cpu`` (same as the variant string)."""
        return str(self)


@dataclass(frozen=True)
class Torch:
    """``torch<M><m>[-cxx11|-cxx98]``: a build tied to one torch minor."""

    version: Version
    cxx_abi: CxxAbi | None = None

    def __str__(self) -> str:
        abi = f"-{self.cxx_abi}" if self.cxx_abi else ""
        return f"torch{_version_digits(self.version)}{abi}"


@dataclass(frozen=True)
class TorchStableAbi:
    """``torch-stable-abi<M><m>``: built against torch's stable C ABI; works on that torch minor or newer."""

    version: Version

    def __str__(self) -> str:
        return f"torch-stable-abi{_version_digits(self.version)}"


@dataclass(frozen=True)
class TvmFfi:
    """``tvm-ffi<M><m>``: a tvm-ffi kernel (no torch extension inside)."""

    version: Version

    def __str__(self) -> str:
        return f"tvm-ffi{_version_digits(self.version)}"


@dataclass(frozen=True)
class Arch:
    """The ``<backend>-<cpu>-<os>`` tail of an arch variant."""

    backend: Backend
    cpu: str
    os: str

    def __str__(self) -> str:
        return f"{self.backend}-{self.cpu}-{self.os}"


@dataclass(frozen=True)
class Noarch:
    """``torch-<backend>`` (pure Python, backend picked at run time) or the legacy ``torch-universal``."""

    backend: str

    def __str__(self) -> str:
        return f"torch-{self.backend}"


Framework = Torch | TorchStableAbi | TvmFfi


@dataclass(frozen=True)
class Variant:
    """One ``build/<variant>/`` name: an arch variant (framework + arch) or a noarch one."""

    framework: Framework | Noarch
    arch: Arch | None = None

    _ARCH: ClassVar[re.Pattern[str]] = re.compile(
        r"^(?P<fw>torch-stable-abi(?P<sv>[0-9]+)|tvm-ffi(?P<tv>[0-9]+)|torch(?P<v>[0-9]+)(?:-(?P<abi>cxx[0-9]+))?)"
        r"-(?P<rest>.+)$"
    )

    @classmethod
    def parse(cls, name: str) -> Variant:
        """Parse a variant directory name; ``InvalidVariantName`` says precisely what is wrong."""
        _check_ascii(name, "variant")
        if name == "torch-universal":
            return cls(Noarch("universal"))
        noarch = re.fullmatch(r"torch-([a-z]+)", name)
        if noarch and not name.startswith("torch-stable-abi"):
            backend = noarch.group(1)
            if backend not in NOARCH_BACKENDS:
                raise InvalidVariantName(
                    f"variant {name!r}: unknown noarch backend {backend!r} (expected one of "
                    f"{', '.join(sorted(NOARCH_BACKENDS))} or 'universal')"
                )
            return cls(Noarch(backend))
        match = cls._ARCH.match(name)
        if not match:
            raise InvalidVariantName(
                f"variant {name!r}: expected torch<XY>[-cxx11|-cxx98]-<backend>-<cpu>-<os>, "
                "torch-stable-abi<XY>-<backend>-<cpu>-<os>, tvm-ffi<XY>-..., torch-<backend> or torch-universal"
            )
        framework: Framework
        if match["sv"] is not None:
            framework = TorchStableAbi(_torch_version(match["sv"], name))
        elif match["tv"] is not None:
            framework = TvmFfi(_torch_version(match["tv"], name))
        else:
            abi = match["abi"]
            if abi is not None and abi not in _CXX_ABIS:
                raise InvalidVariantName(f"variant {name!r}: C++ ABI {abi!r} is neither 'cxx11' nor 'cxx98'")
            framework = Torch(_torch_version(match["v"], name), None if abi is None else _CXX_ABIS[abi])
        parts = match["rest"].split("-")
        if len(parts) != 3:
            raise InvalidVariantName(
                f"variant {name!r}: after {str(framework)!r} expected <backend>-<cpu>-<os> (3 parts), "
                f"got {len(parts)}: {match['rest']!r}"
            )
        backend_s, cpu, os_ = parts
        try:
            backend = Backend.parse(backend_s)
        except InvalidVariantName as exc:
            raise InvalidVariantName(f"variant {name!r}: {exc}") from None
        if cpu not in CPUS:
            raise InvalidVariantName(f"variant {name!r}: unknown CPU {cpu!r} (expected {' or '.join(sorted(CPUS))})")
        if os_ not in OSES:
            raise InvalidVariantName(f"variant {name!r}: unknown OS {os_!r} (expected {', '.join(sorted(OSES))})")
        variant = cls(framework, Arch(backend, cpu, os_))
        if str(variant) != name:  # e.g. torch2_09 / cu0128: digits that do not round-trip
            raise InvalidVariantName(f"variant {name!r}: not in canonical form (reads back as {str(variant)!r})")
        return variant

    def __str__(self) -> str:
        if self.arch is None:
            return str(self.framework)
        return f"{self.framework}-{self.arch}"

    @property
    def stable_abi(self) -> bool:
        return isinstance(self.framework, TorchStableAbi)

    @property
    def torch(self) -> Version | None:
        """The torch minor this build targets (``None`` for noarch)."""
        if isinstance(self.framework, Noarch):
            return None
        return self.framework.version

    @property
    def depends_backend(self) -> str:
        """The backend kernels keys ``python-depends`` by: ``cuda``, ``cpu``, ... (``universal`` for the legacy
        noarch variant, which only gets the general names)."""
        if self.arch is not None:
            return self.arch.backend.kind
        framework = self.framework
        return framework.backend if isinstance(framework, Noarch) else "universal"

    @property
    def backend_tag(self) -> str | None:
        """The ``wheelname.distribution_name`` suffix: ``cu128``, ``rocm71``, ``cpu``; ``None`` for noarch."""
        return None if self.arch is None else self.arch.backend.tag
