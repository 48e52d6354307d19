"""kernelwheel.hub.client against olah on 127.0.0.1, driving the real huggingface_hub client through HF_ENDPOINT.

olah serves local git repositories as ``model`` repos only (no ``/api/kernels/``), so every call here also
exercises the kernel→model fallback. It answers 401 (not 404) for an unknown revision; client.py tells that apart
from an unknown repository by listing the refs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernelwheel.hub import client as hub
from kernelwheel.hub import versions
from kernelwheel.hub.settings import HubSettings
from kernelwheel.io.errors import OfflineCacheMiss, RepositoryNotFound, RevisionNotFound
from tests.helpers.hub_fixtures import HubRepos


def _settings(**overrides: str) -> HubSettings:
    return HubSettings.from_env({**os.environ, **overrides})


def test_fetch_and_offline(hf_env: Path, hub_repos: HubRepos, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _settings()
    seen: list[tuple[int, int]] = []
    snap = hub.fetch(settings.api(), settings, "testorg/img2gray", "v1",
                     patterns=["build/torch-cpu/*"], on_file=lambda f, i, n: seen.append((i, n)))
    assert snap.commit == hub_repos.commits["v1"]
    assert snap.root.is_relative_to(hf_env)
    init = snap.root / "build" / "torch-cpu" / "__init__.py"
    assert init.is_symlink() and Path(os.path.realpath(init)).parent == Path(os.path.realpath(snap.blobs))
    assert not (snap.root / "build" / "torch213-cxx11-cpu-x86_64-linux").exists()  # allow_patterns honoured
    # snapshot_download's file counter, passed on: it starts at 0 and ends with every matching file done
    files = sum(1 for p in (snap.root / "build" / "torch-cpu").rglob("*") if p.is_file())
    assert seen[0] == (0, files) and seen[-1] == (files, files) and files >= 2
    # offline: the same ref resolves from the cache, nothing is requested
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # would fail if used
    offline = _settings(HF_HUB_OFFLINE="1")
    assert hub.fetch(offline.api(), offline, "testorg/img2gray", "v1", patterns=["build/torch-cpu/*"]).commit == snap.commit
    # asking offline for more than was downloaded is a miss that says so, not a half-empty snapshot
    with pytest.raises(OfflineCacheMiss, match="holds only part of the files"):
        hub.fetch(offline.api(), offline, "testorg/img2gray", "v1")
    _, refs = versions.list_version_refs(offline.api(), offline, "testorg/img2gray")
    assert [r.name for r in refs] == ["v1"]


def test_offline_empty_cache(hf_env: Path) -> None:
    offline = _settings(HF_HUB_OFFLINE="1")
    with pytest.raises(OfflineCacheMiss, match="HF_HUB_OFFLINE is set"):
        hub.fetch(offline.api(), offline, "testorg/img2gray", "v1")
    with pytest.raises(OfflineCacheMiss, match="no refs"):
        versions.resolve_version(offline.api(), offline, "testorg/img2gray", "1")


def test_unknown_repo_and_revision(hf_env: Path) -> None:
    settings = _settings()
    with pytest.raises(RepositoryNotFound, match="testorg/nope"):
        hub.fetch(settings.api(), settings, "testorg/nope", "main")
    with pytest.raises(RepositoryNotFound):
        versions.resolve_version(settings.api(), settings, "testorg/nope", "1")
    with pytest.raises(RevisionNotFound, match=r"no branch, tag or commit 'v9'.*v1\.1\.0"):
        hub.fetch(settings.api(), settings, "testorg/img2gray", "v9")
