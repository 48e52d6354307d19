"""One commit, one wheel version, whatever route names it (``python -m tools.hub2wheel``, in process, against olah).

The routes to the v1.0.0 commit of testorg/img2gray: ``--version 1.0.0``, ``--revision v1.0.0``, ``--revision
<its commit id>`` and a ``kernels.lock`` pinning it; each online with a cold cache, then with that cache warm and the
Hub unreachable (``HF_ENDPOINT=http://127.0.0.1:9``) and offline (``HF_HUB_OFFLINE=1``). Every run must name the
wheel 1.0.0, or, where the version cannot be known, fail with the reason and write nothing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kernelwheel.cli.hub2wheel import main
from tests.helpers.hub_fixtures import HubRepos

TRUST = ["--trust-remote-code"]  # olah serves no organisation overviews: no publisher is trusted there
WHEEL = "img2gray-1.0.0-py3-none-any.whl"
DOWN = "http://127.0.0.1:9"  # nothing listens there: every connection is refused


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, set[str], str]:
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, {Path(line).name for line in out.splitlines() if line}, err


def _hub_warnings(err: str) -> list[str]:
    """The warning lines but the one for each unsigned variant (the test repositories sign nothing)."""
    return [line for line in err.splitlines() if line.startswith("warning:") and ".sigstore" not in line]


def _route(name: str, hub_repos: HubRepos, tmp_path: Path) -> list[str]:
    sha = hub_repos.commits["v1.0.0"]
    if name == "lock":
        lock = tmp_path / "kernels.lock"
        lock.write_text(json.dumps([{"dependency": {"repo-id": "testorg/img2gray", "version": 1},
                                     "lock": {"commit": sha}}]))  # kernels >= 0.17: every variant of the commit
        return ["--lock", str(lock)]
    ref = {"version": ["--version", "1.0.0"], "tag": ["--revision", "v1.0.0"], "commit": ["--revision", sha]}[name]
    return ["testorg/img2gray", *ref]


def _convert(route: list[str], out: Path, capsys: pytest.CaptureFixture[str],
             variants: tuple[str, ...] = ("--variant", "torch-cpu")) -> tuple[int, set[str], str]:
    return _run([*TRUST, *route, *variants, "--out", str(out)], capsys)


@pytest.mark.parametrize("route", ["version", "tag", "commit", "lock"])
def test_every_route_to_a_tagged_commit_gives_the_tag_version_online_down_and_offline(
        hf_env: Path, hub_repos: HubRepos, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, route: str) -> None:
    argv = _route(route, hub_repos, tmp_path)
    rc, names, err = _convert(argv, tmp_path / "online", capsys)  # cold cache, the Hub up
    assert rc == 0 and names == {WHEEL}, err
    monkeypatch.setenv("HF_ENDPOINT", DOWN)  # warm cache, the Hub down
    rc, names, err = _convert(argv, tmp_path / "down", capsys)
    assert rc == 0 and names == {WHEEL}, err
    assert len(_hub_warnings(err)) <= 1, err
    assert "Traceback" not in err and "Retrying" not in err
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # warm cache, offline
    rc, names, err = _convert(argv, tmp_path / "offline", capsys)
    assert rc == 0 and names == {WHEEL}, err
    assert (tmp_path / "down" / WHEEL).read_bytes() == (tmp_path / "online" / WHEEL).read_bytes() \
        == (tmp_path / "offline" / WHEEL).read_bytes()


@pytest.mark.parametrize("route", ["commit", "lock"])
def test_a_route_to_another_commit_of_the_tag_reads_the_listing_recorded_by_any_route(
        hf_env: Path, hub_repos: HubRepos, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, route: str) -> None:
    """The listing one route recorded (--version) tells another (a commit id, a lock) the tag, the Hub down. Every
    variant is fetched first: a lock asks for every variant of its commit."""
    rc, names, err = _convert(_route("version", hub_repos, tmp_path), tmp_path / "wh", capsys, ())
    assert rc == 0 and WHEEL in names, err
    monkeypatch.setenv("HF_ENDPOINT", DOWN)
    rc, names, err = _convert(_route(route, hub_repos, tmp_path), tmp_path / "wh", capsys)
    assert rc == 0 and names == {WHEEL}, err
    assert not [p.name for p in (tmp_path / "wh").iterdir() if p.name.startswith("img2gray-1.2")]  # no dated one


@pytest.mark.parametrize(("route", "setting"), [("commit", "down"), ("lock", "down"), ("commit", "offline"),
                                                ("lock", "offline")])
def test_a_version_that_cannot_be_known_is_an_error_with_the_reason(
        hf_env: Path, hub_repos: HubRepos, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, route: str, setting: str) -> None:
    """Files cached by ``--revision v1.0.0`` (which needs no tag listing), then the commit asked for with no listing
    recorded and the Hub unreachable: no date version is invented."""
    rc, names, err = _convert(_route("tag", hub_repos, tmp_path), tmp_path / "first", capsys, ())
    assert rc == 0 and WHEEL in names, err
    monkeypatch.setenv(*(("HF_ENDPOINT", DOWN) if setting == "down" else ("HF_HUB_OFFLINE", "1")))
    rc, names, err = _run([*TRUST, *_route(route, hub_repos, tmp_path), "--variant", "torch-cpu", "--out",
                           str(tmp_path / "wh")], capsys)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 1 and not names and len(errors) == 1, err
    assert "cannot tell whether a release tag points at this commit" in errors[0]
    assert ("Connection refused" if setting == "down" else "HF_HUB_OFFLINE is set") in errors[0]
    assert "no listing of its tags is recorded in" in errors[0] and "--kernel-version" in errors[0]
    assert not (tmp_path / "wh").exists() or not list((tmp_path / "wh").iterdir())
    rc, names, err = _run([*TRUST, *_route(route, hub_repos, tmp_path), "--variant", "torch-cpu",
                           "--kernel-version", "1.0.0", "--out", str(tmp_path / "wh")], capsys)
    assert rc == 0 and names == {WHEEL}, err  # a version given needs no listing


def test_version_with_the_hub_down_falls_back_to_the_cache_with_one_warning(
        hf_env: Path, hub_repos: HubRepos, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    rc, names, err = _convert(["testorg/img2gray", "--version", "1"], tmp_path / "online", capsys)
    assert rc == 0, err
    online = names
    monkeypatch.setenv("HF_ENDPOINT", DOWN)
    rc, names, err = _convert(["testorg/img2gray", "--version", "1"], tmp_path / "down", capsys)
    assert rc == 0 and names == online, err
    warnings = _hub_warnings(err)
    assert len(warnings) == 1 and "cannot list refs on http://127.0.0.1:9" in warnings[0], err
    assert "Connection refused" in warnings[0] and "files in the cache" in warnings[0]
    assert f"→ tag v1.1.0 at {hub_repos.commits['v1.1.0']}" in err
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc, names, err = _convert(["testorg/img2gray", "--version", "1"], tmp_path / "offline", capsys)
    assert rc == 0 and names == online, err
    assert f"→ tag v1.1.0 at {hub_repos.commits['v1.1.0']}" in err  # a tag is called a tag offline too
    assert not _hub_warnings(err)


def test_a_lock_with_a_cold_cache_and_the_hub_down_fails_at_once_in_one_line(
        hf_env: Path, hub_repos: HubRepos, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub retried the refused connection five times (23-47 s) before the one error."""
    monkeypatch.setenv("HF_ENDPOINT", DOWN)
    start = time.monotonic()
    rc, names, err = _convert(_route("lock", hub_repos, tmp_path), tmp_path / "wh", capsys)
    elapsed = time.monotonic() - start
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 1 and not names and len(errors) == 1, err
    assert "Connection refused" in errors[0], err
    assert "Retrying" not in err and "Traceback" not in err and not _hub_warnings(err)
    assert elapsed < 10, f"{elapsed:.1f} s: {err}"
