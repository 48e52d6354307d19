"""A variant's ``python-depends`` (logical names) → ``Requires-Dist`` lines, through kernels' own mapping.

kernels 0.17.2 ships ``python_depends.json``: general names (``einops``, ``helion``, ``tvm-ffi`` → pip package
``apache-tvm-ffi``) and per-backend names (cuda ``nvidia-cutlass-dsl``, xpu ``onednn`` → ``onednn-devel``, neuron
``nki``). It is read here with kernels' own ``DependencyData`` type; kernels' ``validate_dependencies`` cannot be
called instead, because it checks that the packages are importable *here* rather than mapping them for a wheel.
A name that is neither general nor the variant's backend's is refused, as kernels refuses it at load time.
Passed through (``--allow-unknown-deps``), an entry must still be a plain requirement on an index project: never
``torch`` (the wheel's framework pin is ``naming``'s; a second one makes it uninstallable or replaces the user's
torch) and never a direct URL (``pkg @ https://...``), which indexes refuse and which would fetch from anywhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from tools.kernelwheel.errors import InvalidVariant

if TYPE_CHECKING:  # imported where used: kernels costs ~70 ms of every hub2wheel start, and most variants list none
    from kernels.python_deps import DependencyData, DependencyInfo

# Projects whose requirement the conversion writes itself (naming.framework_requirement_for).
FRAMEWORK_PROJECTS = frozenset({"torch"})


@dataclass(frozen=True)
class MappedDepends:
    """What the wheel requires for its ``python-depends``, and the names that could not be mapped."""

    requirements: tuple[Requirement, ...]
    unknown: tuple[str, ...]


@cache
def _dependency_data() -> DependencyData:
    from kernels.python_deps import DependencyData

    text = resources.files("kernels").joinpath("python_depends.json").read_text(encoding="utf-8")
    return DependencyData.from_dict(json.loads(text))


def known_names(backend: str) -> tuple[str, ...]:
    """Every logical name a variant of ``backend`` (``cuda``, ``cpu``, ...) may list, sorted."""
    data = _dependency_data()
    backend_deps: dict[str, Any] = data.backends.get(backend, {})
    return tuple(sorted({*data.general, *backend_deps}))


def _info(name: str, backend: str) -> DependencyInfo | None:
    data = _dependency_data()
    general: dict[str, DependencyInfo] = data.general
    backend_deps: dict[str, DependencyInfo] = data.backends.get(backend, {})
    return general.get(name) or backend_deps.get(name)


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
