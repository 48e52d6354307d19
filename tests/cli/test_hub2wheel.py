"""``python -m tools.hub2wheel`` (``tools.cli.hub2wheel.main``) end to end: exit codes, stdout and stderr for local
and olah-served repositories, both layouts, bad input and kernels.lock, and the produced wheels installed by name with
pip into fresh venvs and run on the CPU. The library it drives is tested in tests/kernelwheel/ (test_convert.py,
test_layout.py, test_digests.py, test_selection.py)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from packaging.utils import parse_wheel_filename

from kernelwheel.cli.hub2wheel import main
from kernelwheel.format.lockfile import KernelLock, VariantLock, dump_lockfile, variant_hash
from kernelwheel.wheels.wheel_reader import read_wheel
from tests.helpers import kernel_repos
from tests.helpers.hub_fixtures import HubRepos, olah_server, pip_install_by_name
from tests.helpers.repo import REPO_ROOT
from tests.helpers.servers import drip_server
from tests.helpers.signals import communicate_after_signal, deliverable_stop_signals
from tests.helpers.venvs import fresh_venv, package_farm

CPU_VARIANT = "torch213-cxx11-cpu-x86_64-linux"
RUN_OP = (
    "import torch, img2gray; x = torch.rand(2, 3, 4, 5); y = img2gray.img2gray(x);"
    "ref = (x * torch.tensor([0.299, 0.587, 0.114]).view(3, 1, 1)).sum(-3, keepdim=True);"
    "torch.testing.assert_close(y, ref); print(img2gray.__file__)"
)


# olah serves no organisation overviews, so no publisher is trusted there: Hub runs opt in, as kernels users do.
TRUST = ["--trust-remote-code"]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, [line for line in out.splitlines() if line], err


def _names(paths: list[str]) -> set[str]:
    return {Path(p).name for p in paths}


def test_help_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--find-links wheelhouse" in out
    # the install hint keeps the user's torch: every pip line pins it (docs/private-index.md's rule)
    pip_lines = [line for line in out.splitlines() if line.strip().startswith("pip install")]
    assert pip_lines and all('"torch==$(python -c' in line for line in pip_lines)


def test_flat_local(flat_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run([str(flat_repo), "--out", str(tmp_path)], capsys)
    assert rc == 0
    assert _names(out) == kernel_repos.FLAT_WHEELS
    assert "skipped torch213-metal-aarch64-darwin: OS 'darwin'" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(_names(out))  # nothing partial left

    cpu = read_wheel(tmp_path / "img2gray_cpu-1+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl")
    name, version, _, _tags = parse_wheel_filename(cpu.name.filename)
    assert cpu.metadata["version"] == str(version) == "1+torch2.13"  # METADATA == filename (the old bug)
    assert cpu.metadata["name"] == name == "img2gray-cpu"
    assert cpu.metadata["requires_dist"] == ["torch==2.13.*"]
    assert cpu.metadata["requires_python"] == ">=3.9"
    assert {f.split("/")[0] for f in cpu.files if ".dist-info/" not in f} == {"img2gray"}
    assert "img2gray/_img2gray_cpu_abc1234.abi3.so" in cpu.files and "img2gray/metadata.json" in cpu.files
    stable = read_wheel(tmp_path / "img2gray_cu130-1-cp39-abi3-manylinux_2_17_x86_64.whl")
    assert stable.metadata["requires_dist"] == ["torch>=2.10"]
    tvm = read_wheel(tmp_path / "img2gray_tvm_ffi_cu130-1+tvmffi2.13-cp39-abi3-manylinux_2_17_x86_64.whl")
    assert tvm.metadata["name"] == "img2gray-tvm-ffi-cu130"
    assert tvm.metadata["requires_dist"] == ["apache-tvm-ffi==2.13.*"]  # no torch: it loads through tvm-ffi
    noarch = read_wheel(tmp_path / "img2gray-1-py3-none-any.whl")
    assert noarch.root_is_purelib and noarch.metadata["requires_dist"] == ["torch"]


def test_reproducible(flat_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run([str(flat_repo), "--out", str(tmp_path / "a"), "--variant", "*-cpu-*"], capsys)
    _run([str(flat_repo), "--out", str(tmp_path / "b"), "--variant", "*-cpu-*"], capsys)
    a, b = sorted((tmp_path / "a").iterdir()), sorted((tmp_path / "b").iterdir())
    assert [p.name for p in a] == [p.name for p in b] and len(a) == 1
    assert a[0].read_bytes() == b[0].read_bytes()


def test_variant_wheels_are_opt_in_and_printed_after_the_wheels(flat_repo: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run([str(flat_repo), "--out", str(tmp_path), "--variant", "torch*-cpu-*", "--variant-wheels"],
                        capsys)
    assert rc == 0
    assert [Path(p).name for p in out] == ["img2gray_cpu-1+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl",
                                           "img2gray-1-cp39-abi3-manylinux_2_17_x86_64-cpu_torch213.whl"]
    assert "1 wheel(s) written, 1 variant wheel(s), " in err and "(variant wheel, experimental)" in err
    assert "--variant-wheels" in subprocess.run([sys.executable, "-m", "tools.hub2wheel", "--help"], cwd=REPO_ROOT,
                                                capture_output=True, text=True, check=True).stdout


def test_nested_local(nested_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run([str(nested_repo), "--out", str(tmp_path), "--kernel-version", "0.1.0"], capsys)
    assert rc == 0, err
    assert _names(out) == {
        "img2gray-0.1.0-py3-none-any.whl",
        "img2gray_cu128-0.1.0+torch2.9-cp39-abi3-manylinux_2_17_x86_64.whl",
        "img2gray_cpu-0.1.0+torch2.10-cp39-abi3-manylinux_2_17_x86_64.whl",  # torch210 is 2.10
    }
    wheel = read_wheel(tmp_path / "img2gray_cu128-0.1.0+torch2.9-cp39-abi3-manylinux_2_17_x86_64.whl")
    assert sorted(f for f in wheel.files if ".dist-info" not in f) == [
        "img2gray/__init__.py", "img2gray/_img2gray_abc1234.abi3.so", "img2gray/_ops.py"]
    # no version anywhere → a precise per-variant reason, exit 1
    rc, out, err = _run([str(nested_repo), "--out", str(tmp_path / "none")], capsys)
    assert rc == 1 and not out and "pass --kernel-version" in err


@pytest.fixture
def bad_repo(tmp_path: Path, so_cache: Path) -> Path:
    build = tmp_path / "bad" / "build"
    # digest lists a path that escapes the variant
    v = kernel_repos.flat_variant(build, "torch213-cxx11-cpu-x86_64-linux", so_cache)
    meta = json.loads((v / "metadata.json").read_text())
    meta["digest"]["files"]["../../etc/passwd"] = meta["digest"]["files"].pop("_ops.py")
    (v / "metadata.json").write_text(json.dumps(meta))
    # absolute path in the digest
    v = kernel_repos.flat_variant(build, "torch212-cxx11-cpu-x86_64-linux", so_cache)
    meta = json.loads((v / "metadata.json").read_text())
    meta["digest"]["files"]["/etc/passwd"] = "AAAA"
    (v / "metadata.json").write_text(json.dumps(meta))
    # symlink outside the variant
    v = kernel_repos.flat_variant(build, "torch213-cxx11-cu130-x86_64-linux", so_cache, with_digest=False)
    (v / "secrets.txt").symlink_to("/etc/hostname")
    # .so that is not ELF
    v = kernel_repos.flat_variant(build, "torch212-cxx11-cu130-x86_64-linux", so_cache, with_digest=False)
    next(v.glob("*.so")).write_bytes(b"not an elf at all")
    # no Python package
    (build / "torch211-cxx11-cu130-x86_64-linux" / "lib").mkdir(parents=True)
    (build / "torch211-cxx11-cu130-x86_64-linux" / "lib" / "x.txt").write_text("x")
    # digest mismatch
    v = kernel_repos.flat_variant(build, "torch210-cxx11-cu130-x86_64-linux", so_cache)
    (v / "_ops.py").write_text("import os  # tampered\n")
    # unparseable name
    (build / "torch2x-cu130").mkdir()
    return tmp_path / "bad"


def test_bad_input(bad_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run([str(bad_repo), "--out", str(tmp_path / "out")], capsys)
    assert rc == 1 and out == []
    reasons = {line.split(":", 1)[0].removeprefix("skipped "): line
               for line in err.splitlines() if line.startswith("skipped")}
    assert "path traversal" in reasons["torch213-cxx11-cpu-x86_64-linux"]
    assert "absolute path '/etc/passwd'" in reasons["torch212-cxx11-cpu-x86_64-linux"]
    assert "secrets.txt is a symlink pointing outside" in reasons["torch213-cxx11-cu130-x86_64-linux"]
    assert "not an ELF file" in reasons["torch212-cxx11-cu130-x86_64-linux"]
    assert "no Python package" in reasons["torch211-cxx11-cu130-x86_64-linux"]
    assert "_ops.py does not match its sha256 digest" in reasons["torch210-cxx11-cu130-x86_64-linux"]
    assert "torch2x-cu130" in reasons
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_one_bad_variant_does_not_abort(flat_repo: Path, bad_repo: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    mixed = tmp_path / "mixed"
    shutil.copytree(bad_repo, mixed, symlinks=True)
    shutil.copytree(flat_repo / "build" / "torch-cpu", mixed / "build" / "torch-cpu")
    rc, out, err = _run([str(mixed), "--out", str(tmp_path / "out")], capsys)
    assert rc == 3 and _names(out) == {"img2gray-1-py3-none-any.whl"}  # 3: some converted, some failed
    assert "1 wheel(s) written, 7 variant(s) skipped (7 failed)" in err


def test_hub_version(hf_env: Path, hub_repos: HubRepos, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run([*TRUST, "testorg/img2gray", "--version", "1", "--variant", "torch21*-cpu-*", "--out", str(tmp_path)],
                        capsys)
    assert rc == 0, err
    assert f"tag v1.1.0 at {hub_repos.commits['v1.1.0']}" in err  # the resolved commit is printed
    assert _names(out) == {"img2gray_cpu-1.1.0+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl",
                           "img2gray_cpu-1.1.0+torch2.12-cp39-abi3-manylinux_2_17_x86_64.whl"}
    rc, out, err = _run([*TRUST, "testorg/img2gray-nested", "--revision", "v0.1.0", "--out", str(tmp_path / "n")], capsys)
    assert rc == 0, err
    assert "img2gray_cu128-0.1.0+torch2.9-cp39-abi3-manylinux_2_17_x86_64.whl" in _names(out)


def test_hub_errors(hf_env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                    monkeypatch: pytest.MonkeyPatch) -> None:
    rc, _, err = _run([*TRUST, "testorg/nope", "--version", "1", "--out", str(tmp_path)], capsys)
    assert rc == 1 and err.startswith("error: testorg/nope: no such kernel or model repository")
    rc, _, err = _run([*TRUST, "testorg/img2gray", "--revision", "v9", "--out", str(tmp_path)], capsys)
    assert rc == 1 and "no branch, tag or commit 'v9'" in err
    rc, _, err = _run([*TRUST, "testorg/img2gray", "--version", ">=5", "--out", str(tmp_path)], capsys)
    assert rc == 1 and "no version tag or branch matches '>=5'" in err
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc, _, err = _run([*TRUST, "testorg/img2gray", "--revision", "v1", "--out", str(tmp_path)], capsys)
    assert rc == 1 and "HF_HUB_OFFLINE is set" in err
    assert not list(tmp_path.glob("*.whl"))


def test_lock(hf_env: Path, hub_repos: HubRepos, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sha = hub_repos.commits["v1.0.0"]
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", str(hub_repos.mirrors / "models/testorg/img2gray"), str(checkout)],
                   check=True)
    subprocess.run(["git", "-C", str(checkout), "checkout", "-q", sha], check=True)
    locked = ["torch-cpu", CPU_VARIANT]
    lock = KernelLock("testorg/img2gray", sha, {v: VariantLock(variant_hash(checkout / "build" / v)) for v in locked})
    lock_path = tmp_path / "kernels.lock"
    lock_path.write_text(dump_lockfile([lock]))
    rc, out, err = _run([*TRUST, "--lock", str(lock_path), "--out", str(tmp_path / "wh")], capsys)
    assert rc == 0, err
    assert f"locked commit {sha}" in err
    assert _names(out) == {"img2gray-1.0.0-py3-none-any.whl",  # version from the tag at the locked commit
                           "img2gray_cpu-1.0.0+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl"}
    # a wrong hash: that variant is refused, the other still converts
    bad = KernelLock(lock.repo_id, sha, {**lock.variants, CPU_VARIANT: VariantLock("sha256-" + "0" * 64)})
    lock_path.write_text(dump_lockfile([bad]))
    rc, out, err = _run([*TRUST, "--lock", str(lock_path), "--out", str(tmp_path / "wh2")], capsys)
    assert rc == 3 and _names(out) == {"img2gray-1.0.0-py3-none-any.whl"}  # 3: some converted, some failed
    assert f"skipped {CPU_VARIANT}: testorg/img2gray@{sha[:12]} build/{CPU_VARIANT}: kernels.lock hash" in err


def test_pip_install_by_name_torch213(flat_repo: Path, torch213_venv: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The wheel is found *by name* from --find-links (where kernels to-wheel's wheels failed) and runs on CPU."""
    wheelhouse = tmp_path / "wheelhouse"
    rc, _, _ = _run([str(flat_repo), "--out", str(wheelhouse)], capsys)
    assert rc == 0
    result = pip_install_by_name(torch213_venv, wheelhouse, "img2gray-cpu")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Successfully installed img2gray-cpu-1+torch2.13" in result.stdout
    run = subprocess.run([str(torch213_venv / "bin" / "python"), "-c", RUN_OP], capture_output=True, text=True,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert str(torch213_venv) in run.stdout


@pytest.fixture
def real_extension_repo(classic_wheel: Path, tmp_path: Path) -> Path:
    """A flat-layout variant holding the real img2gray extension from make wheel's repaired classic wheel."""
    variant = tmp_path / "repo" / "build" / "torch214-cxx11-cu130-x86_64-linux"
    variant.mkdir(parents=True)
    with zipfile.ZipFile(classic_wheel) as zf:
        for info in zf.infolist():
            if info.filename.startswith("img2gray/") and not info.is_dir():
                target = variant / info.filename.removeprefix("img2gray/")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(info))
    return tmp_path / "repo"


