"""``kernels.lock`` files, in both formats kernels has written, and the per-variant hash of the old one.

* kernels ≥ 0.17 (read here by the rules of kernels' ``KernelLocks.from_json``, the same in 0.17.2 and 0.19.1 and
  compared with both by tests/kernelwheel/format/test_kernels_releases.py): a JSON list of
  ``{"dependency": {"repo-id": ..., "version": 1 | "revision": ...}, "lock": {"commit": <40 or 64 hex>}}``, no
  other keys, ``version`` and ``revision`` exclusive, no dependency twice. The commit (lowercased, a plain ``str``)
  pins every file; there are no per-variant hashes, so every variant of the commit is converted.
* kernels ≤ 0.16 (kernels 0.17 refuses it, so it is read here): a JSON list of
  ``{"repo_id": ..., "sha": <40 hex>, "variants": {<variant>: {"hash": "sha256-<hex>", "hash_type": ...}}}``
  (``hash_type`` ``git_lfs_concat``).

The ``git_lfs_concat`` hash of a variant is SHA-256 over its files sorted by relative path (as UTF-8 bytes); for
each file the path bytes are followed by the raw bytes of the file's Hub object id: the git blob SHA-1
(``sha1(b"blob <len>\\0" + data)``) or, for a Git LFS file, the SHA-256 of its content. In the Hugging Face cache the
blob a snapshot file links to is named by that id (40 hex = git blob, 64 hex = LFS), which is how ``kernels``
itself tells the two apart; a plain directory is hashed as git blobs.

A lock file is untrusted input: it is read within size and depth limits (``jsonload``), its repo ids must be Hub
repo ids (``huggingface_hub``'s own check) and its variant names plain ASCII folder names (no ``/``, ``..`` or glob
character), since both become download patterns and paths; a safe name that is no variant is skipped later, with
the reason, like any other.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from kernelwheel.format.dependency import parse_dependency
from kernelwheel.format.repo_id import repo_id_problem
from kernelwheel.io.errors import DigestMismatch, InvalidLockfile
from kernelwheel.io.limited_read import read_limited
from kernelwheel.io.untrusted_json import loads_limited

HASH_TYPE = "git_lfs_concat"
_SHA = re.compile(r"^[0-9a-f]{40}$")
_COMMIT = re.compile(r"^(?:[0-9A-Fa-f]{40}|[0-9A-Fa-f]{64})$")  # a git object id, SHA-1 or SHA-256
_HASH = re.compile(r"^sha256-[0-9a-f]{64}$")
_VARIANT_FOLDER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*")
# A lock names a few kernels with a few dozen variants each.
MAX_LOCKFILE_BYTES = 16 * 1024 * 1024
MAX_LOCKFILE_DEPTH = 32


@dataclass(frozen=True)
class VariantLock:
    hash: str
    hash_type: str = HASH_TYPE


@dataclass(frozen=True)
class KernelLock:
    """One locked kernel: its repository, the commit, and (old format only) the hash of each locked variant."""

    repo_id: str
    sha: str
    variants: Mapping[str, VariantLock] | None  # None: a kernels >= 0.17 lock, every variant of the commit


def _is_current(data: object) -> bool:
    """Whether parsed JSON is a kernels >= 0.17 lock: a list with an entry that has ``dependency`` or ``lock``."""
    return isinstance(data, list) and any(isinstance(e, dict) and ("dependency" in e or "lock" in e) for e in data)


def _only_keys(value: dict[str, object], allowed: tuple[str, ...], where: str) -> None:
    unknown = [key for key in value if key not in allowed]
    if unknown:
        raise InvalidLockfile(f"{where}: unknown field {unknown[0]!r} (expected {', '.join(allowed)})")


def _duplicate(key: tuple[str, int | None, str | None], where: str, first: int) -> InvalidLockfile:
    """kernels' own refusal ("duplicate dependency"), naming the repo id and its version or revision: kernels keys its
    locks by dependency, so a second lock for one would silently win or lose."""
    repo_id, version, revision = key
    pin = f"version {version}" if version is not None else f"revision {revision!r}"
    return InvalidLockfile(f"{where}: duplicate dependency: {repo_id} {pin}, already locked by entry {first}; "
                           "expected each dependency locked once")


def _parse_current(data: list[object], source: str) -> list[KernelLock]:
    """A kernels >= 0.17 lock, by ``KernelLocks.from_json``'s rules (one line naming entry and field otherwise)."""
    locks: list[KernelLock] = []
    seen: dict[tuple[str, int | None, str | None], int] = {}
    for i, entry in enumerate(data):
        where = f"{source}: entry {i}"
        if not isinstance(entry, dict):
            raise InvalidLockfile(f"{where}: expected an object with dependency and lock")
        _only_keys(entry, ("dependency", "lock"), where)
        dependency, lock = entry.get("dependency"), entry.get("lock")
        parsed = parse_dependency(dependency, f"{where}: dependency", InvalidLockfile)
        repo_id, version, revision = parsed.repo_id, parsed.version, parsed.revision
        if not isinstance(lock, dict):
            raise InvalidLockfile(f"{where} ({repo_id}): lock must be an object with commit")
        _only_keys(lock, ("commit",), f"{where}: lock")
        commit = lock.get("commit")
        if not isinstance(commit, str) or not _COMMIT.fullmatch(commit):
            raise InvalidLockfile(f"{where} ({repo_id}): lock.commit {commit!r:.80} is not a git commit id (40 or 64 "
                                  "hexadecimal digits)")
        key = (repo_id, version, revision)
        if key in seen:
            raise _duplicate(key, where, seen[key])
        seen[key] = i
        _check_repo_id(repo_id, where)
        locks.append(KernelLock(repo_id, str(commit.lower()), None))
    return locks


