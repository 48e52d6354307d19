"""What a publish writes (``Plan``: branch ``v<major>``, tag ``v<version>``, the staged variants), the checks on the
version and on the remote's refs, and the ``Transport`` protocol the git and Hub writers implement."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from packaging.version import InvalidVersion, Version
from rich.console import Console

from kernelwheel.format.variants import Variant
from kernelwheel.io.errors import InvalidReleaseVersion, RevisionNotFound, VersionExists

BASE_BRANCH = "main"


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
        return f"Publish {self.repo_id} {self.version} ({count(self.variants, 'build variant')})\n{listed}\n"


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
                    f"tag {self.tag}; {count(self.variants, 'variant')}: {listed}")
        return (f"published {self.repo_id} {self.version} to {self.remote}: branch {self.branch}, tag {self.tag}, "
                f"commit {self.commit}; {count(self.variants, 'variant')}: {listed}")


class Transport(Protocol):
    """A place to publish to. ``push`` writes one commit on ``plan.branch`` plus ``plan.tag`` and returns the commit."""

    @property
    def label(self) -> str: ...

    def refs(self, repo_id: str) -> RemoteRefs: ...

    def push(self, plan: Plan, staging: Path, remote: RemoteRefs, console: Console) -> str: ...


def release_version(text: str | Version) -> Version:
    """A final release (``1.2.3``): it names the tag ``v1.2.3`` and the branch ``v1`` that ``hub`` resolves."""
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
            "can be published, because hub2wheel resolves only v<N>[.<N>...] tags and branches"
        )
    return version


def check_remote(plan: Plan, remote: RemoteRefs, label: str) -> bool:
    """Refuse an existing tag; returns whether the branch will be created: from ``main``, or as the first commit of a
    repository with no branch yet (a fresh bare one), where there is nothing to start from."""
    if plan.tag in remote.tags:
        raise VersionExists(
            f"{plan.repo_id}: tag {plan.tag} already exists on {label} (commit {remote.tags[plan.tag][:12]}); a "
            f"published version is never moved: publish a new version (e.g. {_next_patch(plan.version)})"
        )
    if plan.branch in remote.branches:
        return False
    if remote.exists and remote.branches and BASE_BRANCH not in remote.branches:
        names = ", ".join(sorted(remote.branches)) or "none"
        raise RevisionNotFound(
            f"{plan.repo_id}: branch {plan.branch} is missing and there is no {BASE_BRANCH} branch to create it from "
            f"on {label} (branches: {names}); commit a README to {BASE_BRANCH} first"
        )
    return True


def count(items: Sequence[object], noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def _next_patch(version: Version) -> str:
    release = list(version.release) + [0] * (3 - len(version.release))
    release[-1] += 1
    return ".".join(map(str, release))
