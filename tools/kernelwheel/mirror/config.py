"""The mirror's configuration file (TOML): the wheelhouse, the signature settings, and which kernels to keep.

::

    wheelhouse = "wheelhouse"           # relative to this file
    require-signature = false           # optional, for every kernel, as hub2wheel's options of the same names
    sigstore-trusted-root = "root.json"
    signer-workflows = ["https://github.com/org/kernels/.github/workflows/build.yaml@refs/heads/main"]
    jobs = 2
    variant-wheels = false              # also each wheel's variant wheel (hub2wheel --variant-wheels; experimental)

    [[kernels]]
    repo = "org/name"                   # or org = "some-org": every repository the Hub lists for it
    versions = ">=0.1"                  # a PEP 440 specifier on release tags (vX.Y.Z), or "latest"; default: all
    variants = ["*-cu130-*"]            # globs; default: every variant
    trust = true                        # hub2wheel's --trust-repo for this repository (every one of an org)

Every problem is one ``InvalidMirrorConfig`` line naming the file, the key, what was expected and what was given.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from kernelwheel.format.repo_id import repo_id_problem
from kernelwheel.io.errors import InvalidMirrorConfig
from kernelwheel.io.limited_read import read_limited

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

_MAX_CONFIG_BYTES = 4 << 20
_TOP_KEYS = {"wheelhouse", "require-signature", "sigstore-trusted-root", "signer-workflows", "jobs", "variant-wheels",
             "kernels"}
_KERNEL_KEYS = {"repo", "org", "versions", "variants", "trust"}
LATEST = "latest"


@dataclass(frozen=True)
class KernelEntry:
    """One ``[[kernels]]`` table: a repository (``repo``) or every repository of an owner (``org``)."""

    repo: str | None
    org: str | None
    versions: str | None  # None: every release tag; "latest": the newest; else a PEP 440 specifier
    variants: tuple[str, ...]
    trust: bool

    @property
    def name(self) -> str:
        return self.repo if self.repo is not None else f"{self.org}/*"

    def wants(self, version: Version) -> bool:
        """Whether release ``version`` matches ``versions`` (``latest`` is chosen among the tags by the caller)."""
        if self.versions is None or self.versions == LATEST:
            return True
        return SpecifierSet(self.versions).contains(version, prereleases=True)


@dataclass(frozen=True)
class MirrorConfig:
    path: Path
    wheelhouse: Path
    kernels: tuple[KernelEntry, ...]
    require_signature: bool = False
    sigstore_trusted_root: Path | None = None
    signer_workflows: tuple[str, ...] = ()
    jobs: int | None = None
    variant_wheels: bool = False  # hub2wheel's --variant-wheels (experimental): recorded with the tag's wheels


def _problem(path: Path, key: str, expected: str, given: object) -> InvalidMirrorConfig:
    return InvalidMirrorConfig(f"{path}: {key}: expected {expected}, got {given!r:.120}")


def _typed(path: Path, table: Mapping[str, Any], key: str, kind: type, expected: str, where: str = "") -> Any:
    value = table.get(key)
    if value is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
        raise _problem(path, where + key, expected, value)
    return value


def _strings(path: Path, table: Mapping[str, Any], key: str, where: str = "") -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise _problem(path, where + key, "a list of non-empty strings", value)
    return tuple(value)


def _unknown(path: Path, table: Mapping[str, Any], known: set[str], where: str) -> None:
    extra = sorted(set(table) - known)
    if extra:
        raise _problem(path, where + extra[0], f"one of the keys {', '.join(sorted(known))}", extra[0])


def _kernel(path: Path, table: Any, position: int) -> KernelEntry:
    where = f"kernels[{position}]."
    if not isinstance(table, dict):
        raise _problem(path, f"kernels[{position}]", "a table ([[kernels]])", table)
    _unknown(path, table, _KERNEL_KEYS, where)
    repo = _typed(path, table, "repo", str, "a Hub repository id org/name", where)
    org = _typed(path, table, "org", str, "a Hub user or organisation name", where)
    if (repo is None) == (org is None):
        raise _problem(path, f"kernels[{position}]", "exactly one of repo or org", sorted(table))
    if repo is not None and (problem := repo_id_problem(repo)) is not None:
        raise InvalidMirrorConfig(f"{path}: {where}repo: {problem}")
    if org is not None and repo_id_problem(f"{org}/x") is not None:
        raise _problem(path, where + "org", "a Hub user or organisation name (no '/')", org)
    versions = _typed(path, table, "versions", str, f'a PEP 440 specifier such as ">=0.1", or "{LATEST}"', where)
    if versions is not None and versions != LATEST:
        try:
            SpecifierSet(versions)
        except InvalidSpecifier:
            raise _problem(path, where + "versions", f'a PEP 440 specifier such as ">=0.1", or "{LATEST}"',
                           versions) from None
    trust = _typed(path, table, "trust", bool, "true or false", where)
    return KernelEntry(repo, org, versions, _strings(path, table, "variants", where), bool(trust))


def load_config(path: Path) -> MirrorConfig:
    """Read and check the configuration at ``path``; paths in it are relative to its folder."""
    try:
        data = read_limited(path, _MAX_CONFIG_BYTES)
    except OSError as exc:
        raise InvalidMirrorConfig(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > _MAX_CONFIG_BYTES:
        raise InvalidMirrorConfig(f"{path}: is over {_MAX_CONFIG_BYTES >> 20} MiB; expected a small TOML file")
    try:
        table = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidMirrorConfig(f"{path}: is not TOML ({' '.join(str(exc).split())})") from None
    _unknown(path, table, _TOP_KEYS, "")
    base = path.parent
    wheelhouse = _typed(path, table, "wheelhouse", str, "a folder, relative to the configuration file", "")
    if not wheelhouse:
        raise _problem(path, "wheelhouse", "a folder, relative to the configuration file", wheelhouse)
    root = _typed(path, table, "sigstore-trusted-root", str, "a trusted_root.json file", "")
    jobs = _typed(path, table, "jobs", int, "a whole number of at least 1", "")
    if jobs is not None and jobs < 1:
        raise _problem(path, "jobs", "a whole number of at least 1", jobs)
    kernels = table.get("kernels")
    if not isinstance(kernels, list) or not kernels:
        raise _problem(path, "kernels", "one or more [[kernels]] tables", kernels)
    return MirrorConfig(
        path=path,
        wheelhouse=base / wheelhouse,
        kernels=tuple(_kernel(path, entry, position) for position, entry in enumerate(kernels)),
        require_signature=bool(_typed(path, table, "require-signature", bool, "true or false", "")),
        sigstore_trusted_root=None if root is None else base / root,
        signer_workflows=_strings(path, table, "signer-workflows"),
        jobs=jobs,
        variant_wheels=bool(_typed(path, table, "variant-wheels", bool, "true or false", "")),
    )
