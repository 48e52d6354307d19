"""tools.hub against olah on 127.0.0.1, driving the real huggingface_hub client through HF_ENDPOINT.

olah serves local git repositories as ``model`` repos only (no ``/api/kernels/``), so every call here also
exercises the kernel→model fallback. It answers 401 (not 404) for an unknown revision; hub.py tells that apart
from an unknown repository by listing the refs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from huggingface_hub import constants as hf_constants
from packaging.version import Version

from kernelwheel.hub import client as hub
from kernelwheel.io.errors import HubError, OfflineCacheMiss, RepositoryNotFound, RevisionNotFound
from tests.helpers.hub_fixtures import HubRepos
from tests.helpers.repo import REPO_ROOT
from tests.helpers.servers import silent_server


def _settings(**overrides: str) -> hub.HubSettings:
    return hub.HubSettings.from_env({**os.environ, **overrides})


def test_version_refs_newest_first() -> None:
    refs = hub.version_refs([("v1.0.0", "a"), ("v1.1.0", "b"), ("release", "x")], [("v1", "c"), ("v2", "d"), ("main", "m")])
    assert [r.name for r in refs] == ["v2", "v1.1.0", "v1.0.0", "v1"]
    assert hub.pick_version(refs, "1", "org/x").name == "v1.1.0"
    assert hub.pick_version(refs, "<1.1", "org/x").name == "v1.0.0"
    with pytest.raises(RevisionNotFound, match=r"available: v2, v1\.1\.0"):
        hub.pick_version(refs, ">=3", "org/x")
    with pytest.raises(RevisionNotFound, match="neither a major"):
        hub.parse_version_spec("one point two")


def test_resolve_version(hf_env: Path, hub_repos: HubRepos) -> None:
    settings = _settings()
    repo_type, ref = hub.resolve_version(settings.api(), settings, "testorg/img2gray", "1")
    assert repo_type == "model"  # olah has no kernel repo type: fallback
    assert (ref.name, ref.commit, ref.version) == ("v1.1.0", hub_repos.commits["v1.1.0"], Version("1.1.0"))
    _, ref = hub.resolve_version(settings.api(), settings, "testorg/img2gray", "==1.0.*")
    assert ref.commit == hub_repos.commits["v1.0.0"]
    _, ref = hub.resolve_version(settings.api(), settings, "testorg/img2gray", "2")
    assert (ref.name, ref.kind) == ("v2", "branch")


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
    _, refs = hub.list_version_refs(offline.api(), offline, "testorg/img2gray")
    assert [r.name for r in refs] == ["v1"]


def test_offline_empty_cache(hf_env: Path) -> None:
    offline = _settings(HF_HUB_OFFLINE="1")
    with pytest.raises(OfflineCacheMiss, match="HF_HUB_OFFLINE is set"):
        hub.fetch(offline.api(), offline, "testorg/img2gray", "v1")
    with pytest.raises(OfflineCacheMiss, match="no refs"):
        hub.resolve_version(offline.api(), offline, "testorg/img2gray", "1")


def test_unknown_repo_and_revision(hf_env: Path) -> None:
    settings = _settings()
    with pytest.raises(RepositoryNotFound, match="testorg/nope"):
        hub.fetch(settings.api(), settings, "testorg/nope", "main")
    with pytest.raises(RepositoryNotFound):
        hub.resolve_version(settings.api(), settings, "testorg/nope", "1")
    with pytest.raises(RevisionNotFound, match=r"no branch, tag or commit 'v9'.*v1\.1\.0"):
        hub.fetch(settings.api(), settings, "testorg/img2gray", "v9")


@pytest.mark.parametrize(("spec", "admitted", "refused"), [
    ("1", "1.1.0", "2.0.0"), ("0.1.0", "0.1.0", "0.1.1"), ("v0.1.0".removeprefix("v"), "0.1.0", "0.2.0"),
    (">=0.1,<0.2", "0.1.5", "0.2.0"), ("==0.1.0", "0.1.0", "0.1.1"),
])
def test_version_spec_forms(spec: str, admitted: str, refused: str) -> None:
    specifier = hub.parse_version_spec(spec)
    assert specifier.contains(admitted) and not specifier.contains(refused)


def test_cached_fetch_needs_a_complete_recorded_snapshot(hf_env: Path, hub_repos: HubRepos,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _settings()
    patterns = ["build/torch-cpu/*"]
    assert hub.cached_fetch(settings, "testorg/img2gray", "v1", patterns=patterns) is None  # nothing recorded yet
    snap = hub.fetch(settings.api(), settings, "testorg/img2gray", "v1", patterns=patterns)
    # recorded by fetch: the same snapshot, resolved through the Hub (one HEAD per repo type), no snapshot_download
    assert hub.cached_fetch(settings, "testorg/img2gray", "v1", patterns=patterns) == snap
    # other patterns or another revision: not what was recorded
    assert hub.cached_fetch(settings, "testorg/img2gray", "v1") is None
    assert hub.cached_fetch(settings, "testorg/img2gray", "v1.1.0", patterns=patterns) is None
    # offline is fetch's (snapshot_download's own cache rules); a Hub that does not answer is too
    assert hub.cached_fetch(_settings(HF_HUB_OFFLINE="1"), "testorg/img2gray", "v1", patterns=patterns) is None
    assert hub.cached_fetch(_settings(HF_ENDPOINT="http://127.0.0.1:9"), "testorg/img2gray", "v1",
                            patterns=patterns) is None
    # a recorded file gone from the cache: fetch again
    victim = next(p for p in (snap.root / "build" / "torch-cpu").rglob("*") if p.is_file())
    victim.unlink()
    assert hub.cached_fetch(settings, "testorg/img2gray", "v1", patterns=patterns) is None
    assert hub.fetch(settings.api(), settings, "testorg/img2gray", "v1", patterns=patterns) == snap
    assert victim.is_file()


_RERUN_IN_A_FRESH_PROCESS = (
    "import sys; from kernelwheel.hub import client as hub; "
    "snap = hub.cached_fetch(hub.HubSettings.from_env(), 'testorg/img2gray', 'v1', patterns=['build/torch-cpu/*']); "
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
        assert hub.cached_fetch(_settings(HF_ENDPOINT=silent.endpoint), "testorg/img2gray", "v1",
                                patterns=patterns) is None
        assert len(silent.connections) == 1


def test_cached_fetch_follows_a_moved_revision(hf_env: Path, hub_repos: HubRepos) -> None:
    # The record says v1 was commit X; the Hub now answers another commit for v1: the record is not used.
    settings = _settings()
    patterns = ["build/torch-cpu/*"]
    snap = hub.fetch(settings.api(), settings, "testorg/img2gray", "v1", patterns=patterns)
    record = hub._record_path(settings, "testorg/img2gray", "v1", patterns)
    other = hub_repos.commits["v1.0.0"]
    assert other != snap.commit
    text = record.read_text().replace(snap.commit, other)
    record.write_text(text)
    other_root = snap.root.parent / other
    other_root.symlink_to(snap.root)  # every recorded file "cached" under the other commit too
    assert hub.cached_fetch(settings, "testorg/img2gray", "v1", patterns=patterns) is None


def test_cached_fetch_of_a_commit_asks_nothing(hf_env: Path, hub_repos: HubRepos) -> None:
    # A commit id's files never change: once recorded complete, the snapshot is served with the Hub unreachable,
    # online or offline, as huggingface_hub's hf_hub_download does for a cached file of a commit id.
    settings = _settings()
    patterns = ["build/torch-cpu/*"]
    commit = hub_repos.commits["v1.1.0"]
    assert hub.cached_fetch(settings, "testorg/img2gray", commit, patterns=patterns) is None  # nothing recorded yet
    snap = hub.fetch(settings.api(), settings, "testorg/img2gray", commit, patterns=patterns)
    assert snap.commit == commit
    for dead in (_settings(HF_ENDPOINT="http://127.0.0.1:9"), _settings(HF_ENDPOINT="http://127.0.0.1:9",
                                                                      HF_HUB_OFFLINE="1")):
        assert hub.cached_fetch(dead, "testorg/img2gray", commit, patterns=patterns) == snap
    # the same commit fetched as a tag is another record (a tag moves; it is asked for)
    assert hub.cached_fetch(settings, "testorg/img2gray", commit, patterns=["build/*"]) is None
    # a record whose commit is not the revision asked for, or that misses a file, is not used
    record = hub._record_path(settings, "testorg/img2gray", commit, patterns)
    text = record.read_text()
    record.write_text(text.replace(commit, hub_repos.commits["v1.0.0"]))
    assert hub.cached_fetch(settings, "testorg/img2gray", commit, patterns=patterns) is None
    record.write_text(text)
    victim = next(p for p in snap.root.rglob("*") if p.is_file())
    victim.unlink()
    assert hub.cached_fetch(settings, "testorg/img2gray", commit, patterns=patterns) is None


@pytest.mark.parametrize("repo_type", hub.REPO_TYPES)
@pytest.mark.parametrize("repo_id", ["testorg/img2gray", "kernels-community/activation", "a.b/c_d-1"])
def test_cache_folder_is_huggingface_hubs(repo_id: str, repo_type: str) -> None:
    from huggingface_hub.file_download import repo_folder_name

    settings = _settings()
    assert hub.cache_folder(settings, repo_id, repo_type) == \
        settings.cache_dir / repo_folder_name(repo_id=repo_id, repo_type=repo_type)


@pytest.mark.parametrize(("endpoint", "problem"), [
    ("http://[::1", "it cannot be parsed (Invalid IPv6 URL)"),
    ("hub.internal", "its scheme is missing (usable here: http:, https:)"),
    ("file:///srv/hub", "its scheme is file: (usable here: http:, https:)"),
    ("https://u:secret@hub.internal:99999/", "it cannot be parsed (Port out of range 0-65535)"),
])
def test_an_unusable_hf_endpoint_is_one_line(endpoint: str, problem: str) -> None:
    """huggingface_hub itself raises a bare ValueError on import for the first; hub2wheel reads it first."""
    with pytest.raises(HubError) as info:
        hub.HubSettings.from_env({"HF_ENDPOINT": endpoint})
    shown = endpoint.replace(":secret@", ":***@")
    assert str(info.value) == (f"HF_ENDPOINT {shown} is not usable: {problem}; expected http(s)://host[:port], the "
                               "Hub or a mirror of it")


def test_an_assets_cache_blocked_by_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "assets").write_text("a file where huggingface_hub's assets folder should be")
    settings = hub.HubSettings.from_env({"HF_HOME": str(tmp_path)})
    with pytest.raises(HubError) as info:
        hub.digest_cache_file(settings)
    # what huggingface_hub said, named by its exception type, on one line
    assert re.fullmatch(rf"huggingface_hub's assets cache {re.escape(str(tmp_path))}/assets \(HF_HOME, HF_ASSETS_CACHE\) "
                        r"cannot be used: (FileExistsError|NotADirectoryError|ValueError): [^\n]+", str(info.value))


def test_the_cli_refuses_a_malformed_hf_endpoint_before_huggingface_hub_reads_it(tmp_path: Path) -> None:
    for command in (["tools.hub2wheel", "org/img2gray", "--trust-remote-code", "--out", str(tmp_path / "wh")],
                    ["tools.cli.publish", "org/img2gray", "--version", "1.0.0", "--build-dir", str(tmp_path)]):
        result = subprocess.run([sys.executable, "-m", *command], cwd=REPO_ROOT, capture_output=True, text=True,
                                env={**os.environ, "HF_ENDPOINT": "http://[::1", "HF_HOME": str(tmp_path)}, timeout=120)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.splitlines() == ["error: HF_ENDPOINT http://[::1 is not usable: it cannot be parsed "
                                              "(Invalid IPv6 URL); expected http(s)://host[:port], the Hub or a mirror "
                                              "of it"]
