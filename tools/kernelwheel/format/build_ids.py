"""One ``id``, one build: kernels 0.19.1's rule for two builds that claim the same metadata.json ``id``.

kernels imports a build as the module named by its ``id`` (``importer._import_from_path``), so a second build with
the same id reuses the first one's module. ``importer._check_same_build`` allows that only when the second is the
same build: neither has a digest (nothing to compare; kernels logs and reuses), or both have one and they are equal
(same algorithm, same files, same hashes: ``Digest.validate``). One digest without the other, or two different
digests, is refused. hub2wheel applies that rule to the variants it converts in one run, in variant order: the first
build of an id keeps it, a later different one is refused with both variants named.

Digests are compared by their decoded hashes: each variant's files were verified against its own digest before this
runs (``checked_variant.check_variant_dir``), so equal hashes mean equal files.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Hashes = tuple[str, frozenset[tuple[str, bytes]]]  # (algorithm, {(path, hash)})


@dataclass(frozen=True)
class BuildIdentity:
    """What kernels compares between two builds of one id: the id and the digest (None: the build has none)."""

    build_id: str
    hashes: Hashes | None


def identity_of(metadata: Mapping[str, Any]) -> BuildIdentity | None:
    """The build's identity from its metadata.json; None without a string ``id`` (kernels needs one to load it)."""
    build_id = metadata.get("id")
    if not isinstance(build_id, str):
        return None
    return BuildIdentity(build_id, _hashes(metadata.get("digest")))


def _hashes(digest: object) -> Hashes | None:
    if not isinstance(digest, dict) or not isinstance(digest.get("files"), dict):
        return None
    files: list[tuple[str, bytes]] = []
    for rel, value in digest["files"].items():
        text = str(value).strip()
        try:
            files.append((str(rel), base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_"
                                                     if ("-" in text or "_" in text) else None)))
        except (binascii.Error, ValueError):
            files.append((str(rel), text.encode()))  # compared as written (the digest check reports it)
    return str(digest.get("algorithm", "sha256")), frozenset(files)


def conflict(first: BuildIdentity, second: BuildIdentity) -> str | None:
    """Why kernels 0.19.1 would refuse ``second`` after loading ``first`` under the same id; None when it reuses it."""
    if first.hashes is None and second.hashes is None:
        return None
    if first.hashes is None or second.hashes is None:
        return "only one of them has a digest, so they cannot be the same build"
    if first.hashes != second.hashes:
        return "their digests differ (a different build)"
    return None


class BuildIds:
    """The first variant seen for each id in a run, and the rule applied to every later one."""

    def __init__(self) -> None:
        self._first: dict[str, tuple[str, BuildIdentity]] = {}

    def claim(self, variant: str, identity: BuildIdentity | None) -> str | None:
        """Record ``variant``'s build; a one-line refusal naming both variants when its id is another build's."""
        if identity is None:
            return None
        known = self._first.setdefault(identity.build_id, (variant, identity))
        if known[0] == variant:
            return None
        why = conflict(known[1], identity)
        if why is None:
            return None
        return (f"build/{variant}: has the same id {identity.build_id!r} as build/{known[0]}, but {why}; kernels "
                "imports a build under its id and refuses a second, different one (expected a unique id per build)")
