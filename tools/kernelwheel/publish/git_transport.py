"""``GitTransport``: any git repository (path or URL) as the Hub repository, written from a temporary clone and
pushed with ``git push --atomic`` (branch and tag together, or neither)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from kernelwheel.io.console import print_step
from kernelwheel.io.errors import PublishFailed
from kernelwheel.publish.plan import BASE_BRANCH, Plan, RemoteRefs

_GIT_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX")


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    env["GIT_LFS_SKIP_SMUDGE"] = "1"  # the clone only replaces our folders: never download other LFS files
    return env


def _git(cwd: Path | None, *args: str, what: str) -> str:
    try:
        proc = subprocess.run(["git", *args], check=False, cwd=cwd, env=_git_env(), capture_output=True, text=True)
    except OSError as exc:  # no git on PATH
        raise PublishFailed(f"{what}: cannot run git ({exc.strerror or exc}); --git-remote needs git installed") \
            from None
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()
        raise PublishFailed(f"{what}: git {args[0]} failed (exit {proc.returncode}): {detail}")
    return proc.stdout


@dataclass(frozen=True)
class GitTransport:
    """Any git repository (path or URL) as the Hub repository; work happens in a temporary clone.

    Files are committed as plain git blobs (no Git LFS): for huggingface.co itself use ``HubTransport``.
    """

    url: str

    @classmethod
    def from_arg(cls, remote: str) -> GitTransport:
        path = Path(remote).expanduser()
        return cls(str(path.resolve()) if os.path.exists(path) else remote)  # os.path: False for a name too long

    @property
    def label(self) -> str:
        return f"git remote {self.url}"

    def refs(self, repo_id: str) -> RemoteRefs:
        out = _git(None, "ls-remote", "--heads", "--tags", self.url, what=f"{repo_id}: listing refs of {self.url}")
        branches: dict[str, str] = {}
        tags: dict[str, str] = {}
        for line in out.splitlines():
            commit, ref = line.split("\t", 1)
            if ref.startswith("refs/heads/"):
                branches[ref.removeprefix("refs/heads/")] = commit
            elif ref.startswith("refs/tags/") and not ref.endswith("^{}"):
                tags[ref.removeprefix("refs/tags/")] = commit
        return RemoteRefs(True, branches, tags)

    def push(self, plan: Plan, staging: Path, remote: RemoteRefs, console: Console) -> str:
        base = plan.branch if plan.branch in remote.branches else BASE_BRANCH
        what = f"{plan.repo_id} on {self.url}"
        with tempfile.TemporaryDirectory(prefix="kernelwheel-publish-clone-") as tmp:
            clone = Path(tmp) / "repo"
            # A repository with no branch at all (a fresh `git init --bare`) is cloned empty: the version branch
            # becomes its first commit. check_remote refused one that has branches but not the base.
            branch = ["--branch", base] if base in remote.branches else []
            _git(None, "clone", "--quiet", "--no-tags", "--single-branch", *branch, self.url, str(clone),
                 what=f"{what}: cloning {base if branch else 'the empty repository'}")
            _git(clone, "checkout", "--quiet", "-B", plan.branch, what=what)
            for v in plan.variants:
                _replace_folder(clone, f"build/{v.name}", staging / v.name, what)
            # --force: a .gitignore on the branch must not silently drop a verified file.
            _git(clone, "add", "--all", "--force", "--", *(f"build/{name}" for name in plan.names), what=what)
            _git(clone, *_identity(clone), "commit", "--quiet", "--no-verify", "--allow-empty",
                 "-m", plan.commit_message, what=f"{what}: committing")
            commit = _git(clone, "rev-parse", "HEAD", what=what).strip()
            _check_committed(clone, plan, staging, what)
            _git(clone, "tag", plan.tag, commit, what=what)
            print_step(console, f"* Pushing branch {plan.branch} and tag {plan.tag} ({commit[:12]}) atomically")
            # No --force: a tag that appeared meanwhile, or a branch that moved, rejects both refs together.
            _git(clone, "push", "--atomic", "--no-verify", "--quiet", "origin",
                 f"refs/heads/{plan.branch}:refs/heads/{plan.branch}", f"refs/tags/{plan.tag}:refs/tags/{plan.tag}",
                 what=f"{what}: pushing {plan.branch} and {plan.tag} (nothing was updated)")
        return commit


def _check_committed(clone: Path, plan: Plan, staging: Path, what: str) -> None:
    """The commit holds exactly the verified bytes (a ``.gitattributes`` LFS or eol filter could rewrite them)."""
    paths = [f"{v.name}/{rel}" for v in plan.variants for rel in v.files]
    # Hashed by the clone's git, so the ids use the remote's object format (SHA-1 or SHA-256).
    ids = _git(clone, "hash-object", "--no-filters", "--", *(str(staging / p) for p in paths), what=what).split()
    expected = {f"build/{path}": oid for path, oid in zip(paths, ids, strict=True)}
    listing = _git(clone, "ls-tree", "-r", "-z", "HEAD", "--", *(f"build/{n}" for n in plan.names), what=what)
    committed = {}
    for record in filter(None, listing.split("\0")):
        meta, path = record.split("\t", 1)
        committed[path] = meta.split()[2]
    for path in sorted(set(expected) | set(committed)):
        if expected.get(path) != committed.get(path):
            raise PublishFailed(
                f"{what}: the commit's {path} is not the verified file (missing, extra, or rewritten by a "
                ".gitattributes filter such as Git LFS or eol conversion); nothing was pushed. Publish to the Hub "
                "without --git-remote, or drop the filter for build/ in the remote's .gitattributes"
            )


def _replace_folder(clone: Path, rel: str, source: Path, what: str) -> None:
    _git(clone, "rm", "-r", "-q", "--ignore-unmatch", "--", rel, what=what)
    dest = clone / rel
    if dest.is_symlink() or dest.is_file():
        dest.unlink()
    elif dest.exists():
        shutil.rmtree(dest)  # untracked leftovers (ignored files)
    shutil.copytree(source, dest)


def _identity(clone: Path) -> list[str]:
    """``-c user.name/-c user.email`` when git has no identity configured (CI), else nothing."""
    proc = subprocess.run(["git", "config", "user.email"], check=False, cwd=clone, env=_git_env(),
                          capture_output=True, text=True)
    if proc.returncode == 0 and proc.stdout.strip():
        return []
    return ["-c", "user.name=tools.publish", "-c", "user.email=tools.publish@localhost"]
