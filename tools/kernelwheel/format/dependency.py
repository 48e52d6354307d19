"""A kernel dependency as kernels writes it, in ``kernel-depends`` and in locks: ``{"repo-id": "org/name"}`` with
a ``version`` (an API major) or a ``revision`` (a branch, tag or commit), never both (kernels' ``KernelDependency``)."""

from __future__ import annotations

from dataclasses import dataclass

from kernelwheel.io.errors import ToolError

FIELDS = ("repo-id", "version", "revision")


@dataclass(frozen=True)
class Dependency:
    """One dependency: ``version`` (an API major) or ``revision`` (a branch, tag or commit)."""

    repo_id: str
    version: int | None = None
    revision: str | None = None

    def __str__(self) -> str:
        return f"{self.repo_id} ({f'version {self.version}' if self.version is not None else self.revision})"


def parse_dependency(value: object, where: str, error: type[ToolError]) -> Dependency:
    """``value`` by kernels' rules, or ``error`` with one line naming ``where`` and the field."""
    if not isinstance(value, dict):
        raise error(f"{where}: expected an object with repo-id and version or revision")
    unknown = [key for key in value if key not in FIELDS]
    if unknown:
        raise error(f"{where}: unknown field {unknown[0]!r} (expected repo-id, version or revision)")
    repo_id, version, revision = value.get("repo-id"), value.get("version"), value.get("revision")
    if not isinstance(repo_id, str):
        raise error(f"{where}: repo-id must be a string such as \"org/relu\", got {type(repo_id).__name__}")
    if version is not None and revision is not None:
        raise error(f"{where} ({repo_id}): version and revision are exclusive")
    if version is None and revision is None:
        raise error(f"{where} ({repo_id}): needs a version or a revision")
    if version is not None:
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise error(f"{where} ({repo_id}): version {version!r:.40} is not a non-negative integer")
        return Dependency(repo_id, version=version)
    if not isinstance(revision, str):
        raise error(f"{where} ({repo_id}): revision must be a string")
    return Dependency(repo_id, revision=revision)
