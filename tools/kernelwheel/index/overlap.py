"""Builds of one version that one machine would accept both of, so that which one it installs is the installer's
choice (its tag priority), not the index owner's.

``make wheel`` writes ``img2gray_cu130-0.1.0+torch2.14-cp39-abi3-manylinux_2_28_x86_64.whl``; hub2wheel may write the
same name and version for ``manylinux_2_24_x86_64``. Their tags differ, yet every machine with glibc 2.28 or newer
accepts both, and pip takes the one whose tag comes first in ``packaging.tags.sys_tags()``. When the two are other
bytes, a user gets one or the other depending on the machine: ``kernelwheel index`` warns, naming the version.

Two tags overlap when one CPython and one platform accept both: the interpreter/ABI parts admit a common CPython
minor (``cp39-abi3`` admits 3.9 and newer, ``cp311-cp311`` only 3.11, ``py3-none`` all), and the platforms are the
same OS family and architecture (a machine accepting ``manylinux_2_28`` accepts every older glibc, and
``linux_<arch>``), or one of them is ``any``. Other interpreters (``pp310``) overlap only with the same spelling.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from itertools import combinations

from packaging.tags import Tag

from kernelwheel.index.indexed_wheel import IndexedWheel

_NEWEST = 10**6  # "and every newer minor"
_CPYTHON = re.compile(r"cp3(\d+)", re.ASCII)
_GENERIC = re.compile(r"py3(\d*)", re.ASCII)
_GLIBC = re.compile(r"manylinux(?:1|2010|2014|_\d+_\d+)_(.+)", re.ASCII)
_MUSL = re.compile(r"musllinux_\d+_\d+_(.+)", re.ASCII)
_MACOS = re.compile(r"macosx_\d+_\d+_(.+)", re.ASCII)
_MACOS_UNIVERSAL = {"universal2": {"x86_64", "arm64"}}


def _cpython_minors(tag: Tag) -> tuple[int, int] | None:
    """The CPython 3.x minors that accept ``tag``'s interpreter and ABI; None for another interpreter."""
    if match := _CPYTHON.fullmatch(tag.interpreter):
        minor = int(match[1])
        return (minor, _NEWEST) if tag.abi == "abi3" else (minor, minor)
    if (match := _GENERIC.fullmatch(tag.interpreter)) and tag.abi == "none":
        return (int(match[1]) if match[1] else 0, _NEWEST)
    return None


def _python_overlaps(a: Tag, b: Tag) -> bool:
    first, second = _cpython_minors(a), _cpython_minors(b)
    if first is None or second is None:
        return (a.interpreter, a.abi) == (b.interpreter, b.abi)
    return max(first[0], second[0]) <= min(first[1], second[1])


def _platform(platform: str) -> tuple[str, frozenset[str]]:
    """``(OS family, architectures)``: ``manylinux_2_28_x86_64`` → ``("glibc", {"x86_64"})``."""
    for family, pattern in (("glibc", _GLIBC), ("musl", _MUSL), ("macos", _MACOS)):
        if match := pattern.fullmatch(platform):
            arch = match[1]
            return family, frozenset(_MACOS_UNIVERSAL.get(arch, {arch}))
    if platform.startswith("linux_"):
        return "linux", frozenset({platform.removeprefix("linux_")})
    return platform, frozenset({""})


def _platform_overlaps(a: str, b: str) -> bool:
    if "any" in (a, b):
        return True
    (family_a, archs_a), (family_b, archs_b) = _platform(a), _platform(b)
    # linux_<arch> is accepted by glibc and musl machines alike.
    same_family = family_a == family_b or ("linux" in (family_a, family_b) and {family_a, family_b} <= {
        "linux", "glibc", "musl"})
    return same_family and bool(archs_a & archs_b)


def tags_overlap(first: Iterable[Tag], second: Iterable[Tag]) -> bool:
    """Whether one machine (one CPython, one platform) accepts a tag of ``first`` and a tag of ``second``."""
    others = list(second)
    return any(_python_overlaps(a, b) and _platform_overlaps(a.platform, b.platform) for a in first for b in others)


def overlapping_builds(wheels: Sequence[IndexedWheel]) -> list[str]:
    """One warning line per project version holding two files of other bytes that one machine accepts both of."""
    by_version: dict[tuple[str, str, str], list[IndexedWheel]] = {}
    for wheel in wheels:  # variant wheels of one version are told apart by their label, not their tags
        by_version.setdefault((wheel.project, str(wheel.name.version), wheel.label or ""), []).append(wheel)
    warnings = []
    for (project, version, _), builds in sorted(by_version.items()):
        clashing = sorted({w.filename for a, b in combinations(builds, 2) if a.sha256 != b.sha256
                           and tags_overlap(a.name.tags, b.name.tags) for w in (a, b)})
        if clashing:
            warnings.append(
                f"{project} {version}: {', '.join(clashing)} are other builds that one machine would install "
                "alike; the installer takes the one whose tag it prefers (packaging.tags.sys_tags order), so users "
                "get one or the other by machine. Keep one, or give them different versions"
            )
    return warnings
