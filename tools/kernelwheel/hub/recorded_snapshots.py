"""Complete snapshots recorded after an online fetch: a rerun skips snapshot_download while their files are cached."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kernelwheel.hub import revision_probe
from kernelwheel.hub.settings import (
    IGNORE_PATTERNS,
    REPO_TYPES,
    HubSettings,
    Snapshot,
    assets_folder,
    snapshot_in_cache,
)
from kernelwheel.io import answer_deadline, json_cache
from kernelwheel.io.errors import HubError

_COMMIT_HASH = re.compile(r"[0-9a-f]{40}")  # a full commit id, as huggingface_hub recognises one

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
    return assets_folder(settings, repo_id.replace("/", "--"), "snapshots") / f"{key}.json"


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


def recorded_fetch(settings: HubSettings, repo_id: str, revision: str, *,
                   patterns: Iterable[str] = ("build/*",)) -> Snapshot | None:
    """The snapshot an earlier online ``fetch`` of ``repo_id@revision`` recorded complete, while every file of it is
    still in the cache, without asking whether a branch or tag still points there: for a Hub that does not answer
    (the caller says so). None when there is no such record."""
    record = _load_record(settings, repo_id, revision, list(patterns))
    return None if record is None else record.snapshot


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
