"""Talking to the Hugging Face Hub: version → commit, and fetching ``build/<variant>/`` files (with
``background_fetch``, which fetches a variant at a time on top of this module, the only one that does).

Everything goes through ``huggingface_hub`` (``HfApi`` is passed in, or built from the environment), so
``HF_ENDPOINT``, ``HF_TOKEN``, ``HF_HUB_OFFLINE``, ``HF_HOME``/``HF_HUB_CACHE`` behave as they do for
``huggingface_hub`` itself; they are read when a function is called, not at import. Kernel repositories are tried
as ``repo_type="kernel"`` first (kernels ≥ 0.14), then ``"model"`` (older kernels and mirrors such as olah that do
not serve ``/api/kernels/``).

Files come from ``huggingface_hub.snapshot_download``: it resolves the revision, records ``refs/``, downloads
concurrently and, offline (``HF_HUB_OFFLINE=1``), serves the snapshot from the cache without a request. A miss is
an ``OfflineCacheMiss`` that says what to run. Every online listing of tags and branches is recorded
(``list_refs``, ``ref_listing``): offline ``--version`` reads that record, tags called tags, else the cached
``refs/`` (see ``_cached_refs`` for why that is not ``scan_cache_dir``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from kernelwheel.hub import ref_listing, revision_probe
from kernelwheel.io import answer_deadline, json_cache
from kernelwheel.io.atomic import write_atomic
from kernelwheel.io.errors import HubError, OfflineCacheMiss, RepositoryNotFound, RevisionNotFound, one_line
from kernelwheel.io.urls import printable, redact, url_problem

# huggingface_hub is imported where it is used: its constants module parses HF_ENDPOINT on import and raises a bare
# ValueError for a malformed one, which HubSettings.from_env refuses first, in one line. And a rerun never needs
# most of it: huggingface_hub.errors brings httpx (~0.12 s), file_download ~0.08 s more, hf_api (HfApi,
# snapshot_download) ~0.15 s more. A rerun of a branch or tag asks its one HEAD through revision_probe (the standard
# library) and loads none of them unless that answer is not plain.
if TYPE_CHECKING:
    from huggingface_hub import HfApi
    from tqdm import tqdm

REPO_TYPES = ("kernel", "model")
DOWNLOAD_WORKERS = 8  # files snapshot_download fetches at once (its own default)
DOWNLOAD_CHUNK = 1 << 20  # bytes huggingface_hub reads from a response at a time (see limit_download_chunk)
# Never fetched: byte code someone committed along with a build.
IGNORE_PATTERNS = ("*.pyc", "__pycache__/*", "*/__pycache__/*")
_VERSION_REF = re.compile(r"^v(\d+(?:\.\d+)*)$")
_COMMIT_HASH = re.compile(r"[0-9a-f]{40}")  # a full commit id, as huggingface_hub recognises one
_TRUE = {"1", "on", "yes", "true"}

# (file, files done, files total). snapshot_download downloads concurrently and reports only a count of finished
# files, so ``file`` is always "" (kept so that callers written for per-file names keep working).
ProgressCallback = Callable[[str, int, int], None]
# (bytes written to the cache so far, bytes expected so far): the total grows as downloads start.
BytesProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True)
class HubSettings:
    """The environment as ``huggingface_hub`` reads it, captured once per command (``from_env`` raises ``HubError``
    for an HF_ENDPOINT that is not an http(s) URL)."""

    endpoint: str | None
    token: str | None
    offline: bool
    cache_dir: Path
    assets_dir: Path  # huggingface_hub's cache for downstream libraries' own files (HF_ASSETS_CACHE)
    # Why only the cache is used (``offline``): HF_HUB_OFFLINE, or the Hub found unreachable (``unreachable``).
    offline_reason: str = "HF_HUB_OFFLINE is set"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> HubSettings:
        env = os.environ if environ is None else environ
        hf_home = Path(env.get("HF_HOME", Path(env.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "huggingface"))
        cache = Path(env.get("HF_HUB_CACHE", env.get("HUGGINGFACE_HUB_CACHE", hf_home / "hub")))
        assets = Path(env.get("HF_ASSETS_CACHE", hf_home / "assets"))
        offline = env.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE
        endpoint = env.get("HF_ENDPOINT") or None
        problem = None if endpoint is None else url_problem(endpoint, ("http", "https"))
        if problem is not None:
            raise HubError(f"HF_ENDPOINT {printable(redact(endpoint or ''))} is not usable: {problem}; expected "
                           "http(s)://host[:port], the Hub or a mirror of it")
        return cls(endpoint, env.get("HF_TOKEN") or None, offline, cache, assets)

    def api(self) -> HfApi:
        from huggingface_hub import HfApi

        answer_deadline.bound_huggingface_hub()  # every request HfApi sends ends at its deadline
        return HfApi(endpoint=self.endpoint, token=self.token)

    def unreachable(self, reason: str) -> HubSettings:
        """These settings, cache only from now on: the Hub did not answer (``reason``), and asking it again for each
        file would only repeat the failure."""
        return replace(self, offline=True, offline_reason=reason)


@dataclass(frozen=True)
class VersionRef:
    """A version tag (``v1.2.3``) or version branch (``v1``) and the commit it points to."""

    version: Version
    name: str
    commit: str
    kind: str  # "tag" or "branch"; "ref" when only huggingface_hub's cache names it (it does not say which)


@dataclass(frozen=True)
class Snapshot:
    """Downloaded (or cached) files of one commit: ``root/build/<variant>/...`` (``root`` does not exist when no
    file matched the patterns)."""

    repo_id: str
    repo_type: str
    commit: str
    root: Path
    blobs: Path  # the cache's blobs/ folder: snapshot files are symlinks into it


def parse_version_spec(spec: str) -> SpecifierSet:
    """``"1"`` → ``==1.*`` (a bare major, as ``kernels`` takes it); ``"0.1.0"`` → ``==0.1.0`` (a bare version, the
    form users type and ``kernels to-wheel`` took); otherwise a PEP 440 specifier set."""
    text = spec.strip()
    if text.isdigit():
        return SpecifierSet(f"=={int(text)}.*")
    try:
        return SpecifierSet(f"=={Version(text)}")
    except InvalidVersion:
        pass
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
    return ref_listing.version_named(_VERSION_REF, name)


def pick_version(refs: list[VersionRef], spec: str, repo_id: str) -> VersionRef:
    specifier = parse_version_spec(spec)
    for ref in refs:
        if specifier.contains(ref.version, prereleases=True):
            return ref
    available = ", ".join(r.name for r in refs) or "none"
    raise RevisionNotFound(f"{repo_id}: no version tag or branch matches {spec!r} (available: {available})")


def cache_folder(settings: HubSettings, repo_id: str, repo_type: str) -> Path:
    # huggingface_hub's file_download.repo_folder_name, spelled out: that module costs ~0.2 s to import, which is
    # most of a rerun of a pinned commit (tests/kernelwheel/hub/test_client.py checks that both name the same folder).
    from huggingface_hub import constants

    return settings.cache_dir / constants.REPO_ID_SEPARATOR.join([f"{repo_type}s", *repo_id.split("/")])


def snapshot_in_cache(settings: HubSettings, repo_id: str, repo_type: str, commit: str) -> Snapshot:
    """Where huggingface_hub's cache keeps ``commit``'s files (whether or not they are there yet)."""
    root = cache_folder(settings, repo_id, repo_type) / "snapshots" / commit
    return Snapshot(repo_id, repo_type, commit, root, root.parent.parent / "blobs")


def _cached_refs(settings: HubSettings, repo_id: str) -> tuple[str, dict[str, str]] | None:
    # Hand-written on purpose: huggingface_hub's public cache API, scan_cache_dir(), stats every file of every
    # cached repo and drops a whole repo as "corrupted" when one ref names a commit without a snapshot folder,
    # which is what snapshot_download leaves after fetching a ref (e.g. main) where no file matched the patterns.
    # The refs/<name> file layout read here is the one snapshot_download writes.
    for repo_type in REPO_TYPES:
        refs_dir = cache_folder(settings, repo_id, repo_type) / "refs"
        if refs_dir.is_dir():
            refs = {p.name: p.read_text().strip() for p in refs_dir.iterdir() if p.is_file()}
            return repo_type, refs
    return None


def _is_missing(exc: BaseException) -> bool:
    """An answer meaning "no such repository of this type" (so the next repo type is worth a try)."""
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
    )

    if isinstance(exc, LocalEntryNotFoundError):
        return False  # an EntryNotFoundError too, but it means "not in the cache", not "not on the Hub"
    if isinstance(exc, (RepositoryNotFoundError, EntryNotFoundError)):
        return True
    response = getattr(exc, "response", None)
    return isinstance(exc, HfHubHTTPError) and response is not None and response.status_code in (401, 404)


def list_version_refs(api: HfApi, settings: HubSettings, repo_id: str) -> tuple[str, list[VersionRef]]:
    """The repo type that answered and its version refs (offline: the recorded listing, ``cached_version_refs``)."""
    if settings.offline:
        return cached_version_refs(settings, repo_id)
    listing = list_refs(api, settings, repo_id)
    return listing.repo_type, version_refs(listing.tags.items(), listing.branches.items())


def cached_version_refs(settings: HubSettings, repo_id: str) -> tuple[str, list[VersionRef]]:
    """The version refs of the last online listing (``recorded_refs``); without one, the names huggingface_hub's
    cache keeps under ``refs/``, whose kind (tag or branch) it does not record: "ref"."""
    listing = recorded_refs(settings, repo_id)
    if listing is not None:
        return listing.repo_type, version_refs(listing.tags.items(), listing.branches.items())
    cached = _cached_refs(settings, repo_id)
    if cached is None:
        raise OfflineCacheMiss(
            f"{repo_id}: {settings.offline_reason} and {settings.cache_dir} has no refs for it; run once online "
            "with the same --version, or pass --revision <commit>"
        )
    repo_type, refs = cached
    return repo_type, [replace(ref, kind="ref") for ref in version_refs([], refs.items())]


def listing_path(settings: HubSettings, repo_id: str) -> Path:
    """Where ``list_refs`` records ``repo_id``'s listing: hub2wheel's corner of huggingface_hub's assets cache."""
    return _assets_folder(settings, repo_id.replace("/", "--"), "refs") / "listing.json"