def parse_lockfile(text: str, source: str = "kernels.lock") -> list[KernelLock]:
    """Parse and validate the JSON of a lock file (either format)."""
    return _parse(text.encode("utf-8", "surrogateescape"), source)


def _parse(raw: bytes, source: str) -> list[KernelLock]:
    """``raw`` within the size, UTF-8 and depth limits (``loads_limited``), then in either format."""
    data = loads_limited(raw, source, max_bytes=MAX_LOCKFILE_BYTES, max_depth=MAX_LOCKFILE_DEPTH,
                         error=InvalidLockfile)
    if isinstance(data, list) and _is_current(data):
        return _parse_current(data, source)
    if not isinstance(data, list):
        raise InvalidLockfile(f"{source}: expected a JSON list of kernel locks, got {type(data).__name__}")
    locks: list[KernelLock] = []
    for i, entry in enumerate(data):
        where = f"{source}: entry {i}"
        if not isinstance(entry, dict):
            raise InvalidLockfile(f"{where}: expected an object with repo_id, sha and variants")
        missing = [k for k in ("repo_id", "sha", "variants") if k not in entry]
        if missing:
            raise InvalidLockfile(f"{where}: missing {', '.join(missing)}")
        repo_id, sha, variants = entry["repo_id"], entry["sha"], entry["variants"]
        if not isinstance(repo_id, str):
            raise InvalidLockfile(f"{where}: repo_id must be a string, got {type(repo_id).__name__}")
        _check_repo_id(repo_id, where)
        if not isinstance(sha, str) or not _SHA.fullmatch(sha):
            raise InvalidLockfile(f"{where} ({repo_id}): sha {sha!r} is not a 40-hex-digit commit")
        if not isinstance(variants, dict):
            raise InvalidLockfile(f"{where} ({repo_id}): variants must be an object")
        parsed: dict[str, VariantLock] = {}
        for name, lock in variants.items():
            if not _VARIANT_FOLDER.fullmatch(name):
                raise InvalidLockfile(f"{where} ({repo_id}): variant {name!r} is not a plain folder name (ASCII "
                                      "letters, digits, '.', '_', '-'; no '/', '..' or glob characters)")
            if not isinstance(lock, dict) or not isinstance(lock.get("hash"), str):
                raise InvalidLockfile(f"{where} ({repo_id}): variant {name!r} has no hash")
            hash_type = lock.get("hash_type", HASH_TYPE)
            if hash_type != HASH_TYPE:
                raise InvalidLockfile(
                    f"{where} ({repo_id}): variant {name!r} has hash_type {hash_type!r}; only {HASH_TYPE!r} is known"
                )
            if not _HASH.fullmatch(lock["hash"]):
                raise InvalidLockfile(f"{where} ({repo_id}): variant {name!r} hash is not 'sha256-<64 hex>'")
            parsed[name] = VariantLock(lock["hash"], hash_type)
        locks.append(KernelLock(repo_id, sha, MappingProxyType(parsed)))
    return locks


