"""Publish the ``build/<variant>/`` folders of a kernel to a Hub repository under a version: branch + tag.

``publish()`` is the library entry point; ``main(argv)`` is ``python -m tools.publish``. For ``--version 1.2.3`` one
commit lands on the version **branch** ``v1`` (created from ``main`` when missing) and the **tag** ``v1.2.3`` points
at that commit. The two ref schemes exist because the ``kernels`` library changed how it finds versions:

* kernels ≤ 0.11 took ``get_kernel(repo, version=">=1.2,<2")``: a PEP 440 specifier matched against ``v<X.Y.Z>``
  **tags** (``_versions.py``: ``list_repo_refs(...).tags`` parsed with ``packaging``; the newest match wins).
* kernels ≥ 0.12 takes ``get_kernel(repo, version=1)``: an integer major, i.e. the **branch** ``v1`` (string specs
  were deprecated in 0.12 and removed in 0.14; ≥ 0.15 requires a version or a revision).
* our ``tools.hub2wheel --version '>=1.2,<1.3'`` (through ``tools.hub``) reads both, and a tag wins over a branch.

Writing both keeps old clients, new clients and hub2wheel working, and a tag is never moved: publishing a version
whose tag exists is refused. The commit *replaces* each published variant folder wholly (files absent from the new
build are deleted, as ``kernels upload`` does with ``delete_patterns``) and keeps the variants already on the branch
that this build does not have.

Before anything is written every entry of the build folder is checked, and all problems are reported at once:

* hidden entries (``.wheel-path``) are ignored; any other entry must be a folder named in the kernel-builder grammar
  (``tools.variants.Variant.parse``);
* paths and symlinks stay inside the variant and ``metadata.json``'s per-file ``digest`` matches (the checks
  ``tools.hub2wheel`` uses); only the verified files, copied to a staging folder, are published (``__pycache__`` and
  ``*.pyc`` never are; ``metadata.json.sigstore`` is kept);
* there is a Python package (``__init__.py``), and an integer ``metadata.json`` ``version`` equals the major.

Two transports: ``GitTransport`` (``--git-remote``) treats any git repository as the Hub repository (a Hub repo is one)
and works in a temporary clone, pushing branch and tag with ``git push --atomic``; ``HubTransport`` (the default) uses
``huggingface_hub.HfApi`` (``upload_folder`` with ``allow_patterns``/``delete_patterns``, then ``create_tag``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from huggingface_hub import HfApi
from huggingface_hub.errors import RepositoryNotFoundError
from packaging.version import InvalidVersion, Version
from rich.console import Console
from rich.filesize import decimal
from rich.markup import escape

from tools import hub
from tools.errors import (
    InvalidBuildDir,
    InvalidReleaseVersion,
    InvalidVariant,
    InvalidVariantName,
    PublishFailed,
    RevisionNotFound,
    ToolError,
    VersionExists,
)
from tools.hub2wheel import collect_files, find_package, read_metadata, verify_digest
from tools.variants import Variant

BASE_BRANCH = "main"
REPO_TYPES = ("model", "kernel", "dataset", "space")
_SIGSTORE = "metadata.json.sigstore"  # a detached signature: not covered by the digest, published when present
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_GIT_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX")

EPILOG = """\
examples:
  # check everything, write nothing
  python -m tools.publish org/img2gray --version 0.1.0 --dry-run
  # the Hub (HF_ENDPOINT / HF_TOKEN as for huggingface_hub): branch v0 + tag v0.1.0
  python -m tools.publish org/img2gray --version 0.1.0 --repo-type kernel
  # any git repository standing in for the Hub repository
  python -m tools.publish org/img2gray --version 0.1.0 --git-remote /srv/git/img2gray.git