def recorded_refs(settings: HubSettings, repo_id: str) -> ref_listing.RefListing | None:
    """The tags and branches of ``repo_id`` as the last online ``list_refs`` saw them; None when never listed."""
    return ref_listing.load(listing_path(settings, repo_id))


def list_refs(api: HfApi, settings: HubSettings, repo_id: str) -> ref_listing.RefListing:
    """Every tag and branch of ``repo_id``, asked of the Hub and recorded for later offline runs (``recorded_refs``).
    ``RepositoryNotFound`` when no repo type has it; ``HubError`` when the Hub does not answer."""
    for repo_type in REPO_TYPES:
        try:
            git_refs = api.list_repo_refs(repo_id, repo_type=repo_type)
        except Exception as exc:
            if _is_missing(exc):
                continue
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise HubError(f"{repo_id}: cannot list refs on {api.endpoint}: {reason}") from None
        listing = ref_listing.RefListing(
            repo_type, {t.name: t.target_commit for t in git_refs.tags},
            {b.name: b.target_commit for b in git_refs.branches}, datetime.now(timezone.utc))
        ref_listing.save(listing_path(settings, repo_id), listing)
        return listing
    raise RepositoryNotFound(
        f"{repo_id}: no such kernel or model repository on {api.endpoint} (or HF_TOKEN cannot see it)"
    )


