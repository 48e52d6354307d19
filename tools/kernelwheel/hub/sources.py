"""Where a ``build/`` tree to convert comes from: a local folder, a Hub revision or version, or a ``kernels.lock``.

``Source`` is the conversion's input; each function here yields them, downloading with one progress line per
repository. A revision whose files are not all cached yet is fetched in the background (``background_fetch``): its
``Source`` has ``arrivals``, and conversion starts with the first complete variant; otherwise (offline, a rerun)
``client`` gives the whole snapshot. Hub repositories pass kernels' trusted-publisher gate (``trust``) before any
file is fetched; local folders are not gated."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from packaging.version import Version
from rich.console import Console

from kernelwheel.format import lockfile
from kernelwheel.format.dependency import Dependency
from kernelwheel.hub import background_fetch, ref_listing, versions
from kernelwheel.hub import client as hub
from kernelwheel.hub.recorded_snapshots import cached_fetch, recorded_fetch
from kernelwheel.hub.settings import HubSettings, Snapshot
from kernelwheel.hub.trust import TrustPolicy, check_publisher
from kernelwheel.io.console import ActivityTask, activity, print_step, print_warning
from kernelwheel.io.errors import HubError, OfflineCacheMiss, RepositoryNotFound, ToolError


class Arrivals(Protocol):
    """A ``build/`` tree whose files are still arriving (``background_fetch``): conversion waits per variant."""

    @property
    def variants(self) -> tuple[str, ...]:
        """Every ``build/<variant>/`` there will be."""

    def wait_metadata(self) -> None:
        """Every variant's metadata.json is in place (ToolError when one could not be fetched)."""

    def wait(self, variant: str) -> None:
        """Every file of ``build/<variant>/`` is in place (ToolError when one could not be fetched)."""

    def close(self) -> None:
        """Wait for the rest and finish (called once, when the tree is no longer needed)."""

    def cancel(self) -> None:
        """Stop fetching (Ctrl-C): downloads in flight stop at their next chunk; what did not come makes ``wait``
        fail."""


@contextlib.contextmanager
def cancelled_on_error(arrivals: Arrivals | None) -> Iterator[None]:
    """Until ``convert`` takes a source over, an error (Ctrl-C included) stops its downloads: the process would
    otherwise wait for every queued file before it exits."""
    try:
        yield
    except BaseException:
        if arrivals is not None:
            arrivals.cancel()
        raise


@dataclass(frozen=True)
class Source:
    """A ``build/`` tree to convert and what is known about where it came from."""

    build_dir: Path
    label: str  # "org/name@<commit>" or a path, for messages and the wheel summary
    kernel_name: str  # default distribution base name (repo basename / directory name)
    repo_id: str | None = None  # the Hub repository, for Hub sources
    version: Version | None = None  # a release ref's version (tag v1.2.3): the wheels' version exactly
    series: Version | None = None  # a version branch (v1): the major a build of it belongs to
    commit_date: datetime | None = None  # a Hub commit that is not a release: its date goes into the version
    trusted_roots: tuple[Path, ...] = ()  # where symlinks may point besides the variant (the cache's blobs/)
    locks: Mapping[str, lockfile.VariantLock] | None = None
    arrivals: Arrivals | None = None  # files still downloading: each variant converts as soon as it is complete


def local_source(folder: Path) -> Source:
    """A checkout (or any folder) holding ``build/<variant>/``; symlinks may not leave each variant."""
    if not os.path.isdir(folder):  # False, not OSError, for a name too long or a folder we may not enter
        raise ToolError(f"{folder}: no such directory (expected a folder holding build/<variant>/)")
    return Source(build_dir=folder / "build", label=str(folder), kernel_name=folder.resolve().name)


def _check_trust(settings: HubSettings, repo_id: str, trust: TrustPolicy, console: Console) -> None:
    if trust.allows_without_asking(repo_id):
        return  # no HfApi needed (its import is ~0.15 s of a rerun)
    warning = check_publisher(settings.api(), repo_id, trust, offline=settings.offline)
    if warning is not None:
        print_warning(console, warning)


