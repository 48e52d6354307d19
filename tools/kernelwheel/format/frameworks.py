"""Each framework's rules in one class: how a variant name spells it, and what its wheels are.

A framework piece (``Torch``, ``TorchStableAbi``, ``TvmFfi``: spelled by arch names; ``Noarch``: ``torch-<backend>``,
``mlx-<backend>``; ``Sdk``: no framework at all) is a frozen dataclass that answers ``FrameworkRules``: its spelling
in both name grammars, the torch it targets, the project its wheels form (``project_suffix``, ``own_project``), their
version label and requirement, and which of two twin spellings wins. ``naming``, ``selection`` and ``noarch`` ask
these and never the framework's type. The frameworks arch names spell are listed in ``FRAMEWORKS`` (``register``),
which ``variant_grammars`` tries in order: adding one is one class here (or anywhere, registered) and its tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Literal, TypeVar

from packaging.requirements import Requirement
from packaging.version import Version

from kernelwheel.io.errors import InvalidVariantName

CxxAbi = Literal["cxx11", "cxx98"]
_CXX_ABIS: dict[str, CxxAbi] = {"cxx11": "cxx11", "cxx98": "cxx98"}
_DOTTED = re.compile(r"([0-9]+)\.([0-9]+)")


def dotted(text: str, what: str, name: str) -> Version:
    """``"2.14"`` → 2.14: the 0.19 grammar writes every version as ``<major>.<minor>``."""
    match = _DOTTED.fullmatch(text)
    if not match:
        raise InvalidVariantName(f"variant {name!r}: {what} version {text!r} is not <major>.<minor> (e.g. '2.14')")
    return Version(f"{int(match[1])}.{int(match[2])}")


def dotted_str(version: Version) -> str:
    """2.14 → ``"2.14"``: how the 0.19 grammar, labels and requirements write a minor."""
    return f"{version.major}.{version.minor}"


def _version_digits(version: Version) -> str:
    return f"{version.major}{version.minor}"


class FrameworkRules:
    """A framework piece's rules, one class per framework: how a variant name spells it, and what its wheels are
    (``naming`` spells the project, the version label and the requirement from these; ``selection`` and ``noarch``
    ask them). A framework that arch names spell is also listed in ``FRAMEWORKS`` (``register``), which the name
    grammars read: adding one is its class and its tests."""

    legacy_grammar: ClassVar[bool] = True  # every supported kernels release reads its names (an SDK's: 0.19 only)
    stable_abi: ClassVar[bool] = False  # built against torch's stable ABI: that torch minor or newer

    def spelled(self, *, legacy: bool) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.spelled(legacy=True)

    @property
    def torch(self) -> Version | None:
        """The torch minor the build is tied to, or the oldest it works on; None without torch."""
        return None

    @property
    def noarch_backend(self) -> str | None:
        """The backend a noarch or SDK name spells (``torch-cuda``, ``sdk-cuda``); None otherwise."""
        return None

    @property
    def own_project(self) -> bool:
        """A project of its own whatever the other builds of the kernel are (an SDK, an MLX kernel)."""
        return False

    @property
    def one_noarch_wheel(self) -> bool:
        """Noarch folders of this framework that are the same build give one wheel (``noarch``)."""
        return False

    @property
    def project_suffix(self) -> str | None:
        """What the wheel's project adds after the kernel's name, before the backend tag (``tvm-ffi``, ``sdk``)."""
        return None

    @property
    def version_label(self) -> tuple[str, Version] | None:
        """The local version label's name and version (``torch`` 2.14 → ``+torch2.14``); None for no label."""
        return None

    def requirement(self) -> Requirement | None:
        """What the build needs at run time; None for one that needs no framework (an SDK)."""
        raise NotImplementedError

    def twin(self) -> FrameworkRules:
        """What two spellings of one wheel share: names that differ only in what this leaves out are twins."""
        return self

    def preferred_twin(self) -> bool:
        """Whether this spelling wins over a twin's, before the grammar is asked (``selection``)."""
        return True

    def preferred_because(self) -> str | None:
        """Why a preferred twin won, for the other's skip reason; None when only the grammar decides."""
        return None


