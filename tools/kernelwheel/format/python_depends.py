"""A variant's ``python-depends`` (logical names) → ``Requires-Dist`` lines, through kernels' own mapping.

kernels ships ``python_depends.json`` (byte-identical in 0.17.2 and 0.19.1): general names (``einops``, ``helion``,
``tvm-ffi`` → pip package ``apache-tvm-ffi``) and per-backend names (cuda ``nvidia-cutlass-dsl``, xpu ``onednn`` →
``onednn-devel``, neuron ``nki``). A copy is kept beside this module (``python_depends.json``, compared with every
supported release's own by tests/kernelwheel/format/test_kernels_releases.py) and read by the small typed reader
below; kernels' ``validate_dependencies`` cannot be called instead, because it checks that the packages are
importable *here* rather than mapping them for a wheel.
A name that is neither general nor the variant's backend's is refused, as kernels refuses it at load time.
Passed through (``--allow-unknown-deps``), an entry must still be a plain requirement on an index project: never
``torch`` (the wheel's framework pin is ``naming``'s; a second one makes it uninstallable or replaces the user's
torch) and never a direct URL (``pkg @ https://...``), which indexes refuse and which would fetch from anywhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from types import MappingProxyType

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from kernelwheel.io.errors import InvalidVariant

# Projects whose requirement the conversion writes itself (naming.framework_requirement_for).
FRAMEWORK_PROJECTS = frozenset({"torch"})


@dataclass(frozen=True)
class MappedDepends:
    """What the wheel requires for its ``python-depends``, and the names that could not be mapped."""

    requirements: tuple[Requirement, ...]
    unknown: tuple[str, ...]


DATA_FILE = "python_depends.json"  # beside this module: kernels' mapping, as every supported release ships it


@dataclass(frozen=True)
class PythonPackage:
    """One pip package a logical name installs, and the module it provides (None: no Python module)."""

    pkg: str
    import_name: str | None = None


@dataclass(frozen=True)
class DependencyInfo:
    """What one logical name maps to: nix packages (unused here) and pip packages."""

    nix: tuple[str, ...]
    python: tuple[PythonPackage, ...]


@dataclass(frozen=True)
class DependencyData:
    """``python_depends.json``: general names, and names per backend."""

    general: Mapping[str, DependencyInfo]
    backends: Mapping[str, Mapping[str, DependencyInfo]]


def _object(value: object, where: str) -> dict[str, object]:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ValueError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _strings(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{where}: expected a list of strings")
    return tuple(value)


def _dependency_info(value: object, where: str) -> DependencyInfo:
    data = _object(value, where)
    packages: list[PythonPackage] = []
    python = data.get("python", [])
    if not isinstance(python, list):
        raise ValueError(f"{where}.python: expected a list")
    for i, item in enumerate(python):
        package = _object(item, f"{where}.python[{i}]")
        pkg, import_name = package.get("pkg"), package.get("import")
        if not isinstance(pkg, str) or not (import_name is None or isinstance(import_name, str)):
            raise ValueError(f"{where}.python[{i}]: expected {{\"pkg\": <name>, \"import\": <module>}}")
        packages.append(PythonPackage(pkg, import_name))
    return DependencyInfo(_strings(data.get("nix", []), f"{where}.nix"), tuple(packages))


def parse_dependency_data(value: object, where: str = DATA_FILE) -> DependencyData:
    """The mapping from ``python_depends.json``'s JSON value (``ValueError`` naming the field on a bad one)."""
    data = _object(value, where)
    general = {name: _dependency_info(info, f"{where}: general.{name}")
               for name, info in _object(data.get("general", {}), f"{where}: general").items()}
    backends = {
        backend: MappingProxyType({name: _dependency_info(info, f"{where}: backends.{backend}.{name}")
                                   for name, info in _object(deps, f"{where}: backends.{backend}").items()})
        for backend, deps in _object(data.get("backends", {}), f"{where}: backends").items()
    }
    return DependencyData(MappingProxyType(general), MappingProxyType(backends))


@cache
def dependency_data() -> DependencyData:
    """This toolkit's copy of kernels' ``python_depends.json``, parsed."""
    text = resources.files(__package__ or "kernelwheel.format").joinpath(DATA_FILE).read_text(encoding="utf-8")
    return parse_dependency_data(json.loads(text))


def known_names(backend: str) -> tuple[str, ...]:
    """Every logical name a variant of ``backend`` (``cuda``, ``cpu``, ...) may list, sorted."""
    data = dependency_data()
    return tuple(sorted({*data.general, *data.backends.get(backend, {})}))


def _info(name: str, backend: str) -> DependencyInfo | None:
    data = dependency_data()
    return data.general.get(name) or data.backends.get(backend, {}).get(name)


def map_depends(names: Iterable[str], backend: str) -> MappedDepends:
    """Map logical names for ``backend`` to pip requirements (in the order given, without duplicates)."""
    requirements: list[Requirement] = []
    unknown: list[str] = []
    for name in names:
        info = _info(name, backend)
        if info is None:
            unknown.append(name)
            continue
        for package in info.python:
            requirement = Requirement(package.pkg)
            if all(str(r) != str(requirement) for r in requirements):
                requirements.append(requirement)
    return MappedDepends(tuple(requirements), tuple(unknown))


def read_depends(value: object, where: str) -> list[str]:
    """``metadata.json``'s ``python-depends``: a list of strings, or a one-line error naming what was given."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidVariant(
            f"{where}/metadata.json: python-depends must be a list of names such as [\"einops\"]; got {value!r:.80}"
        )
    return list(value)


def depends_requirements(names: Sequence[str], backend: str, where: str, *, allow_unknown: bool) -> list[Requirement]:
    """The ``Requires-Dist`` lines for a variant; unknown names are an error unless ``allow_unknown`` (then they
    are passed through as written, if they are valid requirements)."""
    mapped = map_depends(names, backend)
    if mapped.unknown and not allow_unknown:
        known = ", ".join(known_names(backend)) or "none"
        raise InvalidVariant(
            f"{where}/metadata.json: python-depends {', '.join(repr(n) for n in mapped.unknown)} is not a "
            f"dependency kernels knows for the {backend} backend (known: {known}); pass --allow-unknown-deps to "
            "pass it through as a pip requirement"
        )
    extra: list[Requirement] = []
    for name in mapped.unknown:
        try:
            requirement = Requirement(name)
        except InvalidRequirement:
            raise InvalidVariant(f"{where}/metadata.json: python-depends entry {name!r} is not a requirement") from None
        if canonicalize_name(requirement.name) in FRAMEWORK_PROJECTS:
            raise InvalidVariant(
                f"{where}/metadata.json: python-depends entry {name!r} pins {requirement.name}; the framework "
                "requirement comes from the variant name and is written by the conversion"
            )
        if requirement.url is not None:
            raise InvalidVariant(
                f"{where}/metadata.json: python-depends entry {name!r} is a direct URL reference; expected a "
                "project name with an optional version specifier"
            )
        extra.append(requirement)
    return [*mapped.requirements, *extra]