then: python -m tools.hub2wheel org/img2gray --version '>=0.1,<0.2'   or   get_kernel("org/img2gray", version=0)
"""


# --- what is published -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StagedVariant:
    """One verified variant, copied to ``staging/<name>/``: exactly the files that will be published."""

    variant: Variant
    files: tuple[str, ...]  # relative posix paths
    size: int

    @property
    def name(self) -> str:
        return str(self.variant)


@dataclass(frozen=True)
class Plan:
    """Where a build goes: ``branch`` ``v<major>``, ``tag`` ``v<version>``, and the variants (sorted by name)."""

    repo_id: str
    version: Version
    variants: tuple[StagedVariant, ...]

    @property
    def branch(self) -> str:
        return f"v{self.version.major}"

    @property
    def tag(self) -> str:
        return f"v{self.version}"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.variants)

    @property
    def commit_message(self) -> str:
        listed = "".join(f"\n- build/{name}" for name in self.names)
        return f"Publish {self.repo_id} {self.version} ({_count(self.variants, 'build variant')})\n{listed}\n"


@dataclass(frozen=True)
class RemoteRefs:
    """The remote's branches and tags (``{name: commit}``); ``exists`` is False for a repository not created yet."""

    exists: bool = True
    branches: Mapping[str, str] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PublishResult:
    repo_id: str
    version: Version
    branch: str
    tag: str
    commit: str | None  # None for a dry run
    variants: tuple[str, ...]
    remote: str  # transport label
    branch_created: bool
    dry_run: bool = False

    def summary(self) -> str:
        listed = ", ".join(self.variants)
        if self.commit is None:
            new = " (new branch)" if self.branch_created else ""
            return (f"dry run: would publish {self.repo_id} {self.version} to {self.remote}: "
                    f"branch {self.branch}{new}, "
                    f"tag {self.tag}; {_count(self.variants, 'variant')}: {listed}")
        return (f"published {self.repo_id} {self.version} to {self.remote}: branch {self.branch}, tag {self.tag}, "
                f"commit {self.commit}; {_count(self.variants, 'variant')}: {listed}")


class Transport(Protocol):
    """A place to publish to. ``push`` writes one commit on ``plan.branch`` plus ``plan.tag`` and returns the commit."""

    @property
    def label(self) -> str: ...

    def refs(self, repo_id: str) -> RemoteRefs: ...

    def push(self, plan: Plan, staging: Path, remote: RemoteRefs, console: Console) -> str: ...


# --- checks (nothing is written to the remote before all of them pass) -----------------------------------------


def release_version(text: str | Version) -> Version:
    """A final release (``1.2.3``): it names the tag ``v1.2.3`` and the branch ``v1`` that ``tools.hub`` resolves."""
    try:
        version = text if isinstance(text, Version) else Version(text)
    except InvalidVersion:
        raise InvalidReleaseVersion(
            f"--version {str(text)!r} is not a PEP 440 version (expected e.g. 0.1.0)"
        ) from None
    odd = [what for what, present in (
        ("an epoch", version.epoch != 0), ("a pre-release segment", version.pre is not None),
        ("a post-release segment", version.post is not None), ("a dev segment", version.dev is not None),
        ("a local label", version.local is not None),
    ) if present]
    if odd:
        raise InvalidReleaseVersion(
            f"--version {str(text)!r} has {' and '.join(odd)}: only final releases (e.g. {version.base_version}) "
            "can be published, because tools.hub (so hub2wheel) resolves only v<N>[.<N>...] tags and branches"
        )
    return version


def _check_metadata_version(metadata: Mapping[str, object], version: Version, where: str) -> None:
    value = metadata.get("version")
    if isinstance(value, int) and not isinstance(value, bool) and value != version.major:
        raise InvalidVariant(
            f"{where}/metadata.json: version {value} (the kernel major) does not match --version {version}, which "
            f"publishes to branch v{version.major}; rebuild, or publish as {value}.x.y"
        )
    if isinstance(value, str):
        try:
            built = Version(value)
        except InvalidVersion:
            raise InvalidVariant(f"{where}/metadata.json: version {value!r} is not a PEP 440 version") from None
        if built != version:
            raise InvalidVariant(
                f"{where}/metadata.json: version {value} does not match --version {version}; rebuild, or publish "
                f"as {value}"
            )


def stage_variant(variant_dir: Path, staging: Path, version: Version, kernel: str) -> StagedVariant:
    """Check one ``build/<variant>/`` folder and copy its publishable files to ``staging/<variant>/``."""
    where = f"build/{variant_dir.name}"
    variant = Variant.parse(variant_dir.name)
    if variant_dir.is_symlink():
        raise InvalidVariant(f"{where}: the variant folder is a symlink; publish the real folder")
    files = collect_files(variant_dir, where)
    sigstore = variant_dir / _SIGSTORE
    if sigstore.is_file() and not sigstore.is_symlink():
        files[_SIGSTORE] = sigstore
    target = staging / variant_dir.name
    for rel, path in files.items():
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target / rel)  # follows in-variant symlinks: the Hub stores content, not links
    # Verify the copies, so what is checked is byte for byte what is published.
    staged = collect_files(target, where)
    metadata = read_metadata(staged, where)
    if not metadata:
        raise InvalidVariant(f"{where}: no metadata.json (kernels >= 0.14 needs it, and its digest is what is checked)")
    if not verify_digest(staged, metadata, where):
        raise InvalidVariant(
            f"{where}/metadata.json: no 'digest' of the variant's files, so they cannot be verified before publishing; "
            "rebuild (kernel-builder hash / tools.build_variants write it)"
        )
    find_package(staged, metadata, str(metadata.get("name") or kernel), where)
    _check_metadata_version(metadata, version, where)
    rels = tuple(sorted([*staged, *([_SIGSTORE] if _SIGSTORE in files else [])]))
    return StagedVariant(variant, rels, sum((target / rel).stat().st_size for rel in rels))