class _Fetching:
    """A background fetch as ``convert`` waits on it (``convert.Arrivals``), with its progress line: finished, with
    the summary ``hub.fetch`` prints, when conversion closes it."""

    def __init__(self, fetch: background_fetch.BackgroundFetch, task: ActivityTask, downloaded: dict[str, int]):
        self._fetch, self._task, self._downloaded = fetch, task, downloaded

    @property
    def variants(self) -> tuple[str, ...]:
        return self._fetch.variants

    def wait_metadata(self) -> None:
        self._fetch.wait_metadata()

    def wait(self, variant: str) -> None:
        self._fetch.wait(variant)

    def close(self) -> None:
        complete = self._fetch.close()
        files = f"{self._downloaded['files']} files" if complete else \
            f"{self._downloaded['files']} of {self._fetch.files_total} files (see the variants skipped)"
        self._task.finish(f"{files}, {self._downloaded['bytes'] / 2**20:.1f} MiB downloaded")

    def cancel(self) -> None:
        self._fetch.cancel()


def _fetch(settings: HubSettings, repo_id: str, revision: str, patterns: Sequence[str],
           console: Console) -> tuple[Snapshot, Arrivals | None, HubSettings]:
    """The snapshot, complete; or, when its files are still to download, where they will be and a fetch already
    under way (``background_fetch``) that conversion waits on; and the settings for the rest of this source (cache
    only once the Hub is found not answering, which one warning says, naming what the cache gave instead)."""
    cached = cached_fetch(settings, repo_id, revision, patterns=patterns)
    if cached is None and (found := settings.as_found()) is not settings:
        settings = found  # the Hub missed the revision probe's deadline (or refused it): the last recorded snapshot
        cached = recorded_fetch(settings, repo_id, revision, patterns=patterns)
        if cached is not None:
            print_warning(console, f"{settings.offline_reason}; using {repo_id}@{revision} as fetched last, at "
                                   f"commit {cached.commit}, from the cache")
    if cached is not None:
        print_step(console, f"fetching {repo_id}@{revision}: 0 files, 0.0 MiB downloaded (every file already in the "
                            f"cache at commit {cached.commit})")
        return cached, None, settings
    with activity(console) as display:
        task = display.task("fetching", f"{repo_id}@{revision}")
        counts = {"files": 0, "bytes": 0}

        def on_files(done: int, total: int) -> None:
            counts["files"] = done
            task.update(files_done=done, files_total=total)

        def on_bytes(done: int, total: int) -> None:
            counts["bytes"] = done
            task.update(bytes_done=done, bytes_total=total)

        background = background_fetch.start(settings, repo_id, revision, patterns, on_bytes=on_bytes,
                                            on_files=on_files)
        if background is not None:
            return background.snapshot, _Fetching(background, task, counts), settings

        def on_file(_name: str, done: int, total: int) -> None:  # hub.fetch counts files as snapshot_download does
            task.update(files_done=done, files_total=total)
            counts["files"] = total

        snapshot = hub.fetch(settings.api(), settings, repo_id, revision, patterns=patterns, on_file=on_file,
                             on_bytes=on_bytes)
        task.finish(f"{counts['files']} files, {counts['bytes'] / 2**20:.1f} MiB downloaded")
        if (found := settings.as_found()) is not settings:  # huggingface_hub fell back to its cache
            settings = found
            print_warning(console, f"{settings.offline_reason}; using {repo_id}@{revision} as the cache has it, at "
                                   f"commit {snapshot.commit}")
        return snapshot, None, settings


def _list_refs(settings: HubSettings, repo_id: str,
               console: Console) -> tuple[ref_listing.RefListing | None, HubSettings]:
    """``repo_id``'s tags and branches, asked of the Hub (and recorded); offline, the recorded listing. When the Hub
    does not answer: the recorded listing with one warning, and settings that keep the rest of this source to the
    cache (asking again for every file would only repeat the failure). None: offline or the Hub down, and nothing
    recorded; the caller says what it needed the listing for."""
    if settings.offline:
        return versions.recorded_refs(settings, repo_id), settings
    try:
        return versions.list_refs(settings.api(), settings, repo_id), settings
    except RepositoryNotFound:
        raise
    except HubError as exc:
        problem = exc
    settings = settings.unreachable(str(problem).removeprefix(f"{repo_id}: "))
    recorded = versions.recorded_refs(settings, repo_id)
    if recorded is not None:
        print_warning(console, f"{problem}; using its tags and branches as listed {recorded.listed_at:%Y-%m-%d %H:%M} "
                               "UTC and the files in the cache")
    return recorded, settings


