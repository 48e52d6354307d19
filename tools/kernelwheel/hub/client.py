"""Talking to the Hugging Face Hub: fetching ``build/<variant>/`` files (with ``background_fetch``, which fetches a
variant at a time on top of this module, the only one that does), and a commit's date. ``versions`` finds the commit
a ``--version`` names; ``recorded_snapshots`` lets a rerun skip the download.

Everything goes through ``huggingface_hub`` (``HfApi`` is passed in, or built from the environment: ``settings``), so
``HF_ENDPOINT``, ``HF_TOKEN``, ``HF_HUB_OFFLINE``, ``HF_HOME``/``HF_HUB_CACHE`` behave as they do for
``huggingface_hub`` itself; they are read when a function is called, not at import. Kernel repositories are tried
as ``repo_type="kernel"`` first (kernels ≥ 0.14), then ``"model"`` (older kernels and mirrors such as olah that do
not serve ``/api/kernels/``).

Files come from ``huggingface_hub.snapshot_download``: it resolves the revision, records ``refs/``, downloads
concurrently and, offline (``HF_HUB_OFFLINE=1``), serves the snapshot from the cache without a request. A miss is
an ``OfflineCacheMiss`` that says what to run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelwheel.hub.recorded_snapshots import record_complete
from kernelwheel.hub.settings import (
    IGNORE_PATTERNS,
    OFFLINE_SET,
    REPO_TYPES,
    HubSettings,
    Snapshot,
    assets_folder,
)
from kernelwheel.io import answer_deadline
from kernelwheel.io.atomic import write_atomic
from kernelwheel.io.errors import HubError, OfflineCacheMiss, RepositoryNotFound, RevisionNotFound

# huggingface_hub is imported where it is used: its constants module parses HF_ENDPOINT on import and raises a bare
# ValueError for a malformed one, which HubSettings.from_env refuses first, in one line. And a rerun never needs
# most of it: huggingface_hub.errors brings httpx (~0.12 s), file_download ~0.08 s more, hf_api (HfApi,
# snapshot_download) ~0.15 s more. A rerun of a branch or tag asks its one HEAD through revision_probe (the standard
# library) and loads none of them unless that answer is not plain.
if TYPE_CHECKING:
    from huggingface_hub import HfApi
    from tqdm import tqdm

DOWNLOAD_WORKERS = 8  # files snapshot_download fetches at once (its own default)
DOWNLOAD_CHUNK = 1 << 20  # bytes huggingface_hub reads from a response at a time (see limit_download_chunk)

# (file, files done, files total). snapshot_download downloads concurrently and reports only a count of finished
# files, so ``file`` is always "" (kept so that callers written for per-file names keep working).
ProgressCallback = Callable[[str, int, int], None]
# (bytes written to the cache so far, bytes expected so far): the total grows as downloads start.
BytesProgressCallback = Callable[[int, int], None]


def is_missing(exc: BaseException) -> bool:
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


def no_such_repository(repo_id: str, endpoint: str) -> RepositoryNotFound:
    return RepositoryNotFound(
        f"{repo_id}: no such kernel or model repository on {endpoint} (or HF_TOKEN cannot see it)")


def repository_exists(api: HfApi, repo_id: str) -> bool | None:
    """Whether ``repo_id`` is a kernel or model repository on ``api``'s Hub, as its refs listing answers (olah
    answers 401 to a plain ``repo_info`` of a repository it serves): False when every repo type answers "no such
    repository", None when the Hub gives no answer that tells."""
    for repo_type in REPO_TYPES:
        try:
            api.list_repo_refs(repo_id, repo_type=repo_type)
        except Exception as exc:
            if is_missing(exc):
                continue
            return None
        return True
    return False


def _not_found(api: HfApi, repo_id: str, revision: str) -> HubError:
    # Some servers (olah) answer 401 for an unknown revision of a known repo: ask for the refs to tell them apart.
    for repo_type in REPO_TYPES:
        try:
            refs = api.list_repo_refs(repo_id, repo_type=repo_type)
        except Exception:
            continue
        names = ", ".join(sorted(r.name for r in [*refs.branches, *refs.tags])) or "none"
        return RevisionNotFound(f"{repo_id}: no branch, tag or commit {revision!r} (branches and tags: {names})")
    return no_such_repository(repo_id, api.endpoint)


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
            if not settings.offline and cause is not None and not is_missing(cause):
                failure = failure or HubError(f"{repo_id}@{revision}: request to {api.endpoint} failed: {cause}")
            continue
        except Exception as exc:
            if not is_missing(exc):
                failure = failure or HubError(f"{repo_id}@{revision}: fetching from {api.endpoint} failed: {exc}")
            continue
        snapshot = Snapshot(repo_id, repo_type, root.name, root, root.parent.parent / "blobs")
        if not settings.offline:
            record_complete(settings, snapshot, revision, allow)
        return snapshot
    found = settings.as_found()  # cache only: HF_HUB_OFFLINE, or the Hub found not answering in this fetch
    if failure is not None and not found.offline:
        if incomplete is not None:
            raise HubError(f"{failure}; the cache holds only part of the files ({incomplete})")
        raise failure
    if incomplete is not None or found.offline:
        reason = found.offline_reason if found.offline else f"{api.endpoint} cannot be reached"
        held = "no snapshot" if incomplete is None else f"only part of the files ({incomplete})"
        again = "run the same command once online (without HF_HUB_OFFLINE) to fill the cache" \
            if found.offline_reason == OFFLINE_SET else "run the same command again once the Hub answers"
        raise OfflineCacheMiss(
            f"{repo_id}@{revision}: {reason} and {settings.cache_dir} holds {held} matching {', '.join(allow)}; "
            f"{again}"
        )
    raise _not_found(api, repo_id, revision)


def commit_date(settings: HubSettings, snapshot: Snapshot) -> datetime:
    """When ``snapshot.commit`` was made (the Hub's ``lastModified`` at that revision), in UTC.

    Wheels built from a version branch or a commit carry it in their version, so it must be the same offline: the
    first online answer is kept in huggingface_hub's assets cache (``cached_assets_path``, the place it offers to
    libraries built on it), one small file per commit, and offline runs (and reruns, without importing HfApi) read
    it from there.
    """
    folder = assets_folder(settings, snapshot.repo_id.replace("/", "--"), "commit-dates")
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
