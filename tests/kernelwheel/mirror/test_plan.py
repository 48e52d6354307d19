"""Tests for kernelwheel/mirror/plan.py: shards, the release tags an entry asks for, and what is new."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from packaging.version import Version

from kernelwheel.hub.ref_listing import RefListing
from kernelwheel.io.errors import ToolError
from kernelwheel.mirror.config import KernelEntry
from kernelwheel.mirror.plan import Release, Shard, pending, releases
from kernelwheel.mirror.state import Converted, KernelState

A, B, C = "a" * 40, "b" * 40, "c" * 40
LISTING = RefListing("model", {"v0.1.0": A, "v0.2.0": B, "v1.0": C, "v1": C, "nightly": A},
                     {"main": A, "v1": C}, datetime.now(timezone.utc))


def _entry(versions: str | None = None) -> KernelEntry:
    return KernelEntry("org/k", None, versions, (), False)


def test_shards_split_the_kernels_deterministically_and_completely() -> None:
    repos = [f"org/kernel-{n}" for n in range(300)]
    shares = [[repo for repo in repos if Shard(k, 3).holds(repo)] for k in (1, 2, 3)]
    assert sorted(repo for share in shares for repo in share) == sorted(repos)  # each kernel in exactly one shard
    assert all(60 < len(share) < 140 for share in shares), [len(s) for s in shares]
    assert [repo for repo in repos if Shard(2, 3).holds(repo)] == shares[1]  # the same split every time
    assert all(Shard(1, 1).holds(repo) for repo in repos)


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "3", "a/b", "1/3/4", " 1/3", "01/3"])
def test_a_bad_shard_is_refused(text: str) -> None:
    with pytest.raises(ToolError, match=r"--shard: expected K/N with 1 <= K <= N \(e.g. 2/3\)"):
        Shard.parse(text)


def test_shard_parse() -> None:
    assert Shard.parse("2/3") == Shard(2, 3)


@pytest.mark.parametrize("versions, tags", [
    (None, ["v0.1.0", "v0.2.0", "v1.0"]),  # release tags only: not v1 (a series), nightly, or branches
    (">=0.2", ["v0.2.0", "v1.0"]),
    ("<1", ["v0.1.0", "v0.2.0"]),
    ("latest", ["v1.0"]),
    ("==2.*", []),
])
def test_releases_an_entry_asks_for_oldest_first(versions: str | None, tags: list[str]) -> None:
    assert [r.tag for r in releases(LISTING, _entry(versions))] == tags


def test_pending_splits_new_done_and_moved() -> None:
    state = KernelState("org/k", {"v0.1.0": Converted(A), "v0.2.0": Converted(A)})
    todo = pending(state, releases(LISTING, _entry()))
    assert todo.new == (Release("v1.0", Version("1.0"), C),)
    assert todo.up_to_date == (Release("v0.1.0", Version("0.1.0"), A),)
    ((moved, why),) = todo.moved
    assert moved.tag == "v0.2.0"
    assert why.startswith(f"tag v0.2.0 now points at {B[:12]}, not at {A[:12]} whose wheels were published")