def resolve_version(api: HfApi, settings: HubSettings, repo_id: str, spec: str) -> tuple[str, VersionRef]:
    """``--version``: the newest ``v<version>`` tag or branch matching ``spec``."""
    repo_type, refs = list_version_refs(api, settings, repo_id)
    return repo_type, pick_version(refs, spec, repo_id)


def _progress_class(on_file: ProgressCallback | None, on_bytes: BytesProgressCallback | None = None) -> type[tqdm]:
    """A ``tqdm_class`` for snapshot_download: its bars stay silent (the caller draws its own), the one that
    counts files (the only one whose unit is not bytes) reports to ``on_file``, and the one that sums the bytes
    written by every download ("Reconstructing ...") to ``on_bytes``."""
    from tqdm.auto import tqdm

    # tqdm ships no type information (pyproject.toml's mypy override), so to mypy its class is Any. Subclassing the
    # real tqdm, not mimicking it, keeps every method snapshot_download calls on its bars.
    class _Progress(tqdm):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self._counts_files = on_file is not None and kwargs.get("unit", "it") != "B"
            self._counts_bytes = (on_bytes is not None and kwargs.get("unit") == "B"
                                  and str(kwargs.get("desc", "")).startswith("Reconstructing"))
            self._done = 0
            super().__init__(*args, **{**kwargs, "disable": True})
            if self._counts_files:
                self._report()

        def _report(self) -> None:
            if on_file is not None:
                on_file("", self._done, int(self.total or 0))

        def update(self, n: float | None = 1) -> bool | None:
            if self._counts_files:
                self._done += int(n or 0)  # a disabled tqdm does not count: keep our own
                self._report()
            elif self._counts_bytes and on_bytes is not None:
                self._done += int(n or 0)
                on_bytes(self._done, int(self.total or 0))  # snapshot_download raises .total as files start
            result: bool | None = super().update(n)
            return result

    return _Progress


