"""Kernel build-variant names (``build/<variant>/``) as typed values, and which of them can become wheels.

Grammar (kernel-builder / ``kernels`` HEAD ``variants.py``), one frozen dataclass per piece:

* ``torch<M><m>[-cxx11|-cxx98]-<backend>-<cpu>-<os>``: tied to one torch minor. ``torch210`` is torch 2.10: the
  first digit is the major, the rest the minor.
* ``torch-stable-abi<M><m>-<backend>-<cpu>-<os>``: built against torch's stable ABI, works on that torch or newer.
* ``tvm-ffi<M><m>-<backend>-<cpu>-<os>``: tvm-ffi kernels (parsed, never converted).
* ``torch-<backend>``: noarch (pure Python, picks its backend at run time); legacy ``torch-universal``.

``Variant.parse`` raises ``InvalidVariantName`` with the exact reason; ``str(variant)`` gives the name back.
``select`` is pure: it takes the parsed variants and a ``Target`` and returns what is accepted and, for every
other variant, why not.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from packaging.version import Version

from tools.errors import InvalidVariantName

BackendKind = Literal["cuda", "rocm", "xpu", "cpu", "metal", "cann", "neuron", "tpu", "npu"]
CxxAbi = Literal["cxx11", "cxx98"]

CPUS: frozenset[str] = frozenset({"x86_64", "aarch64"})
OSES: frozenset[str] = frozenset({"linux", "darwin", "windows"})
# Backends whose variant string is the bare name (no version).
_UNVERSIONED: frozenset[str] = frozenset({"cpu", "metal", "neuron", "tpu", "npu"})
NOARCH_BACKENDS: frozenset[str] = frozenset({"cpu", "cuda", "rocm", "xpu", "metal", "neuron", "tpu", "npu"})
# Which noarch directory feeds the single noarch wheel when several exist (their Python files are identical).
_NOARCH_PREFERENCE = ("cuda", "rocm", "xpu", "cpu", "metal", "npu", "neuron", "tpu", "universal")


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
        ("cuda", re.compile(r"^cu(\d+)(\d)$")),
        ("rocm", re.compile(r"^rocm(\d+)(\d)$")),
        ("xpu", re.compile(r"^xpu(\d{4})(\d+)$")),
        ("cann", re.compile(r"^cann(\d+)(\d)$")),
    )

    @classmethod
    def parse(cls, s: str) -> Backend:
        if s in _UNVERSIONED:
            return cls(s)  # type: ignore[arg-type]
        for kind, pattern in cls._PATTERNS:
            match = pattern.match(s)
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
        r"^(?P<fw>torch-stable-abi(?P<sv>\d+)|tvm-ffi(?P<tv>\d+)|torch(?P<v>\d+)(?:-(?P<abi>cxx\d+))?)"
        r"-(?P<rest>.+)$"
    )

    @classmethod
    def parse(cls, name: str) -> Variant:
        """Parse a variant directory name; ``InvalidVariantName`` says precisely what is wrong."""
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
            if abi is not None and abi not in ("cxx11", "cxx98"):
                raise InvalidVariantName(f"variant {name!r}: C++ ABI {abi!r} is neither 'cxx11' nor 'cxx98'")
            framework = Torch(_torch_version(match["v"], name), abi)  # type: ignore[arg-type]
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
    def is_noarch(self) -> bool:
        return self.arch is None

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
    def backend_tag(self) -> str | None:
        """The ``wheelname.distribution_name`` suffix: ``cu128``, ``rocm71``, ``cpu``; ``None`` for noarch."""
        return None if self.arch is None else self.arch.backend.tag


@dataclass(frozen=True)
class Target:
    """What this run produces wheels for: manylinux only by default (platform tags are computed from ELF)."""

    oses: frozenset[str] = frozenset({"linux"})
    cpus: frozenset[str] = CPUS
    patterns: tuple[str, ...] = ()  # --variant globs; empty = all


@dataclass(frozen=True)
class Rejected:
    """A variant that will not become a wheel, and why."""

    name: str
    reason: str

    def __str__(self) -> str:
        return f"{self.name}: {self.reason}"


@dataclass
class Selection:
    accepted: list[Variant] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)


def _preferred_cxx_abi(torch: Version) -> CxxAbi:
    # PyPI's torch wheels switched to the C++11 ABI with 2.7 (manylinux_2_28); before that they were cxx98.
    return "cxx11" if torch >= Version("2.7") else "cxx98"


def select(names: Iterable[str], target: Target = Target()) -> Selection:
    """Parse and filter variant names; every name ends up either accepted or rejected with a reason.

    Two directories that would give the same wheel name are resolved here too: of ``-cxx11``/``-cxx98`` twins the
    one matching PyPI's torch build wins, and several noarch directories give one noarch wheel.
    """
    selection = Selection()
    candidates: list[Variant] = []
    for name in sorted(set(names)):
        if target.patterns and not any(fnmatch.fnmatchcase(name, p) for p in target.patterns):
            selection.rejected.append(Rejected(name, f"not matched by --variant {' '.join(target.patterns)}"))
            continue
        try:
            variant = Variant.parse(name)
        except InvalidVariantName as exc:
            selection.rejected.append(Rejected(name, str(exc)))
            continue
        reason = _unsupported(variant, target)
        if reason:
            selection.rejected.append(Rejected(name, reason))
        else:
            candidates.append(variant)

    # cxx11/cxx98 twins map to one wheel name.
    by_key: dict[tuple[object, ...], list[Variant]] = {}
    noarch: list[Variant] = []
    for v in candidates:
        if v.arch is None:
            noarch.append(v)
            continue
        fw = v.framework
        key = (type(fw), v.torch, v.arch)
        by_key.setdefault(key, []).append(v)
    for group in by_key.values():
        if len(group) == 1:
            selection.accepted.append(group[0])
            continue
        torch = group[0].torch
        assert torch is not None
        want = _preferred_cxx_abi(torch)
        keep = next((v for v in group if isinstance(v.framework, Torch) and v.framework.cxx_abi == want), group[0])
        selection.accepted.append(keep)
        for v in group:
            if v is not keep:
                selection.rejected.append(
                    Rejected(str(v), f"same wheel as {keep} (PyPI torch {torch} uses the {want} C++ ABI)")
                )
    if noarch:
        noarch.sort(key=lambda v: _NOARCH_PREFERENCE.index(v.framework.backend))  # type: ignore[union-attr]
        keep = noarch[0]
        selection.accepted.append(keep)
        for v in noarch[1:]:
            selection.rejected.append(
                Rejected(str(v), f"same noarch wheel as {keep} (noarch variants share one distribution)")
            )
    selection.accepted.sort(key=str)
    selection.rejected.sort(key=lambda r: r.name)
    return selection


def _unsupported(variant: Variant, target: Target) -> str | None:
    if isinstance(variant.framework, TvmFfi):
        return "tvm-ffi variants load through tvm-ffi, not torch: no torch requirement or import path to package"
    arch = variant.arch
    if arch is None:
        return None
    if arch.os not in target.oses:
        return (
            f"OS {arch.os!r} is not produced by this run (only {', '.join(sorted(target.oses))}: platform tags "
            "are computed from ELF binaries)"
        )
    if arch.backend.kind == "metal":
        return "the metal backend needs macOS; this run produces Linux wheels only"
    if arch.cpu not in target.cpus:
        return f"CPU {arch.cpu!r} is not produced by this run (only {', '.join(sorted(target.cpus))})"
    return None

