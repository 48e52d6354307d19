"""What a build records about its sources, from git: the commit, and the date every timestamp of the build takes.

reproducible-builds.org's convention: ``SOURCE_DATE_EPOCH`` (seconds since 1970, UTC) is the last change of the
sources, here the commit's committer date; gcc (``__DATE__``), scikit-build-core and auditwheel (the dates of the zip
entries) all read it. A value already set in the environment wins, as the convention asks. The commit is recorded in
the wheel (``img2gray/_build_info.json``, ``source_commit``) only when the tree is that commit, unmodified, so that
``python -m tools.cli.build_wheel --reproduce`` can rebuild exactly it.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from tools.build.errors import BuildFailed

COMMIT = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class SourceFacts:
    commit: str | None  # the tree is exactly this commit; None when modified or not a git checkout
    date: int | None  # SOURCE_DATE_EPOCH; None when neither the environment nor git gives one

    def environment(self) -> dict[str, str]:
        """The variables the build reads them from (cmake/build_info.cmake, and SOURCE_DATE_EPOCH's readers)."""
        env = {"IMG2GRAY_SOURCE_COMMIT": self.commit or ""}
        if self.date is not None:
            env["SOURCE_DATE_EPOCH"] = str(self.date)
        return env


def _git(repo: Path, *args: str) -> str | None:
    """``git -C repo args`` stdout, stripped; None when git is missing or fails."""
    try:
        result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    except OSError:
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def commit_date(repo: Path, commit: str) -> int | None:
    date = _git(repo, "log", "-1", "--format=%ct", commit, "--")
    return int(date) if date and date.isdigit() else None


def source_facts(source: Path) -> SourceFacts:
    """The facts for a build of ``source``: from the environment where set (``SOURCE_DATE_EPOCH``,
    ``IMG2GRAY_SOURCE_COMMIT``: the release workflow and ``--reproduce`` set both), else from git when ``source`` is
    the top of a work tree; a tree with uncommitted changes to tracked files records no commit."""
    env_date = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if env_date and not env_date.isdigit():
        raise BuildFailed(f"SOURCE_DATE_EPOCH must be a number of seconds since 1970; got {env_date!r:.40}")
    env_commit = os.environ.get("IMG2GRAY_SOURCE_COMMIT", "").strip()
    if env_commit and not COMMIT.fullmatch(env_commit):
        raise BuildFailed(f"IMG2GRAY_SOURCE_COMMIT must be a full 40-digit commit id; got {env_commit!r:.60}")
    commit: str | None = env_commit or None
    date: int | None = int(env_date) if env_date else None
    if commit is None or date is None:
        top = _git(source, "rev-parse", "--show-toplevel")
        if top is not None and Path(top).resolve() == source.resolve():
            head = _git(source, "rev-parse", "HEAD")
            if head is not None and COMMIT.fullmatch(head):
                if date is None:
                    date = commit_date(source, head)
                if commit is None and _git(source, "status", "--porcelain", "--untracked-files=no") == "":
                    commit = head
    return SourceFacts(commit, date)


def check_commit(repo: Path, commit: str) -> None:
    if _git(repo, "rev-parse", "--git-dir") is None:
        raise BuildFailed(f"{repo} is not a git repository (--repo names the clone that holds the commit)")
    if _git(repo, "cat-file", "-e", f"{commit}^{{commit}}") is None:
        raise BuildFailed(f"commit {commit} is not in the repository at {repo}: fetch it first")


def export_commit(repo: Path, commit: str, destination: Path) -> None:
    """The tracked files of ``commit`` (``git archive``) into ``destination``, a fresh folder: a clean checkout of it
    that shares nothing with the work tree."""
    check_commit(repo, commit)
    archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", commit], capture_output=True,
                             check=False)
    if archive.returncode != 0:
        message = archive.stderr.decode(errors="replace").strip().splitlines()
        raise BuildFailed(f"git archive {commit} failed: {message[-1] if message else archive.returncode}")
    destination.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(destination, filter="data")