def legacy_version(digits: str, name: str) -> Version:
    """``"210"`` → 2.10, ``"29"`` → 2.9: one major digit, then the minor (the kernels convention)."""
    if len(digits) < 2:
        raise InvalidVariantName(
            f"variant {name!r}: torch version {digits!r} needs a major digit and a minor (e.g. '29' = 2.9, "
            "'210' = 2.10)"
        )
    return Version(f"{digits[0]}.{int(digits[1:])}")


@dataclass(frozen=True)
class VersionedFramework(FrameworkRules):
    """A framework an arch name spells ``<PREFIX><M><m>`` (legacy) or ``<PREFIX>-<M>.<m>`` (kernels 0.19)."""

    version: Version
    PREFIX: ClassVar[str]
    WHAT: ClassVar[str]  # how an error names its version

    @classmethod
    def read_legacy(cls, name: str) -> tuple[FrameworkRules, str] | None:
        """The framework a legacy arch name starts with, and the ``<backend>-<cpu>-<os>`` after it; None when the name
        starts with another's prefix."""
        match = re.match(rf"^{re.escape(cls.PREFIX)}([0-9]+)-(.+)$", name)
        return None if match is None else (cls(legacy_version(match[1], name)), match[2])

    @classmethod
    def read_dotted(cls, parts: list[str], name: str) -> tuple[FrameworkRules, int] | None:
        """The framework a 0.19-grammar name starts with and how many '-' parts it takes; None if another's."""
        prefix = cls.PREFIX.split("-")
        if parts[:len(prefix)] != prefix or len(parts) <= len(prefix):
            return None
        return cls(dotted(parts[len(prefix)], cls.WHAT, name)), len(prefix) + 1

    def spelled(self, *, legacy: bool) -> str:
        if not legacy:
            return f"{self.PREFIX}-{dotted_str(self.version)}"
        return f"{self.PREFIX}{_version_digits(self.version)}"


FRAMEWORKS: list[type[VersionedFramework]] = []  # the frameworks arch names spell, in the order names are tried


_Registered = TypeVar("_Registered", bound=type[VersionedFramework])


def register(framework: _Registered) -> _Registered:
    """List ``framework`` in ``FRAMEWORKS``: variant names spelling it parse, and its rules name its wheels."""
    FRAMEWORKS.append(framework)
    return framework


def _preferred_cxx_abi(torch: Version) -> CxxAbi:
    # PyPI's torch wheels switched to the C++11 ABI with 2.7 (manylinux_2_28); before that they were cxx98.
    return "cxx11" if torch >= Version("2.7") else "cxx98"


@register
@dataclass(frozen=True)
class TorchStableAbi(VersionedFramework):
    """``torch-stable-abi<M><m>``: built against torch's stable C ABI; works on that torch minor or newer."""

    PREFIX: ClassVar[str] = "torch-stable-abi"
    WHAT: ClassVar[str] = "torch stable ABI"
    stable_abi: ClassVar[bool] = True

    @property
    def torch(self) -> Version:
        return self.version

    def requirement(self) -> Requirement:
        return Requirement(f"torch>={dotted_str(self.version)}")


TVM_FFI_PACKAGE = "apache-tvm-ffi"  # kernels' python_depends.json maps the logical name tvm-ffi to it


@register
@dataclass(frozen=True)
class TvmFfi(VersionedFramework):
    """``tvm-ffi<M><m>``: a tvm-ffi kernel (no torch extension inside): a project of its own,
    ``<kernel>-tvm-ffi-<backend>``, never chosen for a torch user, labelled ``+tvmffiX.Y``."""

    PREFIX: ClassVar[str] = "tvm-ffi"
    WHAT: ClassVar[str] = "tvm-ffi"

    @property
    def project_suffix(self) -> str:
        return "tvm-ffi"

    @property
    def version_label(self) -> tuple[str, Version]:
        return "tvmffi", self.version

    def requirement(self) -> Requirement:
        return Requirement(f"{TVM_FFI_PACKAGE}=={dotted_str(self.version)}.*")  # kernels loads it only with X.Y