def limit_download_chunk() -> None:
    """huggingface_hub reads each response in DOWNLOAD_CHUNK_SIZE (10 MiB) pieces, and httpx keeps two or three of
    them per connection: 8 downloads of large files held ~280 MB. 1 MiB pieces hold ~60 MB at the same speed
    (benchmarks/NOTES.md). The constant is read at every download, so setting it before downloading is enough."""
    from huggingface_hub import constants

    constants.DOWNLOAD_CHUNK_SIZE = min(constants.DOWNLOAD_CHUNK_SIZE, DOWNLOAD_CHUNK)
    answer_deadline.bound_huggingface_hub()  # called before every download: each answer ends at its deadline


def _download(settings: HubSettings, repo_id: str, repo_type: str, revision: str, patterns: list[str],
              on_file: ProgressCallback | None, max_workers: int,
              on_bytes: BytesProgressCallback | None = None) -> Path:
    limit_download_chunk()
    from huggingface_hub import snapshot_download

    return Path(
        snapshot_download(
            repo_id,
            repo_type=repo_type,
            revision=revision,
            allow_patterns=patterns,
            ignore_patterns=list(IGNORE_PATTERNS),
            cache_dir=settings.cache_dir,
            endpoint=settings.endpoint,
            token=settings.token,
            local_files_only=settings.offline,
            max_workers=max_workers,
            tqdm_class=_progress_class(on_file, on_bytes),
        )
    )


