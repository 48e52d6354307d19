"""``kernelwheel mirror`` against an olah Hub on 127.0.0.1 (its own git repositories, so a test can add a release):
the first run converts every release, a rerun nothing (and downloads nothing), a new tag alone, a failing kernel
leaves the others done, a killed run resumes, and three shards plus the index job equal one unsharded run. Through a
front that answers the Hub's list of an owner's models (olah has none, tests/helpers/hub_front.py) and can hold a
repository's downloads: an org entry converts every kernel listed, and concurrent runs of one wheelhouse are refused,
wait, or (the jobs of one split) run side by side."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelwheel.cli.mirror import main
from kernelwheel.mirror.plan import Shard
from tests.helpers import kernel_repos
from tests.helpers.hub_fixtures import olah_server
from tests.helpers.hub_front import Gate, hub_front
from tests.helpers.repo import REPO_ROOT

ORG = "mirrororg"
ORG_LISTED = "kernorg"
KERNELS = ("alpha", "beta", "gamma", "delta")
VARIANTS = ("torch213-cxx11-cpu-x86_64-linux", "torch213-cxx11-cu130-x86_64-linux")


def _release(repo: Path, tag: str, day: int) -> str:
    (repo / "CHANGELOG.md").write_text(f"{tag}\n")
    commit = kernel_repos.git_commit_all(repo, f"release {tag}", date=f"2026-01-{day:02d}T00:00:00Z")
    kernel_repos.git(repo, "tag", tag)
    return commit


@pytest.fixture(scope="module")
def mirror_hub(tmp_path_factory: pytest.TempPathFactory, so_cache: Path) -> Iterator[tuple[str, Path]]:
    """olah serving mirrororg/{alpha,beta,gamma,delta} and epsilon (which a test adds a release to), each with
    releases v0.1.0 and v0.2.0 of two variants."""
    base = tmp_path_factory.mktemp("mirror-olah")
    mirrors = base / "mirrors"
    for name in (*KERNELS, "epsilon"):
        repo = mirrors / "models" / ORG / name
        repo.mkdir(parents=True)
        for variant in VARIANTS:
            kernel_repos.flat_variant(repo / "build", variant, so_cache, name=name)
        _release(repo, "v0.1.0", 1)
        _release(repo, "v0.2.0", 2)
    # An organisation of two kernels and a model repository that is no kernel (no build/, no release tag).
    for name, tags in (("one", ("v0.1.0",)), ("two", ("v0.1.0", "v0.2.0"))):
        repo = mirrors / "models" / ORG_LISTED / name
        repo.mkdir(parents=True)
        kernel_repos.flat_variant(repo / "build", VARIANTS[0], so_cache, name=name)
        for day, tag in enumerate(tags, start=1):
            _release(repo, tag, day)
    notes = mirrors / "models" / ORG_LISTED / "notes"
    notes.mkdir(parents=True)
    (notes / "README.md").write_text("# Notes: a model card, no kernel\n")
    kernel_repos.git_commit_all(notes, "notes")
    with olah_server(mirrors, base) as endpoint:
        yield endpoint, mirrors


@pytest.fixture(scope="module")
def front(mirror_hub: tuple[str, Path]) -> Iterator[tuple[str, Gate]]:
    """The front before olah (lists an owner's models, holds a repository's downloads while a test asks)."""
    gate = Gate()
    try:
        with hub_front(*mirror_hub, gate) as endpoint:
            yield endpoint, gate
    finally:
        gate.opened.set()  # no request left waiting


@pytest.fixture
def gate(hub: Path, front: tuple[str, Gate], monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    """The environment pointed at the front (``hub``'s, else); its gate holds nothing until a test says so, and
    every request it held is let through when the test ends. Runs started as processes wait up to 120 s for an
    answer, as a held download would be cut off at huggingface_hub's 10 s."""
    endpoint, held = front
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "120")
    monkeypatch.setenv("HF_HUB_DOWNLOAD_TIMEOUT", "120")
    held.held.clear()
    held.opened.clear()
    held.reached.clear()
    try:
        yield held
    finally:
        held.held.clear()
        held.opened.set()


