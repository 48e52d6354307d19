"""What one mirror run has to do: the repositories each entry names, this shard's share of them, and for each the
release tags not converted yet.

Everything here asks the Hub for listings only (``list_models`` for an ``org``, ``list_repo_refs`` through
``hub.versions.list_refs``, which records the listing as hub2wheel's do); no file is downloaded.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.version import Version

from kernelwheel.format.repo_id import repo_id_problem
from kernelwheel.hub.ref_listing import RefListing, release_version
from kernelwheel.io.errors import HubError, ToolError
from kernelwheel.mirror.config import LATEST, KernelEntry
from kernelwheel.mirror.state import KernelState

if TYPE_CHECKING:
    from huggingface_hub import HfApi

_SHARD = re.compile(r"([1-9][0-9]{0,5})/([1-9][0-9]{0,5})", re.ASCII)


@dataclass(frozen=True)
class Shard:
    """``--shard K/N``: the K-th of N (1 ≤ K ≤ N) jobs, each converting its own kernels."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = _SHARD.fullmatch(text)
        if not match or not 1 <= int(match[1]) <= int(match[2]):
            raise ToolError(f"--shard: expected K/N with 1 <= K <= N (e.g. 2/3), got {text!r:.40}")
        return cls(int(match[1]), int(match[2]))

    def holds(self, repo: str) -> bool:
        """Whether ``repo`` is this shard's: by a hash of its id, so adding or removing a kernel moves no other one,
        and each kernel's state file is only ever written by one job of the matrix."""
        digest = int.from_bytes(hashlib.sha256(repo.encode()).digest()[:8], "big")
        return digest % self.count == self.index - 1


@dataclass(frozen=True)
class Release:
    tag: str
    version: Version
    commit: str


@dataclass(frozen=True)
class Pending:
    """A kernel's release tags matching its entry, split into those to convert now and those left alone."""

    new: tuple[Release, ...]
    up_to_date: tuple[Release, ...]
    moved: tuple[tuple[Release, str], ...]  # converted from another commit than the tag names now: (release, why)


def repositories(api: HfApi, entry: KernelEntry) -> list[str]:
    """The repositories an entry names: its ``repo``, or every repository the Hub lists for its ``org`` (by name)."""
    if entry.repo is not None:
        return [entry.repo]
    try:
        found = sorted({model.id for model in api.list_models(author=entry.org)})
    except Exception as exc:  # any failure of the listing: this entry fails, the others go on
        reason = " ".join(str(exc).split())[:300] or type(exc).__name__
        raise HubError(f"{entry.org}: cannot list its repositories on {api.endpoint}: {reason}") from None
    return [repo for repo in found if repo_id_problem(repo) is None]


def releases(listing: RefListing, entry: KernelEntry) -> list[Release]:
    """The release tags (``v1.2.3``) of a listing that ``entry.versions`` asks for, oldest first."""
    found = sorted((Release(name, version, commit) for name, commit in listing.tags.items()
                    if (version := release_version(name)) is not None and entry.wants(version)),
                   key=lambda r: (r.version, r.tag))
    if entry.versions == LATEST:
        return found[-1:]
    return found


def pending(state: KernelState, wanted: Iterable[Release]) -> Pending:
    """Which of ``wanted`` are new (never converted), up to date, or moved: a release tag now at another commit than
    the one converted keeps its wheels, as a published version never changes (PyPI's rule)."""
    new, done, moved = [], [], []
    for release in wanted:
        converted = state.converted.get(release.tag)
        if converted is None:
            new.append(release)
        elif converted.commit == release.commit:
            done.append(release)
        else:
            moved.append((release, f"tag {release.tag} now points at {release.commit[:12]}, not at "
                                   f"{converted.commit[:12]} whose wheels were published; a published version is "
                                   "never replaced (remove its wheels and its entry in the state to convert it again)"))
    return Pending(tuple(new), tuple(done), tuple(moved))