def _not_found(api: HfApi, repo_id: str, revision: str) -> HubError:
    # Some servers (olah) answer 401 for an unknown revision of a known repo: ask for the refs to tell them apart.
    for repo_type in REPO_TYPES:
        try:
            refs = api.list_repo_refs(repo_id, repo_type=repo_type)
        except Exception:
            continue
        names = ", ".join(sorted(r.name for r in [*refs.branches, *refs.tags])) or "none"
        return RevisionNotFound(f"{repo_id}: no branch, tag or commit {revision!r} (branches and tags: {names})")
    return RepositoryNotFound(
        f"{repo_id}: no such kernel or model repository on {api.endpoint} (or HF_TOKEN cannot see it)"
    )


def fetch(
    api: HfApi,
    settings: HubSettings,
    repo_id: str,
    revision: str,
    *,
    patterns: Iterable[str] = ("build/*",),
    on_file: ProgressCallback | None = None,
    max_workers: int = DOWNLOAD_WORKERS,
    on_bytes: BytesProgressCallback | None = None,
) -> Snapshot:
    """Make the files of ``repo_id@revision`` that match ``patterns`` available in the cache (only from the cache
    when offline); files already cached are not downloaded again."""
    from huggingface_hub.errors import IncompleteSnapshotError, LocalEntryNotFoundError, RevisionNotFoundError

    allow = list(patterns)
    # Each repo type is tried in turn; a failure is only reported when no type serves the files.
    failure: HubError | None = None
    incomplete: IncompleteSnapshotError | None = None
    for repo_type in REPO_TYPES:
        try:
            root = _download(settings, repo_id, repo_type, revision, allow, on_file, max_workers, on_bytes)
        except RevisionNotFoundError:
            raise RevisionNotFound(f"{repo_id}: no branch, tag or commit {revision!r}") from None
        except IncompleteSnapshotError as exc:
            incomplete = exc  # offline or the Hub unreachable, and the cache has this commit but not every file
            continue
        except LocalEntryNotFoundError as exc:
            # Not in the cache; online, the Hub's answer that snapshot_download did not pass on is the cause.
            cause = exc.__cause__
            if not settings.offline and cause is not None and not _is_missing(cause):
                failure = failure or HubError(f"{repo_id}@{revision}: request to {api.endpoint} failed: {cause}")
            continue
        except Exception as exc:
            if not _is_missing(exc):
                failure = failure or HubError(f"{repo_id}@{revision}: fetching from {api.endpoint} failed: {exc}")
            continue
        snapshot = Snapshot(repo_id, repo_type, root.name, root, root.parent.parent / "blobs")
        if not settings.offline:
            record_complete(settings, snapshot, revision, allow)
        return snapshot
    if failure is not None:
        if incomplete is not None:
            raise HubError(f"{failure}; the cache holds only part of the files ({incomplete})")
        raise failure
    if incomplete is not None or settings.offline:
        reason = settings.offline_reason if settings.offline else f"{api.endpoint} cannot be reached"
        held = "no snapshot" if incomplete is None else f"only part of the files ({incomplete})"
        raise OfflineCacheMiss(
            f"{repo_id}@{revision}: {reason} and {settings.cache_dir} holds {held} matching {', '.join(allow)}; "
            "run the same command once online (without HF_HUB_OFFLINE) to fill the cache"
        )
    raise _not_found(api, repo_id, revision)


# A complete snapshot, recorded after snapshot_download returned it online: (repo, revision, patterns) → the repo
# type that served it, the commit and every file it holds. When every recorded file is still in the cache, a rerun
# skips snapshot_download (with a commit whose files are all cached, it downloads nothing) and
# * for a commit id (``--revision <sha>``, a kernels.lock entry) asks nothing at all, online or offline: a commit's
#   files never change, and huggingface_hub's own hf_hub_download serves a cached file of a commit id without a
#   request too;
# * for a branch or tag asks the Hub one HEAD for the revision's commit (what snapshot_download's repo_info call is
#   for) and uses the record only if it is the recorded commit.
_RECORD_FORMAT = 1
_RECORD_MAX_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class _Record:
    snapshot: Snapshot
    files: list[str]