@pytest.fixture
def hub(mirror_hub: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The environment pointed at the mirror Hub with an empty cache; returns huggingface_hub's cache folder."""
    monkeypatch.setenv("HF_ENDPOINT", mirror_hub[0])
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    for name in ("HF_HUB_CACHE", "HF_HUB_OFFLINE", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "hf-home" / "hub"


def _config(folder: Path, kernels: str, **top: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = ['wheelhouse = "wheelhouse"', *(f"{key} = {json.dumps(value)}" for key, value in top.items())]
    path = folder / "mirror.toml"
    path.write_text("\n".join(lines) + "\n" + kernels)
    return path


def _kernel(name: str, *, trust: bool = True, versions: str | None = None) -> str:
    spec = f'versions = "{versions}"\n' if versions else ""
    return f'[[kernels]]\nrepo = "{ORG}/{name}"\ntrust = {str(trust).lower()}\n{spec}\n'


ALL = "".join(_kernel(name) for name in KERNELS)


def _run(config: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, object], str]:
    rc = main([str(config), "--json", *extra])
    out, err = capsys.readouterr()
    return rc, json.loads(out), err


def _by_kernel(summary: dict[str, object]) -> dict[str, dict[str, object]]:
    kernels = summary["kernels"]
    assert isinstance(kernels, list)
    return {entry["kernel"]: entry for entry in kernels}


def _files(folder: Path, pattern: str) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.glob(pattern)) if p.is_file()}


def test_first_run_converts_every_release_and_a_rerun_nothing(hub: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path / "site", _kernel("alpha") + _kernel("beta", versions=">=0.2"))
    rc, summary, err = _run(config, capsys)
    assert rc == 0, err
    kernels = _by_kernel(summary)
    assert kernels[f"{ORG}/alpha"]["converted"] == ["0.1.0", "0.2.0"]
    assert kernels[f"{ORG}/beta"]["converted"] == ["0.2.0"]
    house = tmp_path / "site" / "wheelhouse"
    wheels = sorted(p.name for p in house.glob("*.whl"))
    assert len(wheels) == 2 * 2 + 2 and "alpha_cpu-0.1.0+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl" in wheels
    index = summary["index"]
    assert isinstance(index, dict) and index["wheels"] == len(wheels)
    assert (house / "simple" / "alpha-cu130" / "index.html").is_file()

    blobs = sorted(str(p) for p in hub.rglob("*") if p.is_file())
    before = {p: p.stat().st_mtime_ns for p in house.rglob("*") if p.is_file() and ".mirror" not in p.parts}
    rc, summary, err = _run(config, capsys)
    assert rc == 0, err
    kernels = _by_kernel(summary)
    assert [(k["converted"], k["up_to_date"]) for k in kernels.values()] == [([], 2), ([], 1)]
    # Listings only: no file fetched into the Hub cache (the recorded listing aside), no wheel or page rewritten.
    assert sorted(str(p) for p in hub.rglob("*") if p.is_file()) == blobs
    after = {p: p.stat().st_mtime_ns for p in house.rglob("*") if p.is_file() and ".mirror" not in p.parts}
    changed = [str(p.relative_to(house)) for p in after if after[p] != before.get(p)]
    assert changed in ([], ["simple/.index-state.json"]), changed


def test_a_new_tag_alone_is_converted(hub: Path, mirror_hub: tuple[str, Path], tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path / "site", _kernel("epsilon"))
    assert _run(config, capsys)[0] == 0
    _release(mirror_hub[1] / "models" / ORG / "epsilon", "v0.3.0", 3)
    rc, summary, err = _run(config, capsys)
    assert rc == 0, err
    new = _by_kernel(summary)[f"{ORG}/epsilon"]
    assert (new["converted"], new["up_to_date"]) == (["0.3.0"], 2)
    assert sorted(new["wheels"]) == [  # type: ignore[arg-type]
        "epsilon_cpu-0.3.0+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl",
        "epsilon_cu130-0.3.0+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl",
    ]
    index = summary["index"]
    assert isinstance(index, dict) and sorted(index["added"]) == sorted(new["wheels"])  # type: ignore[arg-type]
    assert 2 <= index["hashed"] <= 6  # the new ones; the others again only if written within RACY_WINDOW_NS


