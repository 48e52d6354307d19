"""``kernel-depends``: a kernel that needs other Hub kernels at run time, as wheels that need other wheels.

kernels 0.17.2 resolves a kernel's ``kernel-depends`` (``[{"repo-id": "org/relu", "version": 1}]`` or a
``revision``) before it imports the kernel, and the kernel reaches each one with ``kernels.get_kernel_dep(repo_id)``,
which only answers while kernels is loading it (a context variable, ``kernels.deps.use_kernel_deps``).

A wheel does the same: each dependency kernel is converted in the same run, and the dependent wheel

* requires the dependency's project for the same backend (``relu-cu130``, or its noarch project), bounded by the
  declared version (``>=1,<2`` for ``version: 1``; ``==`` the converted version for a ``revision``), and
  ``kernels`` (``>=`` the kernel's ``kernels-minver`` when it declares one);
* installs the build's files, unchanged, under the build's unique ``id``, with an entry package under the kernel's
  own name that imports the dependencies, then the build inside ``use_kernel_deps`` (``entry``, ``entry_runtime``).

Dependencies are parsed by kernels' own ``Metadata.from_bytes`` (its names, versions and validation).
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tools.kernelwheel.errors import InvalidVariant, KernelDependencyError
from tools.kernelwheel.format.variants import Variant
from tools.kernelwheel.naming import WheelName

# The kernels release whose kernel-depends semantics (get_kernel_dep, use_kernel_deps) this module reproduces.
KERNELS_WITH_DEPENDENCIES = "0.17"
_IMPORTS_KERNELS = re.compile(rb"^\s*(?:from\s+kernels[\s.]|import\s+kernels\b)", re.MULTILINE)


@dataclass(frozen=True)
class Dependency:
    """One ``kernel-depends`` entry: ``version`` (an API major) or ``revision`` (a branch, tag or commit)."""

    repo_id: str
    version: int | None = None
    revision: str | None = None

    def __str__(self) -> str:
        return f"{self.repo_id} ({f'version {self.version}' if self.version is not None else self.revision})"


@dataclass(frozen=True)
class KernelInfo:
    """What kernels' own parser reads from a build's metadata.json that matters here."""

    build_id: str
    dependencies: tuple[Dependency, ...]
    kernels_minver: str | None


@dataclass(frozen=True)
class ConvertedWheel:
    variant: str
    name: WheelName
    package: str  # the top-level import package the wheel installs


@dataclass(frozen=True)
class ConvertedKernel:
    """A dependency kernel converted in this run: its wheels, or why there are none."""

    dependency: Dependency
    wheels: tuple[ConvertedWheel, ...] = ()
    failure: str | None = None


def parse_kernel_info(raw: bytes, where: str) -> KernelInfo:
    """metadata.json through kernels 0.17.2's ``Metadata.from_bytes`` (a kernel with dependencies is a 0.17 build)."""
    from kernels._rust import KernelVersion, Metadata  # imported when a build declares kernel-depends

    try:
        metadata = Metadata.from_bytes(raw)
    except ValueError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidVariant(f"{where}/metadata.json: kernels 0.17.2 cannot read it ({first})") from None
    dependencies = []
    for dep in metadata.kernel_depends:
        version = dep.version
        if isinstance(version, KernelVersion.Version):
            dependencies.append(Dependency(dep.repo_id, version=int(version.version)))
        else:
            dependencies.append(Dependency(dep.repo_id, revision=str(getattr(version, "revision", ""))))
    minver = metadata.kernels_minver
    return KernelInfo(metadata.id, tuple(dependencies), str(minver) if minver is not None else None)


def imports_kernels(sources: Sequence[bytes]) -> bool:
    """Whether any of the build's Python files imports ``kernels`` (then the wheel needs it installed)."""
    return any(_IMPORTS_KERNELS.search(text) for text in sources)


def kernels_requirement(minver: str | None, *, has_dependencies: bool) -> Requirement:
    if minver is not None:
        return Requirement(f"kernels>={minver}")
    return Requirement(f"kernels>={KERNELS_WITH_DEPENDENCIES}" if has_dependencies else "kernels")


def _wheel_for(variant: Variant, converted: ConvertedKernel) -> ConvertedWheel | None:
    """The dependency's wheel a build of ``variant`` needs: the same variant, else the same backend, else noarch."""
    wheels = converted.wheels
    same = [w for w in wheels if w.variant == str(variant)]
    if same:
        return same[0]
    tag = variant.backend_tag
    if tag is not None:
        same_backend = [w for w in wheels if w.name.distribution.endswith(f"-{tag}")]
        if same_backend:
            return same_backend[0]
    noarch = sorted((w for w in wheels if w.name.platform_tag == "any" and w.name.abi_tag == "none"),
                    key=lambda w: len(w.name.distribution))
    return noarch[0] if noarch else None


def dependency_requirements(variant: Variant, info: KernelInfo, converted: Mapping[str, ConvertedKernel],
                            where: str) -> tuple[list[Requirement], dict[str, str]]:
    """``Requires-Dist`` for each dependency, and repo id → the package the dependency's wheel installs."""
    requirements: list[Requirement] = []
    packages: dict[str, str] = {}
    for dep in info.dependencies:
        done = converted.get(dep.repo_id)
        if done is None:
            raise KernelDependencyError(f"{where}: kernel-depends {dep} was not converted in this run")
        if done.failure is not None:
            raise KernelDependencyError(f"{where}: kernel-depends {dep}: {done.failure}")
        wheel = _wheel_for(variant, done)
        if wheel is None:
            have = ", ".join(sorted(w.name.distribution for w in done.wheels)) or "none"
            backend = variant.backend_tag or "noarch"
            raise KernelDependencyError(
                f"{where}: kernel-depends {dep} has no wheel for this variant's backend ({backend}; converted: {have})"
            )
        # version N: any build of API major N; a revision: exactly the build converted from it.
        bound = f">={dep.version},<{dep.version + 1}" if dep.version is not None else f"=={wheel.name.version.public}"
        requirements.append(Requirement(f"{canonicalize_name(wheel.name.distribution)}{bound}"))
        packages[dep.repo_id] = wheel.package
    return requirements, packages


def top_level_package(wheel: Path) -> str:
    """The import package a converted wheel installs (its one top-level folder besides ``.dist-info``)."""
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/", 1)[0] for name in archive.namelist() if "/" in name}
    packages = sorted(t for t in tops if not t.endswith(".dist-info"))
    # A wheel with dependencies installs the build (``_<id>``) and the entry package: the entry is the public one.
    public = [p for p in packages if not p.startswith("_")]
    return (public or packages)[0]