@register
@dataclass(frozen=True)
class Torch(VersionedFramework):
    """``torch<M><m>[-cxx11|-cxx98]``: a build tied to one torch minor."""

    cxx_abi: CxxAbi | None = None
    PREFIX: ClassVar[str] = "torch"
    WHAT: ClassVar[str] = "torch"

    @classmethod
    def read_legacy(cls, name: str) -> tuple[FrameworkRules, str] | None:
        match = re.match(r"^torch([0-9]+)(?:-(cxx[0-9]+))?-(.+)$", name)
        if match is None:
            return None
        abi = match[2]
        if abi is not None and abi not in _CXX_ABIS:
            raise InvalidVariantName(f"variant {name!r}: C++ ABI {abi!r} is neither 'cxx11' nor 'cxx98'")
        return cls(legacy_version(match[1], name), None if abi is None else _CXX_ABIS[abi]), match[3]

    @classmethod
    def read_dotted(cls, parts: list[str], name: str) -> tuple[FrameworkRules, int] | None:
        if parts[0] != "torch" or len(parts) <= 1 or not parts[1][:1].isdigit():
            return None
        cxx = _CXX_ABIS.get(parts[2]) if len(parts) > 2 else None
        return cls(dotted(parts[1], "torch", name), cxx), 3 if cxx else 2

    def spelled(self, *, legacy: bool) -> str:
        abi = f"-{self.cxx_abi}" if self.cxx_abi else ""
        return f"{super().spelled(legacy=legacy)}{abi}"

    @property
    def torch(self) -> Version:
        return self.version

    @property
    def version_label(self) -> tuple[str, Version]:
        return "torch", self.version

    def requirement(self) -> Requirement:
        return Requirement(f"torch=={dotted_str(self.version)}.*")

    def twin(self) -> Torch:
        return Torch(self.version)  # cxx11 and cxx98 builds of one torch give one wheel name

    def preferred_twin(self) -> bool:
        return self.cxx_abi == _preferred_cxx_abi(self.version)

    def preferred_because(self) -> str:
        return f"PyPI torch {self.version} uses the {_preferred_cxx_abi(self.version)} C++ ABI"


@dataclass(frozen=True)
class Noarch(FrameworkRules):
    """``torch-<backend>`` (pure Python, backend picked at run time), the legacy ``torch-universal``, or
    ``mlx-<backend>`` (an MLX kernel: no torch, a project of its own, ``<kernel>-mlx-<backend>``)."""

    backend: str
    framework: Literal["torch", "mlx"] = "torch"

    def spelled(self, *, legacy: bool) -> str:
        return f"{self.framework}-{self.backend}"

    @property
    def noarch_backend(self) -> str:
        return self.backend

    @property
    def own_project(self) -> bool:
        return self.framework == "mlx"

    @property
    def one_noarch_wheel(self) -> bool:
        return self.framework == "torch"

    @property
    def project_suffix(self) -> str | None:
        return f"mlx-{self.backend}" if self.framework == "mlx" else None

    def requirement(self) -> Requirement:
        return Requirement(self.framework)  # torch, or mlx


@dataclass(frozen=True)
class Sdk(FrameworkRules):
    """An SDK (no framework): its own project, ``<kernel>-sdk[-<backend>]``. ``backend``: the bare backend name of
    ``sdk-<backend>``; an SDK with compiled parts keeps its backend in ``Variant.arch`` instead."""

    backend: str | None = None
    legacy_grammar: ClassVar[bool] = False

    def spelled(self, *, legacy: bool) -> str:
        return "sdk" if self.backend is None else f"sdk-{self.backend}"

    @property
    def noarch_backend(self) -> str | None:
        return self.backend

    @property
    def own_project(self) -> bool:
        return True

    @property
    def project_suffix(self) -> str:
        return "sdk" if self.backend is None else f"sdk-{self.backend}"

    def requirement(self) -> None:
        return None


Framework = VersionedFramework  # a framework an arch name spells (``FRAMEWORKS``)
