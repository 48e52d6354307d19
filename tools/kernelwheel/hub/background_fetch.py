"""Fetching a revision's ``build/`` files in the background, so that conversion starts before the download ends.

``hub.fetch`` returns when the last file is in, and a cold run then converts for about as long again. Here:

1. every variant's ``metadata.json`` (and signature bundle) comes first, through ``hub.fetch`` itself: the revision
   is resolved with the same errors, and huggingface_hub records the ref and the commit's tree listing (by which
   a later offline run tells a complete snapshot from a partial one) exactly as for a whole fetch; kernel-depends
   can be read before any variant converts;
2. the files matching the patterns are listed at that commit (``list_repo_tree``, the listing snapshot_download
   makes) and each goes through ``hf_hub_download`` at the commit (snapshot_download's call per file: the same
   cache layout and locks) on ``DOWNLOAD_WORKERS`` threads, noarch variants first
   (the noarch plan compares them), then the others by name;
3. ``wait(variant)`` returns once that variant's files are all in; ``close`` waits for the rest and, when every
   file came, records the snapshot for reruns as ``hub.fetch`` does.

Offline, or when the listing cannot be had, ``start`` returns None and callers use ``hub.fetch``.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from kernelwheel.format.variants import Variant
from kernelwheel.hub import client as hub
from kernelwheel.hub.recorded_snapshots import record_complete
from kernelwheel.hub.settings import IGNORE_PATTERNS, HubSettings, snapshot_in_cache
from kernelwheel.io.errors import HubError, InvalidVariantName, OfflineCacheMiss

# (bytes written to the cache so far, bytes expected so far); (files done, files total).
BytesProgress = Callable[[int, int], None]
FilesProgress = Callable[[int, int], None]
_METADATA_FILES = ("metadata.json", "metadata.json.sigstore")


class _Cancelled(Exception):
    """Raised in a download thread, from huggingface_hub's progress callback, to stop that download."""


@dataclass
class _Group:
    """The files one ``wait`` stands for, and the first failure among them (a wait returns when all finished)."""

    pending: int
    done: threading.Event = field(default_factory=threading.Event)
    error: HubError | None = None


@dataclass(frozen=True)
class Listing:
    """What ``repo_id@revision`` holds under the patterns: the repo type that answered, the commit, the files."""

    repo_type: str
    commit: str
    files: tuple[str, ...]


def metadata_patterns(patterns: Sequence[str]) -> list[str]:
    """``build/<glob>/*`` → the metadata files of the variants it matches (``build/*`` → every variant's)."""
    folders = ["build/*/" if p == "build/*" else p.removesuffix("*") for p in patterns if p.endswith("/*")]
    return [folder + name for folder in folders for name in _METADATA_FILES]


