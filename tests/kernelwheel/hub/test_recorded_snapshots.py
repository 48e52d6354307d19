"""kernelwheel.hub.recorded_snapshots: a rerun without snapshot_download, against olah (see test_client.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from huggingface_hub import constants as hf_constants

from kernelwheel.hub import client as hub
from kernelwheel.hub import recorded_snapshots
from kernelwheel.hub.settings import HubSettings
from tests.helpers.hub_fixtures import HubRepos
from tests.helpers.repo import REPO_ROOT
from tests.helpers.servers import silent_server


def _settings(**overrides: str) -> HubSettings:
    return HubSettings.from_env({**os.environ, **overrides})


def test_cached_fetch_needs_a_complete_recorded_snapshot(hf_env: Path, hub_repos: HubRepos,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _settings()
    patterns = ["build/torch-cpu/*"]
    assert recorded_snapshots.cached_fetch(settings, "testorg/img2gray", "v1", patterns=patterns) is None  # nothing recorded yet
    snap = hub.fetch(settings.api(), settings, "testorg/img2gray", "v1", patterns=patterns)
    # recorded by fetch: the same snapshot, resolved through the Hub (one HEAD per repo type), no snapshot_download
    assert recorded_snapshots.cached_fetch(settings, "testorg/img2gray", "v1", patterns=patterns) == snap
    # other patterns or another revision: not what was recorded
    assert recorded_snapshots.cached_fetch(settings, "testorg/img2gray", "v1") is None
    assert recorded_snapshots.cached_fetch(settings, "testorg/img2gray", "v1.1.0", patterns=patterns) is None
    # offline is fetch's (snapshot_download's own cache rules); a Hub that does not answer is too
    assert recorded_snapshots.cached_fetch(_settings(HF_HUB_OFFLINE="1"), "testorg/img2gray", "v1", patterns=patterns) is None
    assert recorded_snapshots.cached_fetch(_settings(HF_ENDPOINT="http://127.0.0.1:9"), "testorg/img2gray", "v1",
                                           patterns=patterns) is None
    # a recorded file gone from the cache: fetch again
    victim = next(p for p in (snap.root / "build" / "torch-cpu").rglob("*") if p.is_file())
    victim.unlink()
    assert recorded_snapshots.cached_fetch(settings, "testorg/img2gray", "v1", patterns=patterns) is None
    assert hub.fetch(settings.api(), settings, "testorg/img2gray", "v1", patterns=patterns) == snap
    assert victim.is_file()


_RERUN_IN_A_FRESH_PROCESS = (
    "import sys; from kernelwheel.hub import recorded_snapshots, settings; "
    "snap = recorded_snapshots.cached_fetch(settings.HubSettings.from_env(), 'testorg/img2gray', 'v1', "
    "patterns=['build/torch-cpu/*']); "
    "print(snap.commit if snap else None, 'huggingface_hub.file_download' in sys.modules)"
)


def test_cached_fetch_of_a_tag_asks_through_the_standard_library(hf_env: Path, hub_repos: HubRepos,
                                                                tmp_path: Path) -> None:
    # A rerun of a tag asks its commit without loading huggingface_hub's HTTP stack (revision_probe); with a
    # stored login huggingface_hub would send, the probe steps aside and huggingface_hub asks, with the same result.
    settings = _settings()
    snap = hub.fetch(settings.api(), settings, "testorg/img2gray", "v1", patterns=["build/torch-cpu/*"])
    token_file = tmp_path / "token"
    for token_path, loaded in ((tmp_path / "no-login", "False"), (token_file, "True")):
        token_file.write_text("hf_stored_login\n")
        done = subprocess.run([sys.executable, "-c", _RERUN_IN_A_FRESH_PROCESS], cwd=REPO_ROOT, text=True,
                              capture_output=True, env={**os.environ, "HF_TOKEN_PATH": str(token_path)})
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [snap.commit, loaded]


def test_cached_fetch_waits_once_for_a_hub_that_does_not_answer(hf_env: Path, hub_repos: HubRepos,
                                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A Hub that takes the connection and never answers: the rerun's HEAD times out once and fetch (which reports
    # it) takes over; huggingface_hub is not sent to wait as long again.
    settings = _settings()
    patterns = ["build/torch-cpu/*"]
    hub.fetch(settings.api(), settings, "testorg/img2gray", "v1", patterns=patterns)
    monkeypatch.setattr(hf_constants, "HF_HUB_ETAG_TIMEOUT", 0.2)
    monkeypatch.setattr(hf_constants, "HF_TOKEN_PATH", str(tmp_path / "no-login"))
    with silent_server() as silent:
        assert recorded_snapshots.cached_fetch(_settings(HF_ENDPOINT=silent.endpoint), "testorg/img2gray", "v1",
                                               patterns=patterns) is None
        assert len(silent.connections) == 1


def test_cached_fetch_follows_a_moved_revision(hf_env: Path, hub_repos: HubRepos) -> None:
    # The record says v1 was commit X; the Hub now answers another commit for v1: the record is not used.
    settings = _settings()
    patterns = ["build/torch-cpu/*"]
    snap = hub.fetch(settings.api(), settings, "testorg/img2gray", "v1", patterns=patterns)
    record = recorded_snapshots._record_path(settings, "testorg/img2gray", "v1", patterns)
    other = hub_repos.commits["v1.0.0"]
    assert other != snap.commit
    text = record.read_text().replace(snap.commit, other)
    record.write_text(text)
    other_root = snap.root.parent / other
    other_root.symlink_to(snap.root)  # every recorded file "cached" under the other commit too
    assert recorded_snapshots.cached_fetch(settings, "testorg/img2gray", "v1", patterns=patterns) is None


def test_cached_fetch_of_a_commit_asks_nothing(hf_env: Path, hub_repos: HubRepos) -> None:
    # A commit id's files never change: once recorded complete, the snapshot is served with the Hub unreachable,
    # online or offline, as huggingface_hub's hf_hub_download does for a cached file of a commit id.
    settings = _settings()
    patterns = ["build/torch-cpu/*"]
    commit = hub_repos.commits["v1.1.0"]
    assert recorded_snapshots.cached_fetch(settings, "testorg/img2gray", commit, patterns=patterns) is None  # nothing recorded yet
    snap = hub.fetch(settings.api(), settings, "testorg/img2gray", commit, patterns=patterns)
    assert snap.commit == commit
    for dead in (_settings(HF_ENDPOINT="http://127.0.0.1:9"), _settings(HF_ENDPOINT="http://127.0.0.1:9",
                                                                      HF_HUB_OFFLINE="1")):
        assert recorded_snapshots.cached_fetch(dead, "testorg/img2gray", commit, patterns=patterns) == snap
    # the same commit fetched as a tag is another record (a tag moves; it is asked for)
    assert recorded_snapshots.cached_fetch(settings, "testorg/img2gray", commit, patterns=["build/*"]) is None
    # a record whose commit is not the revision asked for, or that misses a file, is not used
    record = recorded_snapshots._record_path(settings, "testorg/img2gray", commit, patterns)
    text = record.read_text()
    record.write_text(text.replace(commit, hub_repos.commits["v1.0.0"]))
    assert recorded_snapshots.cached_fetch(settings, "testorg/img2gray", commit, patterns=patterns) is None
    record.write_text(text)
    victim = next(p for p in snap.root.rglob("*") if p.is_file())
    victim.unlink()
    assert recorded_snapshots.cached_fetch(settings, "testorg/img2gray", commit, patterns=patterns) is None