def stage_build(build_dir: Path, staging: Path, version: Version, kernel: str) -> tuple[StagedVariant, ...]:
    """Every entry of ``build_dir`` checked (problems collected, then raised once) and staged."""
    if not build_dir.is_dir():
        raise InvalidBuildDir(f"{build_dir}: no such folder; build the variants first (or pass --build-dir)")
    entries = sorted(p for p in build_dir.iterdir() if not p.name.startswith("."))
    problems: list[ToolError] = []
    staged: list[StagedVariant] = []
    for entry in entries:
        try:
            if not entry.is_dir():
                raise InvalidBuildDir(
                    f"build/{entry.name}: not a build variant folder (a build folder holds only build/<variant>/ "
                    "folders); move it out of the build folder"
                )
            staged.append(stage_variant(entry, staging, version, kernel))
        except InvalidVariantName as exc:
            problems.append(InvalidVariantName(f"build/{entry.name}: not a build variant folder: {exc}"))
        except ToolError as exc:
            problems.append(exc)
    if len(problems) == 1:
        raise problems[0]
    if problems:
        listed = "".join(f"\n  {p}" for p in problems)
        raise InvalidBuildDir(f"{build_dir}: {len(problems)} entries cannot be published:{listed}")
    if not staged:
        raise InvalidBuildDir(f"{build_dir}: no build variants to publish (expected build/<variant>/ folders)")
    return tuple(staged)


def check_remote(plan: Plan, remote: RemoteRefs, label: str) -> bool:
    """Refuse an existing tag; returns whether the branch will be created (from ``main``)."""
    if plan.tag in remote.tags:
        raise VersionExists(
            f"{plan.repo_id}: tag {plan.tag} already exists on {label} (commit {remote.tags[plan.tag][:12]}); a "
            f"published version is never moved: publish a new version (e.g. {_next_patch(plan.version)})"
        )
    if plan.branch in remote.branches:
        return False
    if remote.exists and BASE_BRANCH not in remote.branches:
        names = ", ".join(sorted(remote.branches)) or "none"
        raise RevisionNotFound(
            f"{plan.repo_id}: branch {plan.branch} is missing and there is no {BASE_BRANCH} branch to create it from "
            f"on {label} (branches: {names}); commit a README to {BASE_BRANCH} first"
        )
    return True


