"""tools.publish against a git repository standing in for the Hub repository (what ``--git-remote`` targets).

The round trip serves that repository with olah and reads it back with the real huggingface_hub client, then
hub2wheel turns the published version into wheels and pip installs one into a fresh venv, where the op runs on the
CPU: source build/ → Hub (branch v0 + tag v0.1.0) → wheel → pip → op. The other tests read the remote with git.
The Hub transport (HfApi uploads) is not exercised: olah is read-only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import kernel_repos
import pytest
from conftest import (
    REPO_ROOT,
    fresh_venv,
    olah_server,
    package_farm,
    pip_install_by_name,
)
from huggingface_hub import HfApi, snapshot_download
from packaging.version import Version

from tools.errors import (
    DigestMismatch,
    InvalidBuildDir,
    InvalidReleaseVersion,
    PublishFailed,
    VersionExists,
)
from tools.publish import GitTransport, main, publish, release_version

CPU_VARIANT = "torch214-cxx11-cpu-x86_64-linux"  # the torch of .venv (2.14), so the wheel installs next to it
NOARCH = "torch-cpu"
OTHER_VARIANT = "torch213-cxx11-cpu-x86_64-linux"
RUN_OP = (
    "import torch, img2gray; x = torch.rand(2, 3, 4, 5); y = img2gray.img2gray(x);"
    "ref = (x * torch.tensor([0.299, 0.587, 0.114]).view(3, 1, 1)).sum(-3, keepdim=True);"
    "torch.testing.assert_close(y, ref); print(img2gray.__file__)"
)


# --- helpers ------------------------------------------------------------------------------------------------------


def make_remote(mirrors: Path) -> Path:
    """``mirrors/models/testorg/img2gray``: a git repo with a README commit on main, as olah serves it."""
    repo = mirrors / "models" / "testorg" / "img2gray"
    repo.mkdir(parents=True)
    (repo / "README.md").write_text("# img2gray\n")
    kernel_repos.git_commit_all(repo, "readme")
    return repo


def make_build(build: Path, so_cache: Path, *variants: str) -> Path:
    for variant in variants:
        kernel_repos.flat_variant(build, variant, so_cache, version=0)
    return build


def rehash(variant_dir: Path) -> None:
    """Rewrite ``metadata.json``'s digest after a deliberate change to the variant's files."""
    meta_path = variant_dir / "metadata.json"
    meta = json.loads(meta_path.read_text())
    files = {p.relative_to(variant_dir).as_posix(): p.read_bytes()
             for p in variant_dir.rglob("*") if p.is_file() and p != meta_path}
    meta["digest"] = kernel_repos.digest(files)
    meta_path.write_text(json.dumps(meta, indent=2))


def refs(repo: Path) -> dict[str, str]:
    out = subprocess.run(["git", "-C", str(repo), "for-each-ref", "--format=%(refname) %(objectname)"],
                         check=True, capture_output=True, text=True).stdout
    return dict(line.split(" ") for line in out.splitlines())


def tree(repo: Path, rev: str) -> set[str]:
    out = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "--name-only", rev],
                         check=True, capture_output=True, text=True).stdout
    return set(out.splitlines())


def show(repo: Path, rev: str, path: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), "show", f"{rev}:{path}"], check=True, capture_output=True).stdout


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
        [sys.executable, "-m", "tools.publish", "testorg/img2gray", "--version", "0.1.0", "--build-dir", str(build),
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
            [sys.executable, "-m", "tools.hub2wheel", "testorg/img2gray", "--version", ">=0.1,<0.2",
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


# --- versions on branch and tags ------------------------------------------------------------------------------------


def test_next_version_moves_branch_keeps_tag_and_other_variants(tmp_path: Path, so_cache: Path) -> None:
    remote = make_remote(tmp_path / "mirrors")
    first = make_build(tmp_path / "b1", so_cache, CPU_VARIANT, OTHER_VARIANT)
    (first / CPU_VARIANT / "notes.txt").write_text("only in 0.1.0\n")
    rehash(first / CPU_VARIANT)
    r1 = publish(first, "testorg/img2gray", Version("0.1.0"), GitTransport.from_arg(str(remote)))
    assert (r1.branch, r1.tag, r1.branch_created, r1.variants) == ("v0", "v0.1.0", True, (OTHER_VARIANT, CPU_VARIANT))

    second = make_build(tmp_path / "b2", so_cache, CPU_VARIANT)  # without OTHER_VARIANT and without notes.txt
    (second / CPU_VARIANT / "__init__.py").write_text('"""0.1.1"""\nfrom ._ops import ext\n')
    rehash(second / CPU_VARIANT)
    r2 = publish(second, "testorg/img2gray", Version("0.1.1"), GitTransport.from_arg(str(remote)))
    assert not r2.branch_created and r2.variants == (CPU_VARIANT,)

    after = refs(remote)
    assert after["refs/tags/v0.1.0"] == r1.commit  # the old tag did not move
    assert after["refs/tags/v0.1.1"] == after["refs/heads/v0"] == r2.commit
    parent = subprocess.run(["git", "-C", str(remote), "rev-parse", f"{r2.commit}^"], check=True,
                            capture_output=True, text=True).stdout.strip()
    assert parent == r1.commit  # a fast-forward: v0's history keeps 0.1.0
    files = tree(remote, "v0")
    assert f"build/{OTHER_VARIANT}/metadata.json" in files  # kept: on the branch, not in the new build
    assert f"build/{CPU_VARIANT}/notes.txt" not in files  # the published variant was replaced wholly
    assert f"build/{CPU_VARIANT}/notes.txt" in tree(remote, "v0.1.0")
    assert show(remote, "v0", f"build/{CPU_VARIANT}/__init__.py").startswith(b'"""0.1.1"""')
    old_init = (first / CPU_VARIANT / "__init__.py").read_bytes()
    assert show(remote, "v0.1.0", f"build/{CPU_VARIANT}/__init__.py") == old_init


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


def test_push_is_atomic(tmp_path: Path, so_cache: Path) -> None:
    """The remote refuses only the tag (an update hook): with --atomic the branch is not created either."""
    remote = make_remote(tmp_path / "mirrors")
    hook = remote / ".git" / "hooks" / "update"
    hook.write_text('#!/bin/sh\ncase "$1" in refs/tags/*) echo "tags are frozen here" >&2; exit 1;; esac\n')
    hook.chmod(0o755)
    build = make_build(tmp_path / "build", so_cache, CPU_VARIANT)
    before = refs(remote)
    with pytest.raises(PublishFailed, match=r"pushing v0 and v0.1.0 \(nothing was updated\): .*tags are frozen here"):
        publish(build, "testorg/img2gray", Version("0.1.0"), GitTransport(str(remote)))
    assert refs(remote) == before


def test_rewriting_gitattributes_is_caught_before_the_push(tmp_path: Path, so_cache: Path) -> None:
    """A remote whose .gitattributes normalises line endings would publish other bytes than the digest covers."""
    remote = make_remote(tmp_path / "mirrors")
    (remote / ".gitattributes").write_text("* text=auto\n")
    kernel_repos.git_commit_all(remote, "normalise line endings")
    build = make_build(tmp_path / "build", so_cache, CPU_VARIANT)
    (build / CPU_VARIANT / "NOTES.txt").write_bytes(b"written on Windows\r\n")
    rehash(build / CPU_VARIANT)
    before = refs(remote)
    with pytest.raises(PublishFailed, match=f"the commit's build/{CPU_VARIANT}/NOTES.txt is not the verified file"):
        publish(build, "testorg/img2gray", Version("0.1.0"), GitTransport(str(remote)))
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
    if case != "missing":
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


def test_release_version() -> None:
    assert str(release_version("v0.1.0")) == "0.1.0"  # PEP 440 allows the v; the tag is written normalised
    assert release_version(Version("1.2")) == Version("1.2")
    for text in ("1!1.0", "1.0.post1", "1.0.dev0", "1.0+local"):
        with pytest.raises(InvalidReleaseVersion):
            release_version(text)


def test_library_errors_are_typed(tmp_path: Path, so_cache: Path) -> None:
    remote = make_remote(tmp_path / "mirrors")
    build = make_build(tmp_path / "build", so_cache, CPU_VARIANT)
    (build / CPU_VARIANT / "__init__.py").write_text("tampered = True\n")
    with pytest.raises(DigestMismatch):
        publish(build, "testorg/img2gray", Version("0.1.0"), GitTransport(str(remote)))
    with pytest.raises(InvalidBuildDir):
        publish(tmp_path / "nowhere", "testorg/img2gray", Version("0.1.0"), GitTransport(str(remote)))
