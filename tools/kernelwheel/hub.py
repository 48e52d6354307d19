"""The only module that talks to the Hugging Face Hub: version → commit, and fetching ``build/<variant>/`` files.

Everything goes through ``huggingface_hub`` (``HfApi`` is passed in, or built from the environment), so
``HF_ENDPOINT``, ``HF_TOKEN``, ``HF_HUB_OFFLINE``, ``HF_HOME``/``HF_HUB_CACHE`` behave as they do for
``huggingface_hub`` itself; they are read when a function is called, not at import. Kernel repositories are tried
as ``repo_type="kernel"`` first (kernels ≥ 0.14), then ``"model"`` (older kernels and mirrors such as olah that do
not serve ``/api/kernels/``).

Offline (``HF_HUB_OFFLINE=1``) nothing is requested: revisions and versions are read from the cache's ``refs/``
files and the snapshot folder, and a miss is an ``OfflineCacheMiss`` that says what to run online.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import (
    EntryNotFoundError,
    HfHubHTTPError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.file_download import repo_folder_name
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from tools.kernelwheel.errors import HubError, OfflineCacheMiss, RepositoryNotFound, RevisionNotFound

REPO_TYPES = ("kernel", "model")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_VERSION_REF = re.compile(r"^v(\d+(?:\.\d+)*)$")
_TRUE = {"1", "on", "yes", "true"}

ProgressCallback = Callable[[str, int, int], None]  # (file, index, total)


@dataclass(frozen=True)
class HubSettings:
    """The environment as ``huggingface_hub`` reads it, captured once per command."""

    endpoint: str | None
    token: str | None
    offline: bool
    cache_dir: Path

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> HubSettings:
        env = os.environ if environ is None else environ
        hf_home = Path(env.get("HF_HOME", Path(env.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "huggingface"))
        cache = Path(env.get("HF_HUB_CACHE", env.get("HUGGINGFACE_HUB_CACHE", hf_home / "hub")))
        offline = env.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE
        return cls(env.get("HF_ENDPOINT") or None, env.get("HF_TOKEN") or None, offline, cache)

    def api(self) -> HfApi:
        return HfApi(endpoint=self.endpoint, token=self.token)


@dataclass(frozen=True)
class VersionRef:
    """A version tag (``v1.2.3``) or version branch (``v1``) and the commit it points to."""

    version: Version
    name: str
    commit: str
    kind: str  # "tag" or "branch"


@dataclass(frozen=True)
class Snapshot:
    """Downloaded (or cached) files of one commit: ``root/build/<variant>/...``."""

    repo_id: str
    repo_type: str
    commit: str
    root: Path
    blobs: Path  # the cache's blobs/ folder: snapshot files are symlinks into it


def parse_version_spec(spec: str) -> SpecifierSet:
    """``"1"`` → ``==1.*`` (a bare major, as ``kernels`` takes it); otherwise a PEP 440 specifier set."""
    text = spec.strip()
    if text.isdigit():
        return SpecifierSet(f"=={int(text)}.*")
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise RevisionNotFound(
            f"--version {spec!r} is neither a major version (e.g. '1') nor a PEP 440 specifier (e.g. '>=0.2,<0.3')"
        ) from None


def version_refs(tags: Iterable[tuple[str, str]], branches: Iterable[tuple[str, str]]) -> list[VersionRef]:
    """Every ``v<version>`` tag and branch, newest first (a tag wins over a branch of the same version)."""
    refs: list[VersionRef] = []
    for kind, items in (("tag", tags), ("branch", branches)):
        for name, commit in items:
            version = version_of_ref(name)
            if version is not None:
                refs.append(VersionRef(version, name, commit, kind))
    return sorted(refs, key=lambda r: (r.version, r.kind == "tag"), reverse=True)


def version_of_ref(name: str) -> Version | None:
    """``v1.2.3`` / ``v1`` → that version; None for any other branch, tag or commit."""
    match = _VERSION_REF.match(name)
    if not match:
        return None
    try:
        return Version(match[1])
    except InvalidVersion:
        return None


def pick_version(refs: list[VersionRef], spec: str, repo_id: str) -> VersionRef:
    specifier = parse_version_spec(spec)
    for ref in refs:
        if specifier.contains(ref.version, prereleases=True):
            return ref
    available = ", ".join(r.name for r in refs) or "none"
    raise RevisionNotFound(f"{repo_id}: no version tag or branch matches {spec!r} (available: {available})")


def _cache_folder(settings: HubSettings, repo_id: str, repo_type: str) -> Path:
    return settings.cache_dir / repo_folder_name(repo_id=repo_id, repo_type=repo_type)


def _cached_refs(settings: HubSettings, repo_id: str) -> tuple[str, dict[str, str]] | None:
    for repo_type in REPO_TYPES:
        refs_dir = _cache_folder(settings, repo_id, repo_type) / "refs"
        if refs_dir.is_dir():
            refs = {p.name: p.read_text().strip() for p in refs_dir.iterdir() if p.is_file()}
            return repo_type, refs
    return None


def _is_missing(exc: Exception) -> bool:
    if isinstance(exc, (RepositoryNotFoundError, EntryNotFoundError)):
        return True
    response = getattr(exc, "response", None)
    return isinstance(exc, HfHubHTTPError) and response is not None and response.status_code in (401, 404)


def list_version_refs(api: HfApi, settings: HubSettings, repo_id: str) -> tuple[str, list[VersionRef]]:
    """The repo type that answered and its version refs (from the cache when offline)."""
    if settings.offline:
        cached = _cached_refs(settings, repo_id)
        if cached is None:
            raise OfflineCacheMiss(
                f"{repo_id}: HF_HUB_OFFLINE is set and {settings.cache_dir} has no refs for it; run once online "
                "with the same --version, or pass --revision <commit>"
            )
        repo_type, refs = cached
        return repo_type, version_refs([], refs.items())
    for repo_type in REPO_TYPES:
        try:
            git_refs = api.list_repo_refs(repo_id, repo_type=repo_type)
        except Exception as exc:
            if _is_missing(exc):
                continue
            raise HubError(f"{repo_id}: cannot list refs on {api.endpoint}: {exc}") from None
        tags = [(t.name, t.target_commit) for t in git_refs.tags]
        branches = [(b.name, b.target_commit) for b in git_refs.branches]
        return repo_type, version_refs(tags, branches)
    raise RepositoryNotFound(
        f"{repo_id}: no such kernel or model repository on {api.endpoint} (or HF_TOKEN cannot see it)"
    )


def resolve_version(api: HfApi, settings: HubSettings, repo_id: str, spec: str) -> tuple[str, VersionRef]:
    """``--version``: the newest ``v<version>`` tag or branch matching ``spec``."""
    repo_type, refs = list_version_refs(api, settings, repo_id)
    return repo_type, pick_version(refs, spec, repo_id)


def _remote_commit(api: HfApi, repo_id: str, revision: str) -> tuple[str, str]:
    for repo_type in REPO_TYPES:
        try:
            info = api.repo_info(repo_id, repo_type=repo_type, revision=revision)
        except RevisionNotFoundError:
            raise RevisionNotFound(f"{repo_id}: no branch, tag or commit {revision!r}") from None
        except Exception as exc:
            if _is_missing(exc):
                continue
            raise HubError(f"{repo_id}@{revision}: request to {api.endpoint} failed: {exc}") from None
        if info.sha:
            return repo_type, info.sha
    # Some servers (olah) answer 401 for an unknown revision of a known repo: ask for the refs to tell them apart.
    for repo_type in REPO_TYPES:
        try:
            refs = api.list_repo_refs(repo_id, repo_type=repo_type)
        except Exception:
            continue
        names = ", ".join(sorted(r.name for r in [*refs.branches, *refs.tags])) or "none"
        raise RevisionNotFound(f"{repo_id}: no branch, tag or commit {revision!r} (branches and tags: {names})")
    raise RepositoryNotFound(
        f"{repo_id}: no such kernel or model repository on {api.endpoint} (or HF_TOKEN cannot see it)"
    )


def _matches(path: str, patterns: Iterable[str]) -> bool:
    if path.endswith(".pyc") or "/__pycache__/" in path:
        return False
    return any(fnmatch.fnmatchcase(path, p) for p in patterns)


def fetch(
    api: HfApi,
    settings: HubSettings,
    repo_id: str,
    revision: str,
    *,
    patterns: Iterable[str] = ("build/*",),
    on_file: ProgressCallback | None = None,
) -> Snapshot:
    """Make the files of ``repo_id@revision`` that match ``patterns`` available in the cache."""
    patterns = tuple(patterns)
    if settings.offline:
        return _cached_snapshot(settings, repo_id, revision)
    repo_type, commit = _remote_commit(api, repo_id, revision)
    try:
        files = [f for f in api.list_repo_files(repo_id, repo_type=repo_type, revision=commit) if _matches(f, patterns)]
    except Exception as exc:
        raise HubError(f"{repo_id}@{commit[:12]}: cannot list files on {api.endpoint}: {exc}") from None
    for index, filename in enumerate(sorted(files)):
        if on_file is not None:
            on_file(filename, index, len(files))
        try:
            hf_hub_download(
                repo_id,
                filename,
                repo_type=repo_type,
                revision=commit,
                cache_dir=settings.cache_dir,
                endpoint=settings.endpoint,
                token=settings.token,
            )
        except Exception as exc:
            raise HubError(f"{repo_id}@{commit[:12]}: downloading {filename} failed: {exc}") from None
    if on_file is not None:
        on_file("", len(files), len(files))
    folder = _cache_folder(settings, repo_id, repo_type)
    if revision != commit:
        # Record the ref as huggingface_hub does, so that a later offline run can resolve it.
        (folder / "refs").mkdir(parents=True, exist_ok=True)
        if "/" not in revision:
            (folder / "refs" / revision).write_text(commit)
    root = folder / "snapshots" / commit
    root.mkdir(parents=True, exist_ok=True)
    return Snapshot(repo_id, repo_type, commit, root, folder / "blobs")


def _cached_snapshot(settings: HubSettings, repo_id: str, revision: str) -> Snapshot:
    for repo_type in REPO_TYPES:
        folder = _cache_folder(settings, repo_id, repo_type)
        if not folder.is_dir():
            continue
        commit = revision
        if not _COMMIT.match(revision):
            ref = folder / "refs" / revision
            if not ref.is_file():
                continue
            commit = ref.read_text().strip()
        root = folder / "snapshots" / commit
        if (root / "build").is_dir():
            return Snapshot(repo_id, repo_type, commit, root, folder / "blobs")
    raise OfflineCacheMiss(
        f"{repo_id}@{revision}: HF_HUB_OFFLINE is set and {settings.cache_dir} holds no snapshot with build/ for "
        "it; run once online (or unset HF_HUB_OFFLINE)"
    )
