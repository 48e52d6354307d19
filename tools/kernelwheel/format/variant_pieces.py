"""A build-variant name's pieces as typed values: framework, backend, arch, Python, noarch, SDK; each spells itself.

One frozen dataclass per piece of a ``build/<variant>/`` name: ``variants.Variant`` puts them together and
``variant_grammars`` splits a name into them. The framework pieces (``Torch``, ``TorchStableAbi``, ``TvmFfi``,
``Noarch``, ``Sdk``) are ``frameworks``' classes, each holding its framework's rules; they are imported from here
too. Each piece spells itself in both grammars (``spelled``, ``str``), and the pieces that are also read on their own
parse their spelling: ``Backend.parse`` (a legacy backend tag, ``cu128``, which is also a distribution-name suffix),
``Backend.parse_dotted`` and ``Python.parse`` (kernels 0.19's spelling).

Names are ASCII (``check_ascii``): a regex digit class and ``int()`` would otherwise read fullwidth digits
(``torch２１３``) as numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Literal

from packaging.version import Version

from kernelwheel.format.frameworks import CxxAbi as CxxAbi
from kernelwheel.format.frameworks import Framework as Framework
from kernelwheel.format.frameworks import Noarch as Noarch
from kernelwheel.format.frameworks import Sdk as Sdk
from kernelwheel.format.frameworks import Torch as Torch
from kernelwheel.format.frameworks import TorchStableAbi as TorchStableAbi
from kernelwheel.format.frameworks import TvmFfi as TvmFfi
from kernelwheel.format.frameworks import dotted, dotted_str
from kernelwheel.io.errors import InvalidVariantName

BackendKind = Literal["cuda", "rocm", "xpu", "cpu", "metal", "cann", "neuron", "tpu", "npu"]

CPUS: frozenset[str] = frozenset({"x86_64", "aarch64"})
OSES: frozenset[str] = frozenset({"linux", "darwin", "windows"})
# Backends whose variant string is the bare name (no version).
# (Neither kernels release reads an arch backend ``npu``: Ascend builds are ``cann``.)
_UNVERSIONED: dict[str, BackendKind] = {"cpu": "cpu", "metal": "metal", "neuron": "neuron", "tpu": "tpu"}
_VERSIONED: tuple[BackendKind, ...] = ("cuda", "rocm", "xpu", "cann")
NOARCH_BACKENDS: frozenset[str] = frozenset({"cpu", "cuda", "rocm", "xpu", "metal", "neuron", "tpu", "npu", "cann"})
PythonAbi = Literal["abi3", "abi3t"]
_PYTHON_ABIS: dict[str, PythonAbi] = {"abi3": "abi3", "abi3t": "abi3t"}
LEGACY_PYTHON = Version("3.9")  # what a legacy name implicitly is: cpython-3.9-abi3
ABI3T_MIN_PYTHON = Version("3.15")  # PEP 803: the free-threaded stable ABI starts with 3.15


def check_ascii(name: str, what: str) -> None:
    """Refuse a name (or a piece of one) that is not printable ASCII, naming its first odd character."""
    if not name.isascii() or not name.isprintable():
        odd = next(c for c in name if not c.isascii() or not c.isprintable())
        raise InvalidVariantName(
            f"{what} {name!r} holds {odd!r} (U+{ord(odd):04X}): variant names are ASCII letters, digits, '-' and '_'"
        )


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
        check_ascii(s, "backend")
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
        check_ascii("-".join(parts), "backend")
        if len(parts) == 1 and parts[0] in _UNVERSIONED:
            return cls(_UNVERSIONED[parts[0]])
        if len(parts) == 2 and parts[0] in _VERSIONED:
            return cls(_VERSIONED[_VERSIONED.index(parts[0])], dotted(parts[1], parts[0], name))
        raise InvalidVariantName(
            f"variant {name!r}: unknown backend {'-'.join(parts)!r}: expected cuda-X.Y, rocm-X.Y, xpu-YYYY.N, "
            "cann-X.Y, cpu, metal, neuron or tpu"
        )

    def spelled(self, *, legacy: bool) -> str:
        """``cu130`` (legacy) or ``cuda-13.0`` (kernels 0.19 grammar)."""
        if self.version is None:
            return self.kind
        if not legacy:
            return f"{self.kind}-{dotted_str(self.version)}"
        prefix = {"cuda": "cu", "rocm": "rocm", "xpu": "xpu", "cann": "cann"}[self.kind]
        return f"{prefix}{self.version.major}{self.version.minor}"

    def __str__(self) -> str:
        return self.spelled(legacy=True)

    @property
    def tag(self) -> str:
        """The distribution-name suffix: ``cu128``, ``rocm71``, ``cpu`` (same as the variant string)."""
        return str(self)


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
        version = dotted(parts[1], "Python", name)
        abi = _PYTHON_ABIS.get(parts[2])
        if abi is None:
            raise InvalidVariantName(f"variant {name!r}: Python ABI {parts[2]!r} is neither 'abi3' nor 'abi3t'")
        if abi == "abi3t" and version < ABI3T_MIN_PYTHON:
            raise InvalidVariantName(
                f"variant {name!r}: abi3t needs Python {ABI3T_MIN_PYTHON} or later, not {dotted_str(version)}"
            )
        return cls(version, abi)

    def __str__(self) -> str:
        return f"cpython-{dotted_str(self.version)}-{self.abi}"

    @property
    def tag(self) -> str:
        """The wheel's Python tag: ``cp312`` for ``cpython-3.12``."""
        return f"cp{self.version.major}{self.version.minor}"