def _version_ref(settings: HubSettings, repo_id: str, spec: str,
                 console: Console) -> tuple[versions.VersionRef, ref_listing.RefListing | None, HubSettings]:
    """``--version``: the newest matching ``v<version>`` ref, from the listing ``_list_refs`` gives, else (offline or
    the Hub down, nothing recorded) from the names in huggingface_hub's cache."""
    offline = settings.offline
    listing, settings = _list_refs(settings, repo_id, console)
    if listing is None:
        _, refs = versions.cached_version_refs(settings, repo_id)
        if not offline:  # the Hub did not answer, and no listing of it is recorded
            print_warning(console, f"{repo_id}: {settings.offline_reason}; using the version refs huggingface_hub's "
                                   f"cache names ({', '.join(ref.name for ref in refs) or 'none'}) and its files")
    else:
        refs = versions.version_refs(listing.tags.items(), listing.branches.items())
    return versions.pick_version(refs, spec, repo_id), listing, settings


def _release(settings: HubSettings, repo_id: str, revision: str, commit: str,
             listing: ref_listing.RefListing | None, console: Console) -> Version | None:
    """The release version of ``commit``: ``revision``'s own when it names a release (``v1.2.3``), else that of a
    release tag at the commit, else None (the commit's date names it). A recorded listing that shows such a tag is
    enough (a release tag does not move); otherwise the Hub is asked, and without an answer the recorded listing is
    used. ``OfflineCacheMiss`` when no listing can be had: a version guessed here would name one commit twice."""
    own = ref_listing.release_version(revision)
    if own is not None:
        return own
    for known in (listing, versions.recorded_refs(settings, repo_id)):
        found = None if known is None else ref_listing.release_at(known, commit)
        if found is not None:
            return found[1]
    if listing is None:
        listing, settings = _list_refs(settings, repo_id, console)
    if listing is None:
        why, record = settings.offline_reason, versions.listing_path(settings, repo_id)
        raise OfflineCacheMiss(
            f"{repo_id}@{commit[:12]}: cannot tell whether a release tag points at this commit (a tag names the "
            f"wheels' version): {why}, and no listing of its tags is recorded in {record}; "
            "run once with the Hub reachable (without HF_HUB_OFFLINE), or pass --kernel-version")
    found = ref_listing.release_at(listing, commit)
    return None if found is None else found[1]


def hub_source(
    settings: HubSettings,
    repo_id: str,
    *,
    revision: str | None = None,
    version_spec: str | None = None,
    variant_globs: Sequence[str] = (),
    trust: TrustPolicy,
    console: Console,
    kernel_version_given: bool = False,
) -> Source:
    """``repo_id`` at ``revision`` (default ``main``) or at the newest ``v<version>`` ref matching ``version_spec``;
    its wheels' version is a release tag's wherever one points at the commit (``_release``), whatever named it.
    ``kernel_version_given``: the caller names the version (--kernel-version), so no listing is needed for it."""
    _check_trust(settings, repo_id, trust, console)
    settings = settings.as_found()  # a Hub found not answering earlier in this run (a kernel that needs this one)
    patterns = [f"build/{glob}/*" for glob in variant_globs] or ["build/*"]
    default_revision = revision is None and version_spec is None
    revision = revision or "main"
    series, listing = versions.version_of_ref(revision), None
    if version_spec is not None:
        ref, listing, settings = _version_ref(settings, repo_id, version_spec, console)
        print_step(console, f"{repo_id}: --version {version_spec} → {ref.kind} {ref.name} at {ref.commit}")
        revision, series = ref.name, ref.version
    snapshot, arrivals, settings = _fetch(settings, repo_id, revision, patterns, console)
    with cancelled_on_error(arrivals):
        print_step(console, f"{repo_id}@{revision}: commit {snapshot.commit}")
        if default_revision and arrivals is None and not (snapshot.root / "build").is_dir():
            raise ToolError(f"{repo_id}@main has no build/ directory; kernels publish builds on version branches "
                            "and tags: pass --version <major> (e.g. --version 1) or --revision <branch|tag|commit>")
        release = None if kernel_version_given else \
            _release(settings, repo_id, revision, snapshot.commit, listing, console)
        return _snapshot_source(settings, snapshot, release, series, None, console, arrivals)


