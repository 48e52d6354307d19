"""``kernel-depends``: a kernel that needs other Hub kernels at run time, as wheels that need other wheels.

kernels (0.17.2 and 0.19.1 alike) resolves a kernel's ``kernel-depends`` (``[{"repo-id": "org/relu", "version":
1}]`` or a ``revision``) before it imports the kernel, and the kernel reaches each one with
``kernels.get_kernel_dep(repo_id)``, which only answers while kernels is loading it.

A wheel does the same: each dependency kernel is converted in the same run, and the dependent wheel

* requires the dependency's project for the same backend (``relu-cu130``, or its noarch project), bounded by the
  declared version (``>=1,<2`` for ``version: 1``; ``==`` the converted version for a ``revision``), and
  ``kernels`` in the range of releases this toolkit is tested with (``KERNELS_TESTED``; raised to the kernel's
  ``kernels-minver`` when it declares one);
* installs the build's files, unchanged, under the build's unique ``id``, with an entry package under the kernel's
  own name that loads the build through kernels' public ``get_local_kernel``, its dependencies mapped to their
  installed folders by ``LOCAL_KERNELS`` (``entry``, ``entry_runtime``).

``kernel-depends``, ``id`` and ``kernels-minver`` are read here by the rules of kernels' ``Metadata.from_bytes``
(kebab-case keys only, ``version`` and ``revision`` exclusive, a three-part ``kernels-minver``), compared with each
supported release by tests/kernelwheel/format/test_kernels_releases.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from kernelwheel.format.dependency import Dependency, parse_dependency
from kernelwheel.io.errors import InvalidVariant

# The kernels releases a wheel with kernel-depends is tested with (its entry calls get_local_kernel, and the build
# calls get_kernel_dep): 0.17.2 and 0.19.1, so any release from 0.17.2 up to, not including, 0.20.
KERNELS_TESTED_RELEASES = ("0.17.2", "0.19.1")
KERNELS_TESTED = SpecifierSet(">=0.17.2,<0.20")
_MINVER = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")
_IMPORTS_KERNELS = re.compile(rb"^\s*(?:from\s+kernels[\s.]|import\s+kernels\b)", re.MULTILINE)


@dataclass(frozen=True)
class KernelInfo:
    """What kernels' own parser reads from a build's metadata.json that matters here."""

    build_id: str
    dependencies: tuple[Dependency, ...]
    kernels_minver: str | None


def parse_kernel_info(raw: bytes, where: str) -> KernelInfo:
    """``id``, ``kernel-depends`` and ``kernels-minver`` from metadata.json's bytes (``InvalidVariant``, one line
    naming the file and the field, on anything kernels would refuse)."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise InvalidVariant(f"{where}/metadata.json: not JSON ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise InvalidVariant(f"{where}/metadata.json: expected a JSON object, got {type(data).__name__}")
    build_id = data.get("id")
    if not isinstance(build_id, str):
        raise InvalidVariant(f"{where}/metadata.json: id must be a string (the build's unique module name)")
    depends = data.get("kernel-depends", [])
    if not isinstance(depends, list):
        raise InvalidVariant(f"{where}/metadata.json: kernel-depends must be a list of "
                             "{\"repo-id\": ..., \"version\": N} objects")
    dependencies = tuple(parse_dependency(dep, f"{where}/metadata.json: kernel-depends[{i}]", InvalidVariant)
                         for i, dep in enumerate(depends))
    minver = data.get("kernels-minver")
    if minver is not None and (not isinstance(minver, str) or not _MINVER.fullmatch(minver)):
        raise InvalidVariant(f"{where}/metadata.json: kernels-minver {minver!r:.40} is not a three-part version "
                             "such as \"0.17.0\"")
    return KernelInfo(build_id, dependencies, minver)


def imports_kernels(sources: Sequence[bytes]) -> bool:
    """Whether any of the build's Python files imports ``kernels`` (then the wheel needs it installed)."""
    return any(_IMPORTS_KERNELS.search(text) for text in sources)


def kernels_requirement(minver: str | None, *, has_dependencies: bool, where: str = "metadata.json") -> Requirement:
    """``kernels`` for a wheel: with dependencies (its entry calls kernels), the tested range, raised to
    ``minver``; otherwise the build's own ``kernels-minver``, if any."""
    if not has_dependencies:
        return Requirement(f"kernels>={minver}" if minver is not None else "kernels")
    if minver is None or Version(minver) <= Version(KERNELS_TESTED_RELEASES[0]):
        return Requirement(f"kernels{KERNELS_TESTED}")
    if Version(minver) not in KERNELS_TESTED:
        raise InvalidVariant(f"{where}: kernels-minver {minver} is outside the kernels releases this converter's "
                             f"wheels are tested with ({KERNELS_TESTED})")
    upper = next(s for s in KERNELS_TESTED if s.operator == "<")
    return Requirement(f"kernels>={minver},{upper}")