class _DropNoMatch(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("No files matched")


@contextlib.contextmanager
def _no_match_is_quiet() -> Iterator[None]:
    """snapshot_download logs a warning when no file matches the patterns (shown on stderr by huggingface_hub's
    default logging): true of the metadata alone for a build made before metadata.json, and not worth a line."""
    logger, drop = logging.getLogger("huggingface_hub._snapshot_download"), _DropNoMatch()
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


def list_files(settings: HubSettings, repo_id: str, revision: str, patterns: Sequence[str]) -> Listing | None:
    """Resolve ``revision`` and fetch every variant's metadata the way ``hub.fetch`` fetches (the same errors for an
    unknown repository or revision; huggingface_hub records the ref and the commit's tree listing, by which an
    offline run knows an incomplete snapshot), then list the files matching ``patterns``. None offline, when no file
    matches, when the listing fails, or when the Hub does not answer (``hub.fetch`` then asks again, or only the
    cache, and reports it)."""
    if settings.offline:
        return None
    api = settings.api()
    try:
        with _no_match_is_quiet():  # a build without metadata.json is valid; its variants' other files still come
            snapshot = hub.fetch(api, settings, repo_id, revision, patterns=metadata_patterns(patterns))
    except OfflineCacheMiss:
        if not settings.as_found().offline:
            raise
        return None  # the Hub does not answer: hub.fetch says what the cache lacks, for the patterns asked
    from huggingface_hub import RepoFile

    # The matching snapshot_download applies (documented among huggingface_hub's utilities; its utils package
    # re-exports it without __all__, hence the ignore).
    from huggingface_hub.utils import filter_repo_objects  # type: ignore[attr-defined]

    try:
        tree = api.list_repo_tree(repo_id, recursive=True, revision=snapshot.commit, repo_type=snapshot.repo_type)
        paths = [entry.path for entry in tree if isinstance(entry, RepoFile)]
    except Exception:
        return None
    files = tuple(filter_repo_objects(paths, allow_patterns=list(patterns), ignore_patterns=list(IGNORE_PATTERNS)))
    return Listing(snapshot.repo_type, snapshot.commit, files) if files else None


def _variant_of(path: str) -> str | None:
    parts = PurePosixPath(path).parts
    return parts[1] if len(parts) >= 3 and parts[0] == "build" else None


def _is_variant_metadata(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return len(parts) == 3 and parts[0] == "build" and parts[2] in _METADATA_FILES


def _is_noarch(name: str) -> bool:
    try:
        return Variant.parse(name).arch is None
    except InvalidVariantName:
        return False


def download_order(files: Iterable[str]) -> list[str]:
    """Metadata of every variant first, then whole variants (noarch ones first, then by name), then anything else."""
    def key(path: str) -> tuple[int, str, str]:
        variant = _variant_of(path)
        if variant is None:
            return (3, "", path)
        if _is_variant_metadata(path):
            return (0, variant, path)
        return (1 if _is_noarch(variant) else 2, variant, path)

    return sorted(files, key=key)


class BackgroundFetch:
    """The files of one listed commit, downloading on worker threads; see the module docstring."""

    def __init__(self, settings: HubSettings, repo_id: str, revision: str, patterns: Sequence[str],
                 listing: Listing, *, on_bytes: BytesProgress | None = None, on_files: FilesProgress | None = None,
                 max_workers: int = hub.DOWNLOAD_WORKERS) -> None:
        self._settings, self._repo_id, self._revision, self._patterns = settings, repo_id, revision, list(patterns)
        self._listing = listing
        self.snapshot = snapshot_in_cache(settings, repo_id, listing.repo_type, listing.commit)
        self.variants = tuple(sorted({v for f in listing.files if (v := _variant_of(f)) is not None}))
        self._lock = threading.Lock()
        self._cancelled = threading.Event()
        self._on_bytes, self._on_files = on_bytes, on_files
        self._bytes_done = self._bytes_total = self._files_done = 0
        order = download_order(listing.files)
        per_variant = collections.Counter(_variant_of(f) for f in order)
        self._metadata = _Group(sum(1 for f in order if _is_variant_metadata(f)))
        self._groups = {v: _Group(per_variant[v]) for v in self.variants}
        self._all = _Group(len(order))
        for group in (self._metadata, *self._groups.values(), self._all):
            if group.pending == 0:
                group.done.set()
        hub.limit_download_chunk()
        self._bytes_class = self._bytes_bar()  # one class for every file's progress bars
        self._pool = ThreadPoolExecutor(max_workers, thread_name_prefix="download")
        self._futures: list[Future[None]] = []
        for path in order:  # the pool takes work in submission order
            future = self._pool.submit(self._download, path)
            future.add_done_callback(functools.partial(self._finished, path))
            self._futures.append(future)

    def _download(self, path: str) -> None:
        from huggingface_hub import hf_hub_download

        hf_hub_download(self._repo_id, path, repo_type=self._listing.repo_type, revision=self._listing.commit,
                        cache_dir=self._settings.cache_dir, endpoint=self._settings.endpoint,
                        token=self._settings.token, tqdm_class=self._bytes_class)

    def _bytes_bar(self) -> Any:
        """A ``tqdm_class`` for hf_hub_download: silent, each bar's bytes added to this fetch's totals."""
        from tqdm.auto import tqdm

        fetch = self

        class _Bytes(tqdm):  # type: ignore[misc]  # tqdm ships no types; subclassing keeps every method it calls
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                # Xet downloads open a second bar for the bytes on the wire: count what lands in the cache only.
                self._counts = kwargs.get("unit") == "B" and not str(kwargs.get("desc", "")).endswith("bytes")
                super().__init__(*args, **{**kwargs, "disable": True})
                if self._counts:
                    fetch._add_bytes(0, int(kwargs.get("total") or 0) - int(kwargs.get("initial") or 0))

            def update(self, n: float | None = 1) -> bool | None:
                if fetch._cancelled.is_set():  # called per chunk: a download in flight stops here on cancel()
                    raise _Cancelled()
                if self._counts:
                    fetch._add_bytes(int(n or 0), 0)
                result: bool | None = super().update(n)
                return result

        return _Bytes

    def _add_bytes(self, done: int, total: int) -> None:
        with self._lock:
            self._bytes_done += done
            self._bytes_total += total
            done_now, total_now = self._bytes_done, self._bytes_total
        if self._on_bytes is not None:
            self._on_bytes(done_now, total_now)

    def _finished(self, path: str, future: Future[None]) -> None:
        where = f"{self._repo_id}@{self._listing.commit[:12]}: {path}"
        error = None
        if future.cancelled() or self._cancelled.is_set():
            error = HubError(f"{where}: not downloaded (the run was stopped)")
        elif (exc := future.exception()) is not None:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            error = HubError(f"{where}: download from {self._settings.endpoint or 'the Hub'} failed: {first}")
        variant = _variant_of(path)
        groups = [self._all, *([self._groups[variant]] if variant is not None else [])]
        if _is_variant_metadata(path):
            groups.append(self._metadata)
        with self._lock:
            if error is None:  # files in the cache: a failed or stopped one is not done
                self._files_done += 1
            files_done = self._files_done
            for group in groups:
                group.pending -= 1
                if error is not None and group.error is None:
                    group.error = error
                if group.pending == 0:  # every file of the group finished, failed or not
                    group.done.set()
        if self._on_files is not None:
            self._on_files(files_done, len(self._futures))

    def _wait(self, group: _Group) -> None:
        group.done.wait()
        if group.error is not None:
            raise group.error

    def wait_metadata(self) -> None:
        """Every variant's ``metadata.json`` (and signature bundle) is in the cache; HubError if one failed."""
        self._wait(self._metadata)

    def wait(self, variant: str) -> None:
        """Every file of ``build/<variant>/`` is in the cache; HubError if one of them failed."""
        group = self._groups.get(variant)
        if group is not None:
            self._wait(group)

    @property
    def files_total(self) -> int:
        return len(self._futures)

    def close(self) -> bool:
        """Wait for every file; when all came, record the ref and the snapshot as ``hub.fetch`` does. True then."""
        self._pool.shutdown(wait=True)
        if self._all.error is not None:
            return False
        record_complete(self._settings, self.snapshot, self._revision, self._patterns)
        return True

    def cancel(self) -> None:
        """Stop: files not started are dropped, downloads in flight stop at their next chunk (huggingface_hub removes
        their partial files); every waiter gets a HubError."""
        self._cancelled.set()
        self._pool.shutdown(wait=True, cancel_futures=True)


def start(settings: HubSettings, repo_id: str, revision: str, patterns: Sequence[str], *,
          on_bytes: BytesProgress | None = None, on_files: FilesProgress | None = None) -> BackgroundFetch | None:
    """The files of ``repo_id@revision`` matching ``patterns``, downloading from now on; None when ``list_files``
    gives no listing (use ``hub.fetch``)."""
    listing = list_files(settings, repo_id, revision, patterns)
    if listing is None:
        return None
    return BackgroundFetch(settings, repo_id, revision, patterns, listing, on_bytes=on_bytes, on_files=on_files)
