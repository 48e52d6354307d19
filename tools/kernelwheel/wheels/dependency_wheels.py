"""The wheels a kernel's ``kernel-depends`` became in this run, and the ``Requires-Dist`` lines that point at them.

A dependency kernel is converted first (``dependency_tree``); a build that depends on it requires the dependency's
project for the same backend (``relu-cu130``, or its noarch project), bounded by the declared version (``>=1,<2``
for ``version: 1``; ``==`` the converted version for a ``revision``). What kernel-depends says is read by
``format.kernel_depends``.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from kernelwheel.format.dependency import Dependency
from kernelwheel.format.kernel_depends import KernelInfo
from kernelwheel.format.variants import Variant
from kernelwheel.io.errors import KernelDependencyError
from kernelwheel.wheels.naming import WheelName


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