def _check_repo_id(repo_id: str, where: str) -> None:
    problem = repo_id_problem(repo_id)
    if problem is not None:
        raise InvalidLockfile(f"{where}: repo_id: {problem}")


def load_lockfile(path: Path) -> list[KernelLock]:
    try:
        raw = read_limited(path, MAX_LOCKFILE_BYTES)
    except OSError as exc:
        raise InvalidLockfile(f"{path}: cannot be read: {exc.strerror}") from None
    return _parse(raw, str(path))  # one byte over the limit is enough for loads_limited to refuse it


def dump_lockfile(locks: Iterable[KernelLock]) -> str:
    """The old-format JSON ``kernels lock`` ≤ 0.16 wrote (indent 2); every lock must have variants."""
    locks = list(locks)
    if any(lock.variants is None for lock in locks):
        raise InvalidLockfile("a kernels >= 0.17 lock has no per-variant hashes to write in the old format")
    data = [
        {
            "repo_id": lock.repo_id,
            "sha": lock.sha,
            "variants": {n: {"hash": v.hash, "hash_type": v.hash_type}
                         for n, v in sorted((lock.variants or {}).items())},
        }
        for lock in locks
    ]
    return json.dumps(data, indent=2) + "\n"


def git_blob_id(data: bytes) -> str:
    """``git hash-object`` of ``data``: the id the Hub gives a non-LFS file."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def combine(entries: Iterable[tuple[str, str]]) -> str:
    """``sha256-<hex>`` over ``(relative posix path, hex object id)`` pairs, sorted by path bytes."""
    m = hashlib.sha256()
    for path_bytes, object_id in sorted((p.encode("utf-8"), oid) for p, oid in entries):
        m.update(path_bytes)
        m.update(bytes.fromhex(object_id))
    return f"sha256-{m.hexdigest()}"


def _object_id(path: Path) -> str:
    data = path.read_bytes()
    if path.is_symlink():
        blob = Path(os.path.realpath(path)).name
        if len(blob) == 64:  # an LFS object in the HF cache
            return hashlib.sha256(data).hexdigest()
    return git_blob_id(data)


def variant_files(variant_dir: Path) -> list[str]:
    """Relative posix paths of the files a variant hash covers (``__pycache__``/``*.pyc`` left out)."""
    files = []
    for dirpath, dirnames, filenames in os.walk(variant_dir):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for filename in filenames:
            if filename.endswith(".pyc"):
                continue
            files.append((Path(dirpath) / filename).relative_to(variant_dir).as_posix())
    return sorted(files)


def variant_hash(variant_dir: Path) -> str:
    """The ``git_lfs_concat`` hash of a variant directory (a cache snapshot or a plain checkout)."""
    return combine((rel, _object_id(variant_dir / rel)) for rel in variant_files(variant_dir))


def verify_variant(variant_dir: Path, lock: VariantLock, *, label: str) -> None:
    """Raise ``DigestMismatch`` unless the variant's files hash to ``lock.hash``."""
    actual = variant_hash(variant_dir)
    if actual != lock.hash:
        raise DigestMismatch(f"{label}: kernels.lock hash {lock.hash} does not match the downloaded files ({actual})")
