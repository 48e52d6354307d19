"""``metadata.json``'s per-file ``digest``: writing it (kernel-builder's ``hash`` step) and verifying it."""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernelwheel.format.variant_folder import SIGSTORE_BUNDLE, check_relpath
from kernelwheel.io import json_cache
from kernelwheel.io.errors import DigestMismatch, InvalidVariant

_DIGEST_EXCLUDED = {"metadata.json", SIGSTORE_BUNDLE}


def _b64(value: str) -> bytes:
    text = value.strip()
    text += "=" * (-len(text) % 4)
    altchars = b"-_" if ("-" in text or "_" in text) else None
    return base64.b64decode(text, altchars=altchars, validate=True)


def digested_files(files: Mapping[str, Path]) -> list[str]:
    """The files a ``metadata.json`` digest covers: all of ``collect_files`` but metadata.json and its signature."""
    return sorted(rel for rel in files if rel not in _DIGEST_EXCLUDED)


# (real path, algorithm) → (the file's stat identity when hashed, digest): a file is read once per run even when
# the digest check and the wheel's RECORD both need its hash, and a changed file (new stat) is hashed again.
# Process-wide, not per run: an entry is valid while the file keeps its stat identity, whichever run asks.
_DIGESTS: dict[tuple[str, str], tuple[tuple[int, ...], bytes]] = {}
_CHUNK = 1 << 20


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def file_digest(path: Path, algorithm: str = "sha256") -> bytes:
    """``algorithm`` digest of the file at ``path``, streamed in chunks (memory does not grow with the file)."""
    key = (os.path.realpath(path), algorithm)
    with open(key[0], "rb") as fh:
        identity = _identity(os.fstat(fh.fileno()))
        known = _DIGESTS.get(key)
        if known is not None and known[0] == identity:
            return known[1]
        digest = hashlib.new(algorithm)
        buffer = bytearray(_CHUNK)
        view = memoryview(buffer)
        while n := fh.readinto(buffer):
            digest.update(view[:n])
    _DIGESTS[key] = (identity, digest.digest())
    return _DIGESTS[key][1]


_CACHE_FORMAT = 1
_CACHE_MAX_BYTES = 256 * 1024 * 1024  # ~150 bytes an entry: over a million files
_SETTLED_NS = 1_000_000_000


def load_digest_cache(path: Path) -> None:
    """Remember the digests ``save_digest_cache`` kept in ``path`` (a missing or damaged file is ignored).

    An entry is used only while the file's identity (device, inode, size, mtime and ctime, in nanoseconds) is the
    one it was hashed with, as git's index trusts a file's stat; any write changes the ctime."""
    data = json_cache.load(path, {"format": _CACHE_FORMAT}, max_bytes=_CACHE_MAX_BYTES)
    if data is None:
        return
    try:
        for real, algorithm, identity, digest in data["entries"]:
            _DIGESTS.setdefault((str(real), str(algorithm)), (tuple(int(i) for i in identity), bytes.fromhex(digest)))
    except (ValueError, KeyError, TypeError, AttributeError):
        return


def save_digest_cache(path: Path) -> None:
    """Keep this run's digests in ``path`` (atomically) for the next run: only files that still have the identity
    they were hashed with, and none changed within the last ``_SETTLED_NS`` (a write in the same clock tick as
    the hashing could leave the stat as it was: git's "racy" entries; such a file is simply hashed next time)."""
    settled = time.time_ns() - _SETTLED_NS
    entries = []
    for (real, algorithm), (identity, digest) in sorted(_DIGESTS.items()):
        try:
            st = os.stat(real)
        except OSError:
            continue
        if _identity(st) != identity or max(st.st_mtime_ns, st.st_ctime_ns) > settled:
            continue
        entries.append([real, algorithm, list(identity), digest.hex()])
    json_cache.save(path, {"format": _CACHE_FORMAT}, {"entries": entries})


def checked_digest(path: Path, algorithm: str = "sha256") -> bytes | None:
    """The digest ``file_digest`` last returned for ``path`` (even if the file has changed since), if any."""
    known = _DIGESTS.get((os.path.realpath(path), algorithm))
    return None if known is None else known[1]


def _file_digest(path: Path, algorithm: str) -> bytes:
    return file_digest(path, algorithm)


def make_digest(files: Mapping[str, Path], algorithm: str = "sha256") -> dict[str, Any]:
    """``metadata.json``'s ``digest`` for ``files`` (``collect_files`` output): what ``verify_digest`` checks."""
    return {"algorithm": algorithm,
            "files": {rel: base64.b64encode(_file_digest(files[rel], algorithm)).decode()
                      for rel in digested_files(files)}}


def make_digest_of(sources: Mapping[str, bytes | Path], algorithm: str = "sha256") -> dict[str, Any]:
    """``make_digest`` for files some of which exist only in memory (``bytes``: a zip layout's unpacked package), so
    that a folder written from ``sources`` verifies against it as kernel-builder's own digest would."""
    def hashed(source: bytes | Path) -> bytes:
        return hashlib.new(algorithm, source).digest() if isinstance(source, bytes) else file_digest(source, algorithm)

    return {"algorithm": algorithm,
            "files": {rel: base64.b64encode(hashed(sources[rel])).decode() for rel in sorted(sources)
                      if rel not in _DIGEST_EXCLUDED}}


def digest_violations(files: Mapping[str, Path], metadata: Mapping[str, Any], where: str) -> list[str] | None:
    """Every way the variant's files deviate from ``metadata.json``'s ``digest`` (empty: they match), in the order
    kernels' ``Digest.validate`` reports them (missing, unknown, mismatched files); None when there is no digest."""
    digest = metadata.get("digest")
    if digest is None:
        return None
    if not isinstance(digest, dict) or not isinstance(digest.get("files"), dict):
        raise InvalidVariant(f"{where}/metadata.json: 'digest' must be {{algorithm, files: {{path: base64}}}}")
    algorithm = digest.get("algorithm", "sha256")
    if algorithm not in ("sha256", "sha512"):  # kernels accepts these two, lower case only
        raise InvalidVariant(f"{where}/metadata.json: digest algorithm {algorithm!r} is not 'sha256' or 'sha512'")
    listed: dict[str, object] = digest["files"]
    for rel, value in listed.items():
        check_relpath(rel, f"{where}/metadata.json digest")
        if not isinstance(value, str):
            raise InvalidVariant(f"{where}/metadata.json: digest of {rel} must be a base64 string, got {value!r:.40}")
    present = set(digested_files(files))
    violations = [f"{rel} is listed in metadata.json's digest but missing" for rel in sorted(set(listed) - present)]
    violations += [f"{rel} is not covered by metadata.json's digest" for rel in sorted(present - set(listed))]
    for rel in sorted(set(listed) & present):
        try:
            expected = _b64(str(listed[rel]))
        except (binascii.Error, ValueError):
            raise InvalidVariant(f"{where}/metadata.json: digest of {rel} is not base64") from None
        if _file_digest(files[rel], algorithm) != expected:
            violations.append(f"{rel} does not match its {algorithm} digest in metadata.json")
    return violations


def verify_digest(files: Mapping[str, Path], metadata: Mapping[str, Any], where: str) -> bool:
    """Check ``metadata.json``'s ``digest``, reporting every violation at once; returns False when there is none."""
    violations = digest_violations(files, metadata, where)
    if violations is None:
        return False
    if violations:
        raise DigestMismatch(f"{where}: {'; '.join(violations)}")
    return True