def test_real_extension_installs_and_runs(real_extension_repo: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    wheelhouse = tmp_path / "wheelhouse"
    rc, out, err = _run([str(real_extension_repo), "--out", str(wheelhouse), "--kernel-version", "0.1.0",
                         "--dist-name", "img2gray"], capsys)
    assert rc == 0, err
    (wheel,) = out
    assert Path(wheel).name.startswith("img2gray_cu130-0.1.0+torch2.14-cp39-abi3-manylinux_2_")
    # A fresh venv that already has the matching torch: 2.14.1 and its dependencies, linked from the project's
    # .venv (only those, so pip sees no other img2gray), instead of a 5.5 GB reinstall.
    venv = fresh_venv(tmp_path / "venv", share_site_packages_of=package_farm(tmp_path / "torch-farm", "torch"))
    result = pip_install_by_name(venv, wheelhouse, "img2gray-cu130")
    assert result.returncode == 0, result.stdout + result.stderr
    run = subprocess.run([str(venv / "bin" / "python"), "-c",
                          "import torch, img2gray; x = torch.rand(8, 9, 3); y = img2gray.img2gray(x);"
                          "ref = x @ torch.tensor([0.299, 0.587, 0.114]);"
                          "torch.testing.assert_close(y.reshape(ref.shape), ref); print(img2gray.__file__)"],
                         capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONNOUSERSITE": "1"})
    assert run.returncode == 0, run.stderr
    assert str(venv) in run.stdout  # ours, not a copy installed in .venv


def test_untrusted_publisher_refused_before_download(hf_env: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(["testorg/img2gray", "--version", "1", "--out", str(tmp_path / "wh")], capsys)
    assert rc == 1 and not out
    assert err.startswith("error: testorg/img2gray: cannot check whether 'testorg' is a trusted kernel publisher")
    assert "--trust-repo testorg/img2gray" in err
    assert not list(hf_env.rglob("*.so")) and not (tmp_path / "wh").exists()  # nothing fetched, nothing written
    rc, out, err = _run(["testorg/img2gray", "--version", "1", "--variant", "torch-cpu", "--trust-repo",
                         "testorg/img2gray", "--out", str(tmp_path / "wh")], capsys)
    assert rc == 0, err
    assert _names(out) == {"img2gray-1.1.0-py3-none-any.whl"}


def test_version_from_revision(hf_env: Path, hub_repos: HubRepos, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A release tag at the commit names the version, whichever ref or commit id named it; a commit that no release
    tag points at gets <major>.<commit date>, so distinct builds of one API major never share a filename, and the
    same commit gives the same bytes again, offline too. (This test used to expect the v1 branch and the v1.0.0
    commit id to give date versions: one commit, two versions in one wheelhouse.)"""
    noarch = ["--variant", "torch-cpu"]
    rc, out, err = _run([*TRUST, "testorg/img2gray", "--revision", "v1", *noarch, "--out", str(tmp_path / "a")],
                        capsys)
    assert rc == 0, err
    assert _names(out) == {"img2gray-1.1.0-py3-none-any.whl"}  # branch v1 at the v1.1.0 commit: the tag's version
    rc, out, err = _run([*TRUST, "testorg/img2gray", "--revision", hub_repos.commits["v1.0.0"], *noarch,
                         "--out", str(tmp_path / "a")], capsys)
    assert rc == 0, err
    assert _names(out) == {"img2gray-1.0.0-py3-none-any.whl"}  # the commit id of v1.0.0: the tag's version
    v2 = ["--variant", "torch213-*"]
    rc, out, err = _run([*TRUST, "testorg/img2gray", "--revision", "v2", *v2, "--out", str(tmp_path / "a")], capsys)
    assert rc == 0, err
    dated = "img2gray_cpu-2.20260301.120000+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl"
    assert _names(out) == {dated}  # no release tag at the v2 commit: its date
    assert len(list((tmp_path / "a").glob("*.whl"))) == 3  # distinct builds, distinct filenames
    first = (tmp_path / "a" / dated).read_bytes()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc, out, err = _run([*TRUST, "testorg/img2gray", "--revision", "v2", *v2, "--out", str(tmp_path / "b")], capsys)
    assert rc == 0, err
    assert (tmp_path / "b" / dated).read_bytes() == first
    rc, out, err = _run([*TRUST, "testorg/img2gray", "--revision", "v1", *noarch, "--out", str(tmp_path / "b")],
                        capsys)
    assert rc == 0 and _names(out) == {"img2gray-1.1.0-py3-none-any.whl"}, err
    rc, out, err = _run([*TRUST, "testorg/img2gray", "--revision", "v2", *noarch, "--variant", "torch213-*",
                         "--kernel-version", "2.0.1", "--out", str(tmp_path / "c")], capsys)
    assert rc == 0 and _names(out) == {"img2gray_cpu-2.0.1+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl"}, err


def _wheel_facts(folder: Path) -> dict[str, tuple[bytes, int, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_ino, p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def test_hub_rerun_rewrites_nothing_and_offline_gives_the_same_wheels(
        hf_env: Path, hub_repos: HubRepos, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    argv = [*TRUST, "testorg/img2gray", "--revision", "v1.0.0", "--out", str(tmp_path / "wh")]
    rc, out, err = _run(argv, capsys)
    assert rc == 0, err
    # stderr is not a terminal here: plain lines, one for the download, one per wheel
    fetched = [line for line in err.splitlines() if line.startswith("fetching testorg/img2gray@v1.0.0: ")]
    assert len(fetched) == 1 and " files, " in fetched[0] and "MiB downloaded in" in fetched[0], err
    first = _wheel_facts(tmp_path / "wh")
    rc, again, err = _run([*argv, "--jobs", "1"], capsys)
    assert rc == 0 and again == out, err
    assert f"0 wheel(s) written, {len(out)} already up to date" in err
    assert "0.0 MiB downloaded" in err  # everything came from the cache
    assert _wheel_facts(tmp_path / "wh") == first  # same bytes, inodes and mtimes
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc, _, err = _run([*argv[:-1], str(tmp_path / "offline")], capsys)
    assert rc == 0, err
    assert {n: d for n, (d, _, _) in _wheel_facts(tmp_path / "offline").items()} == {
        n: d for n, (d, _, _) in first.items()}


# Run in a fresh interpreter: which modules a rerun imports is the point (no HTTP stack, no HfApi).
_RERUN_PROBE = """
import sys
from kernelwheel.cli.hub2wheel import main
rc = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.partition(".")[0] in ("httpx", "httpx2", "httpcore", "httpcore2")
                or m in ("huggingface_hub.hf_api", "huggingface_hub.file_download", "huggingface_hub.errors"))
print("network modules:", loaded, file=sys.stderr)
sys.exit(rc)
"""


def test_hub_rerun_of_a_commit_asks_the_hub_nothing(
        hf_env: Path, hub_repos: HubRepos, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    commit = hub_repos.commits["v1.0.0"]
    argv = [*TRUST, "testorg/img2gray", "--revision", commit, "--out", str(tmp_path / "wh")]
    rc, out, err = _run(argv, capsys)
    assert rc == 0 and out, err
    first = _wheel_facts(tmp_path / "wh")
    # the Hub unreachable, and online: a commit's files cannot change, so nothing is asked and nothing rewritten
    rerun = subprocess.run([sys.executable, "-c", _RERUN_PROBE, *argv], cwd=REPO_ROOT, capture_output=True,
                           text=True, env={**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9"}, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert f"0 wheel(s) written, {len(out)} already up to date" in rerun.stderr
    assert "network modules: []" in rerun.stderr
    assert _wheel_facts(tmp_path / "wh") == first


def test_jobs_must_be_positive(flat_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([str(flat_repo), "--out", str(tmp_path), "--jobs", "0"])
    assert exit_info.value.code == 2 and "--jobs must be at least 1, got 0" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["org/"], "SOURCE: expected a Hub repository id of the form org/name, got 'org/': Repo id must use "
                   "alphanumeric chars, '-', '_' or '.'. The name cannot start or end with '-' or '.' and the "
                   "maximum length is 96 (and no directory of that name exists)"),
        (["a/b/c"], "SOURCE: expected a Hub repository id of the form org/name, got 'a/b/c' (and no directory of "
                    "that name exists)"),
        (["org/img2gray", "--trust-repo", "org/a--b"],
         "--trust-repo: expected a Hub repository id of the form org/name, got 'org/a--b': Cannot have -- or .. in "
         "repo_id"),
        (["org/img2gray", "--revision", ""], "--revision: expected a branch, tag or commit, got ''"),
        (["img2gray", "--lock", "kernels.lock"],
         "SOURCE (with --lock): expected a Hub repository id of the form org/name, got 'img2gray'"),
    ],
)
def test_bad_repo_ids_and_revisions_are_usage_errors_before_any_request(
        argv: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # no folder of these names here
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # a request would fail with exit 1, not a usage error
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--out", str(tmp_path / "wh")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.splitlines()[-1] == f"python -m tools.hub2wheel: error: {message}", err
    assert not (tmp_path / "wh").exists()


def test_ctrl_c_leaves_only_complete_wheels(tmp_path: Path, so_cache: Path) -> None:
    # Large, compressible (4 bits per byte) extensions: each wheel takes a while to deflate, so SIGINT lands
    # while wheels are being written.
    rng = random.Random(5)
    nibbles = bytes.maketrans(bytes(range(256)), bytes(b"0123456789abcdef"[i % 16] for i in range(256)))
    variants = ["torch213-cxx11-cu126-x86_64-linux", "torch213-cxx11-cu128-x86_64-linux",
                "torch213-cxx11-cu130-x86_64-linux"]
    for variant in variants:
        vdir = kernel_repos.flat_variant(tmp_path / "repo" / "build", variant, so_cache, with_digest=False)
        with next(vdir.glob("*.abi3.so")).open("ab") as fh:
            fh.write(rng.randbytes(48 << 20).translate(nibbles))
    out = tmp_path / "out"
    _interrupted_once([str(tmp_path / "repo"), "--out", str(out), "--jobs", "2"], os.environ,
                      lambda: out.is_dir() and any(p.name.endswith(".part") for p in out.iterdir()),
                      "no wheel was being written")
    left = sorted(out.iterdir())
    assert all(p.suffix == ".whl" for p in left), left  # no temporaries
    for wheel in left:  # whatever was finished is complete
        assert read_wheel(wheel).name.filename == wheel.name


def test_ctrl_c_while_downloading_stops_the_downloads_in_flight(hf_env: Path, tmp_path: Path, so_cache: Path) -> None:
    # Two variants of 48 MiB from an olah of this test's own (one process: ~20-27 MB/s), so SIGINT lands while both
    # are downloading in the background and nothing has been converted.
    repo = tmp_path / "mirrors" / "models" / "testorg" / "big"
    rng = random.Random(7)
    for variant in ("torch213-cxx11-cu126-x86_64-linux", "torch213-cxx11-cu128-x86_64-linux"):
        vdir = kernel_repos.flat_variant(repo / "build", variant, so_cache, with_digest=False)
        with next(vdir.glob("*.abi3.so")).open("ab") as fh:
            fh.write(rng.randbytes(48 << 20))
    kernel_repos.git_commit_all(repo, "big build", compress=False)
    out = tmp_path / "out"
    with olah_server(tmp_path / "mirrors", tmp_path) as endpoint:
        _interrupted_once(["testorg/big", *TRUST, "--out", str(out)], {**os.environ, "HF_ENDPOINT": endpoint},
                          lambda: _partial_bytes(hf_env / "models--testorg--big" / "blobs") > 1 << 20,  # a .so half in
                          "no download was under way")
    assert not out.exists() or not any(out.iterdir())  # nothing converted, nothing partial
    # the downloads in flight stopped midway rather than running to the end (huggingface_hub removes its partial file)
    assert not list(hf_env.glob("models--testorg--big/snapshots/*/build/*/*.abi3.so"))
    assert not list(hf_env.glob("models--testorg--big/blobs/*.incomplete"))


def _partial_bytes(blobs: Path) -> int:
    """The largest of huggingface_hub's partial downloads in ``blobs`` (0 when there is none)."""
    sizes = [0]
    for partial in blobs.glob("*.incomplete"):
        with contextlib.suppress(FileNotFoundError):  # finished (or stopped) while we looked
            sizes.append(partial.stat().st_size)
    return max(sizes)


def _interrupted_once(argv: list[str], env: Mapping[str, str], ready: Callable[[], bool], waiting_for: str) -> None:
    """Run the command, send SIGINT once ``ready()``, and check that it stopped as Ctrl-C should: exit 130, the
    one-line message last, no traceback."""
    proc = subprocess.Popen([sys.executable, "-m", "tools.hub2wheel", *argv], cwd=REPO_ROOT, env=dict(env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=deliverable_stop_signals)
    deadline = time.monotonic() + 120
    while not ready():
        assert proc.poll() is None and time.monotonic() < deadline, waiting_for
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = communicate_after_signal(proc, 120)
    assert proc.returncode == 130, err
    assert err.splitlines()[-1].startswith("error: interrupted; wheels already in") and "Traceback" not in err


def test_zip_layout_installs_as_files(so_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kernels 0.19's ``"build-layout": "zip"``: the archive's package is unpacked into the wheel beside the extension
    module; the installed metadata.json says "files" and its digest is kernel-builder's over the installed folder."""
    repo = tmp_path / "zipped"
    vdir = kernel_repos.zip_variant(repo / "build", CPU_VARIANT, so_cache)
    build_id = json.loads((vdir / "metadata.json").read_text())["id"]
    rc, out, err = _run([str(repo), "--out", str(tmp_path / "out")], capsys)
    assert rc == 0, err
    wheel = read_wheel(Path(out[0]))
    assert sorted(f for f in wheel.files if ".dist-info/" not in f) == [
        "img2gray/__init__.py", "img2gray/_img2gray_cpu_abc1234.abi3.so", "img2gray/_ops.py", "img2gray/metadata.json"]
    installed = tmp_path / "installed"
    for rel, data in wheel.files.items():
        if rel.startswith("img2gray/"):
            (installed / rel).parent.mkdir(parents=True, exist_ok=True)
            (installed / rel).write_bytes(data)
    metadata = json.loads((installed / "img2gray" / "metadata.json").read_text())
    assert metadata["build-layout"] == "files" and metadata["id"] == build_id
    (installed / "img2gray" / "metadata.json").unlink()  # kernels' hash covers every file but metadata.json
    assert metadata["digest"] == kernel_repos.kernel_builder_digest(installed / "img2gray")


def test_zip_layout_checks_the_original_digest_and_the_archive(so_cache: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    build = tmp_path / "bad-zip" / "build"
    tampered = kernel_repos.zip_variant(build, CPU_VARIANT, so_cache)
    archive = next(tampered.glob("*.zip"))
    with zipfile.ZipFile(archive, "a") as zf:
        zf.writestr("extra.py", "import os\n")  # after the digest was written
    kernel_repos.zip_variant(build, "torch212-cxx11-cpu-x86_64-linux", so_cache,
                             extra_members={"../escape.py": b"x"})
    rc, out, err = _run([str(tmp_path / "bad-zip"), "--out", str(tmp_path / "out")], capsys)
    assert rc == 1 and out == []
    assert f"{archive.name} does not match its sha256 digest" in err  # verified before unpacking
    assert "'../escape.py' leaves the variant directory (path traversal)" in err


def test_two_builds_with_one_id(so_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kernels 0.19.1 reuses a build whose id is already loaded when the digests match and refuses it otherwise:
    hub2wheel applies that rule across the variants of a run."""
    build = tmp_path / "ids" / "build"
    first = kernel_repos.flat_variant(build, CPU_VARIANT, so_cache)
    shutil.copytree(first, build / "torch212-cxx11-cpu-x86_64-linux")  # the same build under another torch: reused
    other = kernel_repos.flat_variant(build, "torch214-cxx11-cpu-x86_64-linux", so_cache)
    meta = json.loads((other / "metadata.json").read_text())
    meta["id"] = json.loads((first / "metadata.json").read_text())["id"]
    (other / "metadata.json").write_text(json.dumps(meta))  # a different build claiming the same id: refused
    rc, out, err = _run([str(tmp_path / "ids"), "--out", str(tmp_path / "out")], capsys)
    assert rc == 3 and len(out) == 2, err
    refusal = next(line for line in err.splitlines() if line.startswith("skipped torch214"))
    assert (f"has the same id {meta['id']!r} as build/torch212-cxx11-cpu-x86_64-linux, but their digests differ"
            in refusal)


@pytest.mark.parametrize("body", [False, True])
def test_a_dripping_hub_ends_at_the_deadline(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch, body: bool) -> None:
    """A Hub that sends a byte every 0.2 s (headers, or a body) never trips a per-read timeout; the whole answer has
    huggingface_hub's own timeouts (1 s here) as its deadline, and the command ends with one line."""
    from huggingface_hub import constants as hf_constants

    monkeypatch.setattr(hf_constants, "HF_HUB_ETAG_TIMEOUT", 1)
    monkeypatch.setattr(hf_constants, "HF_HUB_DOWNLOAD_TIMEOUT", 1)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with drip_server(0.2, body=body) as drip:
        monkeypatch.setenv("HF_ENDPOINT", drip.endpoint)
        start = time.monotonic()
        rc, out, err = _run([*TRUST, "testorg/img2gray", "--revision", "main", "--out", str(tmp_path / "wh")], capsys)
        elapsed = time.monotonic() - start
    assert rc == 1 and not out, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    assert elapsed < 60, err
    assert not (tmp_path / "wh").exists() or not list((tmp_path / "wh").iterdir())


def test_a_version_that_is_no_specifier_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*TRUST, "testorg/img2gray", "--version", "banana", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert "--version 'banana' is neither a major version (e.g. '1') nor a PEP 440 specifier" in err


def test_main_without_build_points_at_version(hf_env: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run([*TRUST, "testorg/img2gray", "--out", str(tmp_path / "wh")], capsys)
    assert rc == 1 and not out
    assert "testorg/img2gray@main has no build/ directory" in err and "--version <major>" in err, err
    assert "No files matched" not in err  # huggingface_hub's own warning stays out of the output
