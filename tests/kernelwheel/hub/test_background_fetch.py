"""kernelwheel.hub.background_fetch against olah on 127.0.0.1 with the real huggingface_hub client: the files and
cache state of a whole ``hub.fetch``, a variant at a time; a download that fails fails the variants that need it."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from kernelwheel.hub import background_fetch, sources
from kernelwheel.hub import client as hub
from kernelwheel.hub.recorded_snapshots import cached_fetch
from kernelwheel.hub.settings import HubSettings
from kernelwheel.hub.trust import TrustPolicy
from kernelwheel.io.console import make_console
from kernelwheel.io.errors import HubError, OfflineCacheMiss, RevisionNotFound
from kernelwheel.wheels.convert import Options, convert
from tests.helpers.hub_fixtures import HubRepos


def _settings(**overrides: str) -> HubSettings:
    return HubSettings.from_env({**os.environ, **overrides})


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_download_order_puts_metadata_then_noarch_variants_first() -> None:
    files = ["README.md", "build/torch213-cxx11-cpu-x86_64-linux/_ops.so", "build/torch-cpu/__init__.py",
             "build/torch213-cxx11-cpu-x86_64-linux/metadata.json", "build/torch-cpu/metadata.json",
             "build/torch-cpu/metadata.json.sigstore", "build/not-a-variant/x.py", "build/torch-cpu/sub/metadata.json"]
    assert background_fetch.download_order(files) == [
        "build/torch-cpu/metadata.json", "build/torch-cpu/metadata.json.sigstore",
        "build/torch213-cxx11-cpu-x86_64-linux/metadata.json",
        "build/torch-cpu/__init__.py", "build/torch-cpu/sub/metadata.json",
        "build/not-a-variant/x.py", "build/torch213-cxx11-cpu-x86_64-linux/_ops.so",
        "README.md",
    ]
    assert background_fetch.metadata_patterns(["build/*"]) == ["build/*/metadata.json", "build/*/metadata.json.sigstore"]
    assert background_fetch.metadata_patterns(["build/*-cpu-*/*"]) == \
        ["build/*-cpu-*/metadata.json", "build/*-cpu-*/metadata.json.sigstore"]


def test_a_variant_at_a_time_gives_what_a_whole_fetch_gives(hf_env: Path, hub_repos: HubRepos, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _settings()
    files_seen: list[tuple[int, int]] = []
    bytes_seen: list[tuple[int, int]] = []
    fetch = background_fetch.start(settings, "testorg/img2gray", "v1", ["build/*"],
                                   on_files=lambda d, t: files_seen.append((d, t)),
                                   on_bytes=lambda d, t: bytes_seen.append((d, t)))
    assert fetch is not None and fetch.snapshot.commit == hub_repos.commits["v1"]
    for variant in fetch.variants:
        fetch.wait(variant)
        folder = fetch.snapshot.root / "build" / variant
        assert folder.is_dir() and all(os.path.exists(p) for p in folder.rglob("*"))  # complete: no dangling link
    assert fetch.close()
    assert files_seen[-1] == (fetch.files_total, fetch.files_total)
    assert bytes_seen and bytes_seen[-1][0] == bytes_seen[-1][1] > 0
    # the same files as snapshot_download gives in a cache of its own
    whole = hub.fetch(settings.api(), _settings(HF_HUB_CACHE=str(tmp_path / "other")), "testorg/img2gray", "v1")
    assert _files(fetch.snapshot.root) == _files(whole.root)
    # recorded like a whole fetch: a rerun skips downloading; offline finds the ref and the complete snapshot
    assert cached_fetch(settings, "testorg/img2gray", "v1", patterns=["build/*"]) == fetch.snapshot
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # would fail if used
    offline = _settings(HF_HUB_OFFLINE="1")
    assert background_fetch.start(offline, "testorg/img2gray", "v1", ["build/*"]) is None
    assert hub.fetch(offline.api(), offline, "testorg/img2gray", "v1").commit == fetch.snapshot.commit


def test_an_unknown_revision_is_the_same_error_as_for_a_whole_fetch(hf_env: Path) -> None:
    with pytest.raises(RevisionNotFound, match="no branch, tag or commit 'v9'"):
        background_fetch.start(_settings(), "testorg/img2gray", "v9", ["build/*"])


def test_a_failed_download_fails_only_the_variant_that_waits_for_it(hf_env: Path, hub_repos: HubRepos) -> None:
    settings = _settings()
    listing = background_fetch.list_files(settings, "testorg/img2gray", "v1", ["build/*"])
    assert listing is not None
    so_variant = next(f.split("/")[1] for f in listing.files if f.split("/")[1].startswith("torch2"))
    missing = f"build/{so_variant}/gone.so"  # listed, but the server has no such file: a 404, not retried
    files_seen: list[tuple[int, int]] = []
    fetch = background_fetch.BackgroundFetch(settings, "testorg/img2gray", "v1", ["build/*"],
                                             replace(listing, files=(*listing.files, missing)),
                                             on_files=lambda d, t: files_seen.append((d, t)))
    with pytest.raises(HubError, match=rf"testorg/img2gray@{listing.commit[:12]}: {missing}: download from "
                                       rf"{hub_repos.endpoint} failed"):
        fetch.wait(so_variant)
    for variant in fetch.variants:
        if variant != so_variant:
            fetch.wait(variant)  # the others came
    assert not fetch.close()
    assert max(files_seen) == (len(listing.files), len(listing.files) + 1)  # the missing file is never "done"
    assert cached_fetch(settings, "testorg/img2gray", "v1", patterns=["build/*"]) is None  # nothing recorded


def test_offline_after_an_interrupted_fetch_is_a_miss_not_a_partial_snapshot(hf_env: Path, hub_repos: HubRepos,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    fetch = background_fetch.start(_settings(), "testorg/img2gray", "v1", ["build/*"])
    assert fetch is not None
    fetch.cancel()  # stopped at once: most files never came
    assert not fetch.close()
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    offline = _settings(HF_HUB_OFFLINE="1")
    # the ref and the commit's file list came with the metadata step, so the cache knows what is missing
    with pytest.raises(OfflineCacheMiss, match="holds only part of the files"):
        hub.fetch(offline.api(), offline, "testorg/img2gray", "v1")


def test_a_cold_hub_source_converts_while_fetching_and_a_rerun_reads_the_cache(hf_env: Path, hub_repos: HubRepos,
                                                                                tmp_path: Path) -> None:
    settings, console = _settings(), make_console()
    trust = TrustPolicy(trust_all=True)
    cold = sources.hub_source(settings, "testorg/img2gray", revision="v1.0.0", trust=trust, console=console)
    assert cold.arrivals is not None
    report = convert(cold, Options(out_dir=tmp_path / "out"), console)
    assert report.converted and not report.failed
    rerun = sources.hub_source(settings, "testorg/img2gray", revision="v1.0.0", trust=trust, console=console)
    assert rerun.arrivals is None and rerun.build_dir == cold.build_dir
    again = convert(rerun, Options(out_dir=tmp_path / "out"), console)
    assert sorted(again.unchanged) == sorted(v for v, _ in report.converted)  # byte for byte the same wheels


def test_a_build_without_metadata_comes_a_variant_at_a_time_without_a_warning(
        hf_env: Path, hub_repos: HubRepos, caplog: pytest.LogCaptureFixture) -> None:
    fetch = background_fetch.start(_settings(), "testorg/img2gray-nested", "v0.1.0", ["build/*"])
    assert fetch is not None and fetch.snapshot.commit == hub_repos.commits["nested"]
    fetch.wait_metadata()  # the older nested layout has none: nothing to wait for
    for variant in fetch.variants:
        fetch.wait(variant)
    assert fetch.close() and fetch.variants
    # huggingface_hub's warning for the metadata step (its logger writes to stderr) is not passed on
    assert not [r for r in caplog.records if "No files matched" in r.getMessage()]