def lock_sources(settings: HubSettings, lock_path: Path, *, repo_id: str | None = None,
                 trust: TrustPolicy, console: Console, kernel_version_given: bool = False) -> Iterator[Source]:
    """Every kernel a ``kernels.lock`` pins (only ``repo_id``'s when given), at its locked commit, versioned by the
    release tag at that commit as every other route is (``_release``); an old-format lock also limits the run to its
    variants and checks their hashes."""
    locks = lockfile.load_lockfile(lock_path)
    if repo_id is not None:
        locks = [lock for lock in locks if lock.repo_id == repo_id]
        if not locks:
            raise ToolError(f"{lock_path}: has no entry for {repo_id}")
    for lock in locks:
        _check_trust(settings, lock.repo_id, trust, console)  # before any download of any locked kernel
    for lock in locks:
        locked = lock.variants
        patterns = [f"build/{v}/*" for v in locked] if locked is not None else ["build/*"]
        snapshot, arrivals, found = _fetch(settings.as_found(), lock.repo_id, lock.sha, patterns, console)
        with cancelled_on_error(arrivals):
            print_step(console, f"{lock.repo_id}: locked commit {snapshot.commit}")
            release = None if kernel_version_given else \
                _release(found, lock.repo_id, lock.sha, snapshot.commit, None, console)
            source = _snapshot_source(found, snapshot, release, None, lock.variants, console, arrivals)
        yield source


def _snapshot_source(settings: HubSettings, snapshot: Snapshot, release: Version | None,
                     series: Version | None, locks: Mapping[str, lockfile.VariantLock] | None, console: Console,
                     arrivals: Arrivals | None) -> Source:
    """A release (``_release``) names the wheels' version exactly; a commit without one (a version branch ``v1``,
    ``main``, a commit) gets its date into the version (and ``series``' major), so that distinct builds never share
    a wheel filename."""
    commit_date = None
    if release is None:
        try:
            commit_date = hub.commit_date(settings.as_found(), snapshot)
        except ToolError as exc:  # only fatal if a variant needs it (no --kernel-version): convert says so then
            print_warning(console, exc)
    return Source(
        build_dir=snapshot.root / "build",
        label=f"{snapshot.repo_id}@{snapshot.commit[:12]}",
        kernel_name=snapshot.repo_id.split("/")[-1],
        repo_id=snapshot.repo_id,
        version=release,
        series=series if release is None else None,
        commit_date=commit_date,
        trusted_roots=(snapshot.blobs,),
        locks=locks,
        arrivals=arrivals,
    )


def dependency_source(settings: HubSettings, dependency: Dependency, *, variant_globs: Sequence[str] = (),
                      trust: TrustPolicy, console: Console, kernel_version_given: bool = False) -> Source:
    """A ``kernel-depends`` entry as a Hub source: ``version: N`` is the newest ``vN`` ref (kernels' rule), a
    ``revision`` that branch, tag or commit. The same trust gate applies as to the kernel that needs it."""
    if dependency.version is not None:
        return hub_source(settings, dependency.repo_id, version_spec=str(dependency.version),
                          variant_globs=variant_globs, trust=trust, console=console,
                          kernel_version_given=kernel_version_given)
    return hub_source(settings, dependency.repo_id, revision=dependency.revision, variant_globs=variant_globs,
                      trust=trust, console=console, kernel_version_given=kernel_version_given)