def _count(items: Sequence[object], noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def _next_patch(version: Version) -> str:
    release = list(version.release) + [0] * (3 - len(version.release))
    release[-1] += 1
    return ".".join(map(str, release))


# --- the library entry point -----------------------------------------------------------------------------------


def publish(
    build_dir: Path,
    repo_id: str,
    version: Version | str,
    transport: Transport,
    *,
    dry_run: bool = False,
    console: Console | None = None,
) -> PublishResult:
    """Verify ``build_dir``'s variants, then put them on branch ``v<major>`` and tag ``v<version>`` of ``repo_id``."""
    console = console or Console(stderr=True, highlight=False, soft_wrap=True)
    version = release_version(version)
    with tempfile.TemporaryDirectory(prefix="img2gray-publish-") as tmp:
        staging = Path(tmp) / "build"
        staging.mkdir()
        variants = stage_build(build_dir, staging, version, repo_id.split("/")[-1])
        plan = Plan(repo_id, version, variants)
        verified = f"* Verified {_count(variants, 'build variant')} in {build_dir} (metadata.json digests match)"
        console.print(escape(verified))
        for v in variants:
            console.print(f"  [green]✓[/] {escape(v.name)}  {len(v.files)} files, {decimal(v.size)}")
        remote = transport.refs(repo_id)
        created = check_remote(plan, remote, transport.label)
        where = f"new, from {BASE_BRANCH}" if created else f"at {remote.branches[plan.branch][:12]}"
        new_repo = "" if remote.exists else f"; {repo_id} will be created"
        console.print(escape(f"* {transport.label}: branch {plan.branch} ({where}), tag {plan.tag} is free{new_repo}"))
        commit = None if dry_run else transport.push(plan, staging, remote, console)
    return PublishResult(repo_id, version, plan.branch, plan.tag, commit, plan.names, transport.label, created, dry_run)


# --- git transport ---------------------------------------------------------------------------------------------


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    env["GIT_LFS_SKIP_SMUDGE"] = "1"  # the clone only replaces our folders: never download other LFS files
    return env


def _git(cwd: Path | None, *args: str, what: str) -> str:
    proc = subprocess.run(["git", *args], check=False, cwd=cwd, env=_git_env(), capture_output=True, text=True)
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
        return cls(str(path.resolve()) if path.exists() else remote)

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
        with tempfile.TemporaryDirectory(prefix="img2gray-publish-clone-") as tmp:
            clone = Path(tmp) / "repo"
            _git(None, "clone", "--quiet", "--no-tags", "--single-branch", "--branch", base, self.url, str(clone),
                 what=f"{what}: cloning {base}")
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
            console.print(escape(f"* Pushing branch {plan.branch} and tag {plan.tag} ({commit[:12]}) atomically"))
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


# --- Hub transport (huggingface_hub) ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HubTransport:
    """The Hub through ``HfApi``. Not atomic: a failure after the upload leaves the branch moved and no tag; running
    the same command again then uploads nothing new and creates the tag."""

    api: HfApi
    repo_type: str = "model"

    @property
    def label(self) -> str:
        return f"{self.api.endpoint} ({self.repo_type} repo)"

    def refs(self, repo_id: str) -> RemoteRefs:
        try:
            refs = self.api.list_repo_refs(repo_id, repo_type=self.repo_type)
        except RepositoryNotFoundError:
            return RemoteRefs(exists=False)
        except Exception as exc:  # any failure to read the remote
            raise PublishFailed(f"{repo_id}: cannot list refs on {self.label}: {exc}") from exc
        return RemoteRefs(
            True, {b.name: b.target_commit for b in refs.branches}, {t.name: t.target_commit for t in refs.tags}
        )

    def push(self, plan: Plan, staging: Path, remote: RemoteRefs, console: Console) -> str:
        repo_id, kind = plan.repo_id, self.repo_type
        step = "creating the repository"
        try:
            self.api.create_repo(repo_id, repo_type=kind, exist_ok=True)
            step = f"creating branch {plan.branch} from {BASE_BRANCH}"
            self.api.create_branch(repo_id, branch=plan.branch, revision=BASE_BRANCH, repo_type=kind, exist_ok=True)
            step = f"uploading to branch {plan.branch}"
            console.print(escape(f"* Uploading {_count(plan.variants, 'variant')} to {repo_id}@{plan.branch}"))
            patterns = [f"{name}/**" for name in plan.names]
            info = self.api.upload_folder(
                repo_id=repo_id, repo_type=kind, folder_path=staging, path_in_repo="build", revision=plan.branch,
                allow_patterns=patterns, delete_patterns=patterns, commit_message=plan.commit_message.split("\n")[0],
                commit_description=plan.commit_message, parent_commit=remote.branches.get(plan.branch),
            )
            commit = str(info.oid)
            step = (f"creating tag {plan.tag} on {commit[:12]} (branch {plan.branch} already holds the upload: run "
                    "the same command again to create the tag)")
            console.print(escape(f"* Tagging {commit[:12]} as {plan.tag}"))
            self.api.create_tag(repo_id, tag=plan.tag, revision=commit, repo_type=kind)
        except Exception as exc:  # any failure of a remote write; the cause stays chained
            raise PublishFailed(f"{repo_id} on {self.label}: {step}: {exc}") from exc
        return commit


# --- command line ----------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.publish",
        description="Publish build/<variant>/ folders to a Hub repository: branch v<major> and tag v<version>.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("repo_id", help="Hub repository id (org/name)")
    parser.add_argument("--version", required=True, help="the release to publish (PEP 440, e.g. 0.1.0)")
    parser.add_argument("--build-dir", type=Path, default=Path("build"),
                        help="folder holding <variant>/ folders (default: build)")
    parser.add_argument("--git-remote", metavar="PATH_OR_URL",
                        help="publish to this git repository instead of the Hub (HF_ENDPOINT)")
    parser.add_argument("--repo-type", choices=REPO_TYPES,
                        help="Hub repository type (default: model; kernels >= 0.14 uses kernel)")
    parser.add_argument("--dry-run", action="store_true", help="verify and list what would be published; write nothing")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    if args.git_remote and args.repo_type:
        parser.error("--repo-type applies to the Hub; a --git-remote has no repository type")
    if not _REPO_ID.match(args.repo_id):
        parser.error(f"repository id {args.repo_id!r} is not of the form org/name")
    try:
        transport: Transport
        if args.git_remote:
            transport = GitTransport.from_arg(args.git_remote)
        else:
            transport = HubTransport(hub.HubSettings.from_env().api(), args.repo_type or "model")
        result = publish(args.build_dir, args.repo_id, args.version, transport, dry_run=args.dry_run, console=console)
    except ToolError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return 1
    print(result.summary())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
