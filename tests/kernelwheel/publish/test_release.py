"""kernelwheel.publish (plan, git transport, release) against a git repository standing in for the Hub
repository (what ``--git-remote`` targets), read back with git.

The command (``python -m tools.cli.publish``) and the source → Hub → wheel → pip → op round trip are in
tests/cli/test_publish.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from packaging.version import Version

from kernelwheel.io.errors import (
    DigestMismatch,
    InvalidBuildDir,
    InvalidReleaseVersion,
    PublishFailed,
    RevisionNotFound,
)
from kernelwheel.publish.git_transport import GitTransport
from kernelwheel.publish.plan import release_version
from kernelwheel.publish.release import publish
from tests.helpers import kernel_repos
from tests.helpers.git_remotes import make_build, make_remote, refs, rehash, show, tree

CPU_VARIANT = "torch214-cxx11-cpu-x86_64-linux"
OTHER_VARIANT = "torch213-cxx11-cpu-x86_64-linux"


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


def test_a_fresh_bare_repository_gets_the_branch_as_its_first_commit(tmp_path: Path, so_cache: Path) -> None:
    """`git init --bare` has no main to start from: the version branch is the repository's root commit."""
    remote = tmp_path / "img2gray.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    build = make_build(tmp_path / "build", so_cache, CPU_VARIANT)
    result = publish(build, "testorg/img2gray", Version("0.1.0"), GitTransport.from_arg(str(remote)))
    assert result.branch_created and set(refs(remote)) == {"refs/heads/v0", "refs/tags/v0.1.0"}
    assert refs(remote)["refs/tags/v0.1.0"] == result.commit
    assert tree(remote, "v0") == {f"build/{CPU_VARIANT}/{name}" for name in
                                  (p.relative_to(build / CPU_VARIANT).as_posix()
                                   for p in (build / CPU_VARIANT).rglob("*") if p.is_file())}
    second = subprocess.run(["git", "-C", str(remote), "rev-list", "--count", "v0"], check=True,
                            capture_output=True, text=True).stdout.strip()
    assert second == "1"  # one root commit, no parent


def test_branches_without_main_are_still_refused(tmp_path: Path, so_cache: Path) -> None:
    remote = make_remote(tmp_path / "mirrors")
    kernel_repos.git(remote, "branch", "-m", "main", "trunk")
    build = make_build(tmp_path / "build", so_cache, CPU_VARIANT)
    with pytest.raises(RevisionNotFound, match=r"there is no main branch to create it from on .* \(branches: trunk\)"):
        publish(build, "testorg/img2gray", Version("0.1.0"), GitTransport.from_arg(str(remote)))


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


# --- typed errors and versions -------------------------------------------------------------------------------------


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