def _record_path(settings: HubSettings, repo_id: str, revision: str, patterns: list[str]) -> Path:
    key = hashlib.sha256(json.dumps([revision, patterns, list(IGNORE_PATTERNS)]).encode()).hexdigest()[:32]
    return _assets_folder(settings, repo_id.replace("/", "--"), "snapshots") / f"{key}.json"


def record_complete(settings: HubSettings, snapshot: Snapshot, revision: str, patterns: list[str]) -> None:
    files = sorted(str(p.relative_to(snapshot.root)) for p in snapshot.root.rglob("*") if p.is_file()) \
        if snapshot.root.is_dir() else []
    json_cache.save(_record_path(settings, snapshot.repo_id, revision, patterns), {"format": _RECORD_FORMAT},
                    {"repo_type": snapshot.repo_type, "commit": snapshot.commit, "files": files})


def _load_record(settings: HubSettings, repo_id: str, revision: str, patterns: list[str]) -> _Record | None:
    """The recorded snapshot, if it is well formed and every file it lists is still in the cache."""
    record = json_cache.load(_record_path(settings, repo_id, revision, patterns), {"format": _RECORD_FORMAT},
                             max_bytes=_RECORD_MAX_BYTES, max_depth=4)
    if record is None:
        return None
    repo_type, commit, files = record.get("repo_type"), record.get("commit"), record.get("files")
    if repo_type not in REPO_TYPES or not isinstance(commit, str) or not _COMMIT_HASH.fullmatch(commit) \
            or not isinstance(files, list) or not files or not all(isinstance(f, str) for f in files):
        return None
    snapshot = snapshot_in_cache(settings, repo_id, str(repo_type), commit)
    if not all((snapshot.root / f).is_file() for f in files):
        return None
    return _Record(snapshot, files)


def _head_commit(settings: HubSettings, repo_id: str, repo_type: str, revision: str, filename: str) -> str:
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    answer_deadline.bound_huggingface_hub()
    url = hf_hub_url(repo_id, filename, repo_type=None if repo_type == "model" else repo_type, revision=revision,
                     endpoint=settings.endpoint)
    commit = get_hf_file_metadata(url, token=settings.token, endpoint=settings.endpoint).commit_hash
    if not commit:
        raise HubError(f"{url}: no commit in the answer")
    return commit


def _commit_of(settings: HubSettings, repo_id: str, repo_type: str, revision: str,
               filename: str) -> str | revision_probe.Answer | None:
    """The commit the Hub resolves ``revision`` to, ``NO_SUCH_REPOSITORY``, ``TIMED_OUT``, or None (any other
    answer, or none): asked through the standard library first (``revision_probe``: huggingface_hub's import alone
    costs more than the rest of a rerun), through huggingface_hub when that cannot tell."""
    answer = revision_probe.ask(settings.endpoint, settings.token, repo_id, repo_type, revision, filename)
    if answer is not None:
        return answer
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        return _head_commit(settings, repo_id, repo_type, revision, filename)
    except RepositoryNotFoundError as exc:
        return None if isinstance(exc, GatedRepoError) else revision_probe.NO_SUCH_REPOSITORY
    except Exception:
        return None


def _still_resolves(settings: HubSettings, repo_id: str, revision: str, record: _Record) -> bool:
    """The Hub resolves ``revision`` to the recorded commit, and repo types that ``fetch`` tries before the recorded
    one still answer "no such repository". Any other answer: ``fetch`` asks again, and reports it."""
    repo_type, commit, filename = record.snapshot.repo_type, record.snapshot.commit, record.files[0]
    for earlier in REPO_TYPES[:REPO_TYPES.index(repo_type)]:
        if _commit_of(settings, repo_id, earlier, revision, filename) is not revision_probe.NO_SUCH_REPOSITORY:
            return False  # that type answers now, or might: fetch decides
    return _commit_of(settings, repo_id, repo_type, revision, filename) == commit


