"""The torch minors released so far, kept as data: ``torch_minors.json`` beside this module, ``["2.0", ..., "2.15"]``.

The index writer gives a wheel whose ``Requires-Dist: torch`` has a lower bound a sub-index for every released minor
from that bound on that the requirement admits: ``torch>=2.10`` is in ``simple/torch2.10/`` up to the newest released
minor, ``torch>=2.10,<2.13`` in 2.10-2.12 only, ``torch==2.14.*`` in 2.14 only. The list is PyPI's torch releases
(its final releases, one entry per minor, from 2.0 on); the upstream canary (.github/workflows/upstream-canary.yml)
compares it with PyPI's every week (``-m torch_release``: tests/kernelwheel/index/test_torch_minors.py), so that a
new minor is added to the file the week it ships. Until then, ``kernelwheel index --torch X.Y`` adds its sub-index.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from importlib import resources

from packaging.version import InvalidVersion, Version

DATA_FILE = "torch_minors.json"  # beside this module


def minor_version(text: str) -> Version | None:
    """``"2.14"`` → ``Version("2.14")``; None for anything that is not exactly a minor ``X.Y`` (``2``, ``2.14.1``,
    ``2.14rc1``, ``2.x``)."""
    try:
        version = Version(text)
    except InvalidVersion:
        return None
    return version if str(version) == f"{version.major}.{version.minor}" else None


def parse_torch_minors(value: object, where: str = DATA_FILE) -> tuple[Version, ...]:
    """``torch_minors.json``'s JSON value as versions (``ValueError`` saying what is wrong with a bad one)."""
    if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
        raise ValueError(f'{where}: expected a non-empty list of torch minors such as ["2.0", "2.1"]')
    minors = []
    for item in value:
        minor = minor_version(item)
        if minor is None:
            raise ValueError(f"{where}: {item!r:.40} is not a torch minor X.Y")
        minors.append(minor)
    if minors != sorted(set(minors)):
        raise ValueError(f"{where}: expected the minors in ascending order, each once")
    return tuple(minors)


@cache
def released_torch_minors() -> tuple[Version, ...]:
    """The torch minors released so far, oldest first, as this toolkit's ``torch_minors.json`` lists them."""
    text = resources.files(__package__ or "kernelwheel.index").joinpath(DATA_FILE).read_text(encoding="utf-8")
    return parse_torch_minors(json.loads(text))


def minors_of_releases(versions: Iterable[str], since: Version) -> tuple[Version, ...]:
    """The minors of the final releases among ``versions`` (an index's list of torch versions, such as PEP 700's
    ``versions``), from ``since`` on, oldest first; versions that do not parse, pre-releases and dev releases are
    left out, as they are never what a user's torch is pinned to."""
    minors: set[Version] = set()
    for text in versions:
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if not (version.is_prerelease or version.is_devrelease):
            minor = Version(f"{version.major}.{version.minor}")
            if minor >= since:
                minors.add(minor)
    return tuple(sorted(minors))
