"""``python -m tools.cli.publish`` against a git repository standing in for the Hub repository (``--git-remote``).

The round trip serves that repository with olah and reads it back with the real huggingface_hub client, then
hub2wheel turns the published version into wheels and pip installs one into a fresh venv, where the op runs on the
CPU: source build/ → Hub (branch v0 + tag v0.1.0) → wheel → pip → op. The other tests read the remote with git.
The Hub transport (HfApi uploads) is not exercised: olah is read-only. The library (kernelwheel.publish) is
tested in tests/kernelwheel/publish/test_release.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from huggingface_hub import HfApi, snapshot_download
from packaging.version import Version

from kernelwheel.cli.publish import main
from kernelwheel.io.errors import VersionExists
from kernelwheel.publish.git_transport import GitTransport
from kernelwheel.publish.release import publish
from tests.helpers import kernel_repos
from tests.helpers.git_remotes import make_build, make_remote, refs, rehash
from tests.helpers.hub_fixtures import olah_server, pip_install_by_name
from tests.helpers.repo import REPO_ROOT
from tests.helpers.venvs import fresh_venv, package_farm

CPU_VARIANT = "torch214-cxx11-cpu-x86_64-linux"  # the torch of .venv (2.14), so the wheel installs next to it
NOARCH = "torch-cpu"
RUN_OP = (
    "import torch, img2gray; x = torch.rand(2, 3, 4, 5); y = img2gray.img2gray(x);"
    "ref = (x * torch.tensor([0.299, 0.587, 0.114]).view(3, 1, 1)).sum(-3, keepdim=True);"
    "torch.testing.assert_close(y, ref); print(img2gray.__file__)"
)


# --- helpers ------------------------------------------------------------------------------------------------------


def cli(
    capsys: pytest.CaptureFixture[str], build: Path, remote: Path, version: str, *extra: str
) -> tuple[int, str, str]:
    rc = main(["testorg/img2gray", "--version", version, "--build-dir", str(build), "--git-remote", str(remote),
               *extra])
    out, err = capsys.readouterr()
    return rc, out, err


def published_files(build: Path) -> dict[str, bytes]:
    """What publishing ``build`` should put under ``build/`` on the Hub: no hidden entries, no bytecode."""
    return {
        f"build/{p.relative_to(build).as_posix()}": p.read_bytes()
        for p in build.rglob("*")
        if p.is_file() and not p.relative_to(build).parts[0].startswith(".") and "__pycache__" not in p.parts
    }


# --- source → Hub → wheel → pip → op --------------------------------------------------------------------------


@pytest.mark.needs_torch
@pytest.mark.slow
def test_round_trip_source_hub_wheel_pip(tmp_path: Path, so_cache: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "olah"
    mirrors = base / "mirrors"
    remote = make_remote(mirrors)
    main_before = refs(remote)["refs/heads/main"]
    build = make_build(tmp_path / "build", so_cache, CPU_VARIANT, NOARCH)
    (build / ".wheel-path").write_text("hidden files are ignored\n")
    (build / CPU_VARIANT / "__pycache__").mkdir()
    (build / CPU_VARIANT / "__pycache__" / "_ops.cpython-311.pyc").write_bytes(b"never published")

    proc = subprocess.run(
        [sys.executable, "-m", "tools.cli.publish", "testorg/img2gray", "--version", "0.1.0", "--build-dir", str(build),
         "--git-remote", str(remote)],
        check=False, cwd=REPO_ROOT, capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stderr
    (summary,) = proc.stdout.splitlines()
    commit = refs(remote)["refs/tags/v0.1.0"]
    assert summary == (f"published testorg/img2gray 0.1.0 to git remote {remote}: branch v0, tag v0.1.0, commit "
                       f"{commit}; 2 variants: {NOARCH}, {CPU_VARIANT}")
    assert f"✓ {CPU_VARIANT}  4 files" in proc.stderr  # the .pyc is not counted: never published
    assert "branch v0 (new, from main), tag v0.1.0 is free" in proc.stderr

    hf_home = tmp_path / "hf-home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    wheelhouse = tmp_path / "wheelhouse"
    with olah_server(mirrors, base) as endpoint:
        env.update(HF_ENDPOINT=endpoint, HF_HOME=str(hf_home))
        hub_refs = HfApi(endpoint=endpoint).list_repo_refs("testorg/img2gray")
        assert {t.name: t.target_commit for t in hub_refs.tags} == {"v0.1.0": commit}
        assert {b.name: b.target_commit for b in hub_refs.branches} == {"main": main_before, "v0": commit}
        snapshot = Path(snapshot_download("testorg/img2gray", revision="v0.1.0", endpoint=endpoint,
                                          cache_dir=hf_home / "hub"))
        got = {p.relative_to(snapshot).as_posix(): p.read_bytes() for p in snapshot.rglob("*") if p.is_file()}
        assert got == {"README.md": b"# img2gray\n", **published_files(build)}  # byte-identical, nothing else

        # The Hub transport's read half against the same server (olah is read-only: uploads cannot be tested).
        for key, value in (("HF_ENDPOINT", endpoint), ("HF_HOME", str(hf_home))):
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        assert main(["testorg/img2gray", "--version", "0.1.0", "--build-dir", str(build)]) == 1
        assert capsys.readouterr().err.splitlines()[-1].startswith(
            f"error: testorg/img2gray: tag v0.1.0 already exists on {endpoint} (model repo)")
        assert main(["testorg/img2gray", "--version", "0.2.0", "--build-dir", str(build), "--dry-run"]) == 0
        assert capsys.readouterr().out.startswith(
            f"dry run: would publish testorg/img2gray 0.2.0 to {endpoint} (model repo): branch v0, tag v0.2.0; "
            "2 variants")

        convert = subprocess.run(
            [sys.executable, "-m", "tools.hub2wheel", "testorg/img2gray", "--version", ">=0.1,<0.2", "--trust-remote-code",
             "--out", str(wheelhouse)],
            check=False, cwd=REPO_ROOT, capture_output=True, text=True, env=env,
        )
    assert convert.returncode == 0, convert.stderr
    assert f"--version >=0.1,<0.2 → tag v0.1.0 at {commit}" in convert.stderr
    assert sorted(p.name for p in wheelhouse.iterdir()) == [
        "img2gray-0.1.0-py3-none-any.whl",
        "img2gray_cpu-0.1.0+torch2.14-cp39-abi3-manylinux_2_17_x86_64.whl",
    ]

    # A fresh venv that sees only the project's torch 2.14 (and its dependencies), then pip by name, offline.
    venv = fresh_venv(tmp_path / "venv", share_site_packages_of=package_farm(tmp_path / "torch-farm", "torch"))
    result = pip_install_by_name(venv, wheelhouse, "img2gray-cpu")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Successfully installed img2gray-cpu-0.1.0+torch2.14" in result.stdout
    run = subprocess.run([str(venv / "bin" / "python"), "-c", RUN_OP], check=False, capture_output=True, text=True,
                         cwd=tmp_path, env={**os.environ, "PYTHONNOUSERSITE": "1"})
    assert run.returncode == 0, run.stderr
    assert str(venv) in run.stdout


# --- dry run ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("repo_id", "problem"), [
    ("img2gray", "got 'img2gray'"),
    ("org/a..b", "got 'org/a..b': Cannot have -- or .. in repo_id"),
    ("org/x.git", "got 'org/x.git': Repo_id cannot end by '.git'"),  # the old pattern let these two through
])
def test_a_bad_repository_id_is_a_usage_error(repo_id: str, problem: str, tmp_path: Path, so_cache: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    remote, build = make_remote(tmp_path / "mirrors"), tmp_path / "build"
    make_build(build, so_cache, CPU_VARIANT)
    before = refs(remote)
    with pytest.raises(SystemExit) as exit_info:
        main([repo_id, "--version", "0.1.0", "--build-dir", str(build), "--git-remote", str(remote)])
    err = capsys.readouterr().err.splitlines()[-1]
    assert exit_info.value.code == 2
    assert err == f"python -m tools.cli.publish: error: REPO_ID: expected a Hub repository id of the form org/name, {problem}"
    assert refs(remote) == before


def test_a_git_remote_without_git_installed_is_one_line(tmp_path: Path, so_cache: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    remote, build = make_remote(tmp_path / "mirrors"), tmp_path / "build"
    make_build(build, so_cache, CPU_VARIANT)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # was a FileNotFoundError traceback
    rc = main(["testorg/img2gray", "--version", "0.1.0", "--build-dir", str(build), "--git-remote", str(remote)])
    last = capsys.readouterr().err.splitlines()[-1]
    assert rc == 1 and last == (f"error: testorg/img2gray: listing refs of {remote}: cannot run git (No such file or "
                                "directory); --git-remote needs git installed")


def test_dry_run_writes_nothing(tmp_path: Path, so_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    remote = make_remote(tmp_path / "mirrors")
    build = make_build(tmp_path / "build", so_cache, CPU_VARIANT, NOARCH)
    before = refs(remote)
    rc, out, err = cli(capsys, build, remote, "0.1.0", "--dry-run")
    assert rc == 0, err
    assert out == (f"dry run: would publish testorg/img2gray 0.1.0 to git remote {remote}: branch v0 (new branch), "
                   f"tag v0.1.0; 2 variants: {NOARCH}, {CPU_VARIANT}\n")
    assert f"✓ {NOARCH}  2 files" in err
    assert refs(remote) == before


# --- refusals: a clear message, and the remote unchanged --------------------------------------------------------------


def test_existing_tag_is_refused(tmp_path: Path, so_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    remote = make_remote(tmp_path / "mirrors")
    build = make_build(tmp_path / "build", so_cache, CPU_VARIANT)
    assert cli(capsys, build, remote, "0.1.0")[0] == 0
    before = refs(remote)
    (build / CPU_VARIANT / "_ops.py").write_text("from . import _img2gray_cpu_abc1234 as ext  # changed\n")
    rehash(build / CPU_VARIANT)
    rc, out, err = cli(capsys, build, remote, "0.1.0")
    assert (rc, out) == (1, "")
    assert err.splitlines()[-1] == (
        f"error: testorg/img2gray: tag v0.1.0 already exists on git remote {remote} (commit "
        f"{before['refs/tags/v0.1.0'][:12]}); a published version is never moved: publish a new version (e.g. 0.1.1)"
    )
    assert refs(remote) == before
    with pytest.raises(VersionExists):
        publish(build, "testorg/img2gray", Version("0.1.0"), GitTransport(str(remote)))


REFUSALS = {  # case: (--version, start of the error line)
    "bad-version": ("0.1.x", "error: --version '0.1.x' is not a PEP 440 version (expected e.g. 0.1.0)"),
    "pre-release": ("0.2.0rc1", ("error: --version '0.2.0rc1' has a pre-release segment: only final releases (e.g. "
                                 "0.2.0) can be published")),
    "empty": ("0.1.0", "error: {build}: no build variants to publish (expected build/<variant>/ folders)"),
    "missing": ("0.1.0", "error: {build}: no such folder; build the variants first (or pass --build-dir)"),
    "a file": ("0.1.0", "error: {build}: is a file, not the folder of build variants; build the variants first (or "
                        "pass --build-dir)"),
    "non-variant-folder": ("0.1.0", "error: build/dist: not a build variant folder: variant 'dist': expected "),
    "stray-file": ("0.1.0", "error: build/chelsea-gray.png: not a build variant folder"),
    "tampered-so": ("0.1.0", (f"error: build/{CPU_VARIANT}: _img2gray_cpu_abc1234.abi3.so does not match its sha256 "
                              "digest in metadata.json")),
    "no-digest": ("0.1.0", f"error: build/{CPU_VARIANT}/metadata.json: no 'digest' of the variant's files"),
    "wrong-major": ("1.0.0", (f"error: build/{CPU_VARIANT}/metadata.json: version 0 (the kernel major) does not match "
                              "--version 1.0.0, which publishes to branch v1")),
    "two-problems": ("0.1.0", ("error: {build}: 2 entries cannot be published:\n  build/dist: not a build variant "
                               "folder: variant 'dist'")),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refusals_push_nothing(case: str, tmp_path: Path, so_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    version, message = REFUSALS[case]
    remote = make_remote(tmp_path / "mirrors")
    build = tmp_path / "build"
    if case == "a file":
        build.write_text("not a folder\n")
    elif case != "missing":
        build.mkdir()
        (build / ".wheel-path").write_text("hidden: ignored\n")
    if case in ("bad-version", "pre-release", "tampered-so", "no-digest", "wrong-major", "two-problems",
                "non-variant-folder", "stray-file"):
        make_build(build, so_cache, CPU_VARIANT)  # a good variant next to the bad entry: still nothing is pushed
    if case in ("non-variant-folder", "two-problems"):
        (build / "dist").mkdir()
    if case == "stray-file":
        (build / "chelsea-gray.png").write_bytes(b"\x89PNG")
    if case in ("tampered-so", "two-problems"):
        so = build / CPU_VARIANT / "_img2gray_cpu_abc1234.abi3.so"
        so.write_bytes(so.read_bytes() + b"\0")
    if case == "no-digest":
        kernel_repos.flat_variant(build, CPU_VARIANT, so_cache, version=0, with_digest=False)
    before = refs(remote)
    rc, out, err = cli(capsys, build, remote, version)
    assert (rc, out) == (1, "")
    assert err.startswith(message.format(build=build)), err
    assert refs(remote) == before