def cached_fetch(settings: HubSettings, repo_id: str, revision: str, *,
                 patterns: Iterable[str] = ("build/*",)) -> Snapshot | None:
    """What ``fetch`` would return, without snapshot_download, when an earlier online ``fetch`` of the same
    ``repo_id``, ``revision`` and ``patterns`` recorded a complete snapshot whose files are all still in the cache:
    at once for a commit id, after one HEAD (two for a model repository; ``revision_probe``) for a branch or tag.
    None: call ``fetch``."""
    record = _load_record(settings, repo_id, revision, list(patterns))
    if record is None:
        return None
    if _COMMIT_HASH.fullmatch(revision):
        return record.snapshot if record.snapshot.commit == revision else None
    if settings.offline or not _still_resolves(settings, repo_id, revision, record):
        return None
    return record.snapshot


def _assets_folder(settings: HubSettings, namespace: str, subfolder: str = "default") -> Path:
    """hub2wheel's ``namespace/subfolder`` in huggingface_hub's assets cache, created when missing."""
    from huggingface_hub import cached_assets_path

    try:
        return cached_assets_path("hub2wheel", namespace=namespace, subfolder=subfolder, assets_dir=settings.assets_dir)
    except (OSError, ValueError) as exc:  # ValueError: a file where one of its folders should be
        raise HubError(f"huggingface_hub's assets cache {settings.assets_dir} (HF_HOME, HF_ASSETS_CACHE) cannot "
                       f"be used: {one_line(exc)}") from None


def digest_cache_file(settings: HubSettings) -> Path:
    """Where hub2wheel keeps file digests between runs (``digests.save_digest_cache``), in huggingface_hub's assets
    cache beside the files they describe."""
    return _assets_folder(settings, "file-digests") / "sha256.json"


def elf_verdict_file(settings: HubSettings) -> Path:
    """Where hub2wheel keeps ELF verdicts between runs (``elf.save_verdicts``), keyed by the files' content sha256."""
    return digest_cache_file(settings).with_name("elf-verdicts.json")


def commit_date(settings: HubSettings, snapshot: Snapshot) -> datetime:
    """When ``snapshot.commit`` was made (the Hub's ``lastModified`` at that revision), in UTC.

    Wheels built from a version branch or a commit carry it in their version, so it must be the same offline: the
    first online answer is kept in huggingface_hub's assets cache (``cached_assets_path``, the place it offers to
    libraries built on it), one small file per commit, and offline runs (and reruns, without importing HfApi) read
    it from there.
    """
    folder = _assets_folder(settings, snapshot.repo_id.replace("/", "--"), "commit-dates")
    record = folder / snapshot.commit
    if record.is_file():
        try:
            return datetime.fromisoformat(record.read_text().strip()).astimezone(timezone.utc)
        except ValueError:
            pass  # damaged: ask again (or fail below when offline)
    if settings.offline:
        raise OfflineCacheMiss(
            f"{snapshot.repo_id}@{snapshot.commit[:12]}: {settings.offline_reason} and the commit's date (part of the "
            f"wheel version for a branch or commit) is not in {folder}; run once online, or pass --kernel-version"
        )
    api = settings.api()
    try:
        info = api.repo_info(snapshot.repo_id, repo_type=snapshot.repo_type, revision=snapshot.commit)
    except Exception as exc:
        raise HubError(f"{snapshot.repo_id}@{snapshot.commit[:12]}: cannot read the commit's date from "
                       f"{api.endpoint}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    when = getattr(info, "last_modified", None)
    if not isinstance(when, datetime):
        raise HubError(f"{snapshot.repo_id}@{snapshot.commit[:12]}: {api.endpoint} gives no date for the commit; "
                       "pass --kernel-version")
    when = when.astimezone(timezone.utc) if when.tzinfo else when.replace(tzinfo=timezone.utc)
    write_atomic(record, when.isoformat().encode())
    return when
