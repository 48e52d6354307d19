"""The tags and branches of a Hub repository as last listed online, and which release tag a commit carries.

One commit must give one wheel version whatever route named it (``--version``, ``--revision`` with a tag, a branch or
the commit id, a ``kernels.lock`` entry; online, offline or with the Hub down): otherwise the same build lands in one
wheelhouse twice, and the date version (``0.20261206.153948``) sorts above the release (``0.1.0``). The rule: a
release tag (``v1.2.3``, two or more components) at the commit names the version; only a commit that carries none
gets its date. Knowing "carries none" needs a listing of the tags, so every online listing is recorded (one small
JSON file in huggingface_hub's assets cache, ``versions.recorded_refs``) and read when the Hub cannot be asked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from packaging.version import InvalidVersion, Version

from kernelwheel.io import json_cache

_FORMAT = 1
_MAX_BYTES = 4 * 1024 * 1024
_RELEASE_TAG = re.compile(r"^v(\d+(?:\.\d+)+)$")  # v1.2 or v1.2.3; a bare v1 is a series, not a release
_COMMIT = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class RefListing:
    """A repository's tags and branches (name → commit) as the Hub listed them at ``listed_at``."""

    repo_type: str
    tags: Mapping[str, str]
    branches: Mapping[str, str]
    listed_at: datetime


def version_named(pattern: re.Pattern[str], name: str) -> Version | None:
    """The version in group 1 of ``pattern`` matched on ``name``; None when it does not match or is no version."""
    match = pattern.match(name)
    if not match:
        return None
    try:
        return Version(match[1])
    except InvalidVersion:
        return None


def release_version(name: str) -> Version | None:
    """``v1.2.3`` → 1.2.3: a name that is a release by itself; None for a series (``v1``) or any other name."""
    return version_named(_RELEASE_TAG, name)


def release_at(listing: RefListing, commit: str) -> tuple[str, Version] | None:
    """The release tag at ``commit`` and its version (the highest, when several point there), or None."""
    found = [(version, name) for name, target in listing.tags.items()
             if target == commit and (version := release_version(name)) is not None]
    if not found:
        return None
    version, name = max(found)
    return name, version


def save(path: Path, listing: RefListing) -> None:
    """Record ``listing`` at ``path`` (atomically; a record that cannot be written only costs a later offline run)."""
    json_cache.save(path, {"format": _FORMAT}, {
        "repo_type": listing.repo_type, "tags": dict(listing.tags), "branches": dict(listing.branches),
        "listed_at": listing.listed_at.isoformat()})


def load(path: Path) -> RefListing | None:
    """The listing recorded at ``path``; None when there is none or it is damaged."""
    data = json_cache.load(path, {"format": _FORMAT}, max_bytes=_MAX_BYTES, max_depth=3)
    if data is None:
        return None
    repo_type, tags, branches, listed_at = (data.get(k) for k in ("repo_type", "tags", "branches", "listed_at"))
    if not isinstance(repo_type, str) or not _names(tags) or not _names(branches) or not isinstance(listed_at, str):
        return None
    try:
        when = datetime.fromisoformat(listed_at).astimezone(timezone.utc)
    except ValueError:
        return None
    assert isinstance(tags, dict) and isinstance(branches, dict)
    return RefListing(repo_type, tags, branches, when)


def _names(value: object) -> bool:
    """A mapping of ref names to full commit ids, as ``save`` writes it."""
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) and _COMMIT.fullmatch(v) for k, v in value.items())