def test_a_failing_kernel_does_not_stop_the_others(hub: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    kernels = (_kernel("alpha", trust=False) + '[[kernels]]\nrepo = "mirrororg/missing"\ntrust = true\n\n'
               + '[[kernels]]\norg = "mirrororg"\n\n' + _kernel("beta", versions="latest"))
    config = _config(tmp_path / "site", kernels)
    rc = main([str(config)])
    out, err = capsys.readouterr()
    assert rc == 1, err
    assert out.splitlines()[0].split() == ["kernel", "converted", "up", "to", "date", "skipped", "failed"]
    assert f"FAILED {ORG}/alpha 0.1.0: {ORG}/alpha: cannot check whether 'mirrororg' is a trusted kernel " in out
    assert f"FAILED {ORG}/missing: " in out and f"FAILED {ORG}/*: mirrororg: cannot list its repositories" in out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:] if not line.startswith(" ")}
    assert rows[f"{ORG}/beta"][0] == "0.2.0"
    assert "Indexed 2 wheels" in out
    assert "Traceback" not in err


_KILL_AT_SECOND_RECORD = """
import os, signal, sys
from kernelwheel.mirror import run, state
real, calls = state.save_state, []
def save(*args):
    real(*args)
    calls.append(1)
    if len(calls) == 2:
        os.kill(os.getpid(), signal.SIGKILL)  # two release tags recorded, the others not begun
run.save_state = save
from kernelwheel.cli.mirror import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_killed_run_resumes_after_the_last_recorded_release(hub: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path / "site", _kernel("alpha") + _kernel("delta"))
    killed = subprocess.run([sys.executable, "-c", _KILL_AT_SECOND_RECORD, str(config), "--json"], cwd=REPO_ROOT,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "tools")}, timeout=300,
                            capture_output=True)
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    recorded = json.loads((tmp_path / "site" / "wheelhouse" / ".mirror" / f"{ORG}--alpha.json").read_text())
    assert sorted(recorded["converted"]) == ["v0.1.0", "v0.2.0"]
    rc, summary, err = _run(config, capsys)
    assert rc == 0, err
    kernels = _by_kernel(summary)
    assert (kernels[f"{ORG}/alpha"]["converted"], kernels[f"{ORG}/alpha"]["up_to_date"]) == ([], 2)
    assert kernels[f"{ORG}/delta"]["converted"] == ["0.1.0", "0.2.0"]


def test_three_shards_and_the_index_job_equal_one_unsharded_run(hub: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    one = _config(tmp_path / "one", ALL)
    assert _run(one, capsys)[0] == 0
    shared = _config(tmp_path / "shared", ALL)
    converted: list[str] = []
    for k in (1, 2, 3):
        rc, summary, err = _run(shared, capsys, "--shard", f"{k}/3", "--no-index")
        assert rc == 0 and summary["index"] is None, err
        mine = list(_by_kernel(summary))
        assert all(Shard(k, 3).holds(repo) for repo in mine)
        converted += mine
    assert sorted(converted) == [f"{ORG}/{name}" for name in sorted(KERNELS)]  # each kernel by exactly one shard
    assert not (tmp_path / "shared" / "wheelhouse" / "simple").exists()
    from kernelwheel.cli import index as index_cli

    assert index_cli.main([str(tmp_path / "shared" / "wheelhouse")]) == 0
    capsys.readouterr()
    a, b = tmp_path / "one" / "wheelhouse", tmp_path / "shared" / "wheelhouse"
    assert _files(a, "*.whl") == _files(b, "*.whl") and len(_files(a, "*.whl")) == 4 * 2 * 2
    assert _files(a, "*.metadata") == _files(b, "*.metadata")
    assert _files(a, "simple/**/index.html") == _files(b, "simple/**/index.html")
    assert _files(a, ".mirror/*.json") == _files(b, ".mirror/*.json")


def test_usage_errors_exit_2_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path / "site", '[[kernels]]\nrepo = "mirrororg/alpha"\nversions = "~>1"\n')
    assert main([str(config)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (f'error: {config}: kernels[0].versions: expected a PEP 440 specifier such as ">=0.1", '
                           "or \"latest\", got '~>1'")
    with pytest.raises(SystemExit) as raised:
        main([str(config), "--shard", "4/3"])
    assert raised.value.code == 2
    assert "expected K/N with 1 <= K <= N (e.g. 2/3), got '4/3'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as raised:
        main([str(config), "--wait", "nan"])
    assert raised.value.code == 2
    assert "--wait: expected a number of seconds from 0 to 604800, got 'nan'" in capsys.readouterr().err


def test_the_configuration_docs_mirror_md_shows_is_read_as_described(tmp_path: Path) -> None:
    from kernelwheel.mirror.config import load_config

    page = (REPO_ROOT / "docs" / "mirror.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"^```toml\n(.*?)^```$", page, flags=re.M | re.S)
    path = tmp_path / "mirror.toml"
    path.write_text(block)
    config = load_config(path)
    assert config.wheelhouse == tmp_path / "wheelhouse" and config.jobs == 4 and config.require_signature is False
    relu, org = config.kernels
    assert (relu.repo, relu.versions, relu.variants, relu.trust) == ("kernels-community/relu", ">=0.1",
                                                                     ("*-cu130-*",), False)
    assert (org.org, org.trust) == ("my-org", True)


def test_an_org_entry_converts_the_releases_of_every_kernel_the_hub_lists(gate: Gate, tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path / "site", f'[[kernels]]\norg = "{ORG_LISTED}"\ntrust = true\n')
    rc, summary, err = _run(config, capsys)
    assert rc == 0, err
    kernels = _by_kernel(summary)
    assert list(kernels) == [f"{ORG_LISTED}/notes", f"{ORG_LISTED}/one", f"{ORG_LISTED}/two"]  # as listed, by id
    assert [(k["converted"], k["failed"]) for k in kernels.values()] == [
        ([], []),  # the model repository: listed too, no release tag, so nothing to convert and nothing failed
        (["0.1.0"], []),
        (["0.1.0", "0.2.0"], []),
    ]
    house = tmp_path / "site" / "wheelhouse"
    assert sorted(p.name for p in house.glob("*.whl")) == [
        "one_cpu-0.1.0+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl",
        "two_cpu-0.1.0+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl",
        "two_cpu-0.2.0+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl",
    ]
    index = summary["index"]
    assert isinstance(index, dict) and index["wheels"] == 3
    assert sorted(p.name for p in (house / ".mirror").glob("*.json")) == [f"{ORG_LISTED}--one.json",
                                                                          f"{ORG_LISTED}--two.json"]
    rc = main([str(config)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:] if not line.startswith(" ")}
    assert rows[f"{ORG_LISTED}/one"][:2] == ["-", "1"] and rows[f"{ORG_LISTED}/two"][:2] == ["-", "2"]


def _start(config: Path, *extra: str) -> subprocess.Popen[str]:
    """``python -m kernelwheel mirror CONFIG --json ...`` as its own process, in the test's environment."""
    return subprocess.Popen([sys.executable, "-m", "kernelwheel", "mirror", str(config), "--json", *extra],
                            cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "tools")}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(run: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = run.communicate(timeout=300)
    return run.returncode, out, err


def _holding(gate: Gate, config: Path, repo: str, *extra: str) -> subprocess.Popen[str]:
    """A run started and held at its first download of ``repo``'s files: its lock taken, nothing converted yet."""
    gate.held.add(repo)
    run = _start(config, *extra)
    if not gate.reached.wait(timeout=120):
        run.kill()
        pytest.fail(f"the run never asked for {repo}'s files: {_finish(run)[2][-2000:]}")
    return run


def test_a_second_run_is_refused_at_once_and_a_killed_runs_lock_frees_the_next(gate: Gate, tmp_path: Path) -> None:
    config = _config(tmp_path / "site", _kernel("alpha"))
    first = _holding(gate, config, f"{ORG}/alpha")
    started = time.monotonic()
    rc, out, err = _finish(_start(config))
    assert rc == 75 and out == "", err
    lock = tmp_path / "site" / "wheelhouse" / ".mirror" / "run.lock"
    (line,) = err.splitlines()
    assert line.startswith(f"error: {lock}: another mirror run is using this wheelhouse (pid {first.pid} on "
                           f"{socket.gethostname()}, kernelwheel mirror {config}, since 20")
    assert line.endswith("; nothing was done. Run again when it has ended, or pass --wait SECONDS to wait for it")
    assert time.monotonic() - started < 60  # refused, not waited: the first run is still held
    assert first.poll() is None and not list((tmp_path / "site" / "wheelhouse").glob("*.whl"))

    first.kill()  # SIGKILL: the lock file and its record stay, the kernel releases the lock itself
    assert first.wait() == -9 and lock.read_text()
    gate.held.clear()
    rc, out, err = _finish(_start(config))
    assert rc == 0, err
    assert _by_kernel(json.loads(out))[f"{ORG}/alpha"]["converted"] == ["0.1.0", "0.2.0"]


def test_wait_waits_for_the_run_in_progress_then_finds_its_work_done(gate: Gate, tmp_path: Path) -> None:
    config = _config(tmp_path / "site", _kernel("beta"))
    first = _holding(gate, config, f"{ORG}/beta")
    second = _start(config, "--wait", "240")
    time.sleep(3)
    assert second.poll() is None  # waiting for the lock (the first run cannot have ended: it is held)
    gate.opened.set()
    rc, out, err = _finish(first)
    assert rc == 0 and _by_kernel(json.loads(out))[f"{ORG}/beta"]["converted"] == ["0.1.0", "0.2.0"], err
    rc, out, err = _finish(second)
    assert rc == 0, err
    beta = _by_kernel(json.loads(out))[f"{ORG}/beta"]
    assert (beta["converted"], beta["up_to_date"]) == ([], 2)  # it ran after the first, and listed refs only


def test_the_jobs_of_one_split_run_side_by_side_and_others_are_refused(gate: Gate, tmp_path: Path) -> None:
    held, free = f"{ORG}/beta", f"{ORG}/alpha"
    assert Shard(1, 2).holds(held) and Shard(2, 2).holds(free)
    config = _config(tmp_path / "site", _kernel("alpha") + _kernel("beta"))
    first = _holding(gate, config, held, "--shard", "1/2", "--no-index")
    rc, out, err = _finish(_start(config, "--shard", "2/2", "--no-index"))  # the other share: at once, in parallel
    assert rc == 0, err
    assert list(_by_kernel(json.loads(out))) == [free] and first.poll() is None
    refusals = {
        "1/2": "another job of shard 1/2 is converting the same kernels",
        "1/3": "jobs of another split (--shard K/2) are using this wheelhouse",
        "": "the jobs of a sharded run (--shard) are using this wheelhouse",
    }
    for shard, why in refusals.items():
        rc, out, err = _finish(_start(config, *(["--shard", shard] if shard else [])))
        assert rc == 75 and why in err and f"(pid {first.pid} on " in err and len(err.splitlines()) == 1, err
    gate.opened.set()
    rc, out, err = _finish(first)
    assert rc == 0 and list(_by_kernel(json.loads(out))) == [held], err
    state = tmp_path / "site" / "wheelhouse" / ".mirror"
    assert sorted(p.name for p in state.glob("*.json")) == [f"{ORG}--alpha.json", f"{ORG}--beta.json"]


def test_variant_wheels_setting_writes_them_beside_the_wheels_and_the_index_links_them(
        hub: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`variant-wheels = true`: each converted tag's variant wheels too (hub2wheel --variant-wheels), recorded with
    the tag's wheels, and the index's variants.json for each version; a rerun writes nothing."""
    config = _config(tmp_path / "site", _kernel("gamma"), **{"variant-wheels": True})
    rc, summary, err = _run(config, capsys)
    assert rc == 0, err
    house = tmp_path / "site" / "wheelhouse"
    wheels = _by_kernel(summary)[f"{ORG}/gamma"]["wheels"]
    assert isinstance(wheels, list)
    variant_wheels = sorted(p.name for p in house.glob("gamma-*.whl"))
    assert variant_wheels == sorted(f"gamma-{version}-cp39-abi3-manylinux_2_17_x86_64-{label}.whl"
                                    for version in ("0.1.0", "0.2.0") for label in ("cpu_torch213", "cu130_torch213"))
    assert set(variant_wheels) <= set(wheels)  # recorded with the tag: the next run rewrites none of them
    for version in ("0.1.0", "0.2.0"):
        assert (house / f"gamma-{version}-variants.json").is_file()
        assert f"gamma-{version}-variants.json#sha256=" in (house / "simple" / "gamma" / "index.html").read_text()
    before = {p: p.stat().st_mtime_ns for p in house.glob("*.whl")}
    rc, summary, err = _run(config, capsys)
    assert rc == 0 and _by_kernel(summary)[f"{ORG}/gamma"]["converted"] == [], err
    assert {p: p.stat().st_mtime_ns for p in house.glob("*.whl")} == before
