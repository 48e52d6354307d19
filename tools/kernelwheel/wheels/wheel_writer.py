"""Writing wheel files: reproducible, streamed, RECORD by the ``wheel`` library, written atomically.

* Entries are sorted (package files first, ``.dist-info`` last, RECORD at the very end) and carry one fixed
  timestamp, so the same input always gives a byte-identical wheel.
* A file given as a ``Path`` is streamed into the archive in chunks (hashed for RECORD on the way), never read
  whole: memory stays flat whatever the size of a ``.so``.
* Each member is deflated or stored, decided from a sample of its bytes (``compress_type_for``): compiled code that
  deflate cannot shrink (fat binaries, already-compressed data) is stored instead of spending seconds to save 0.1 %.
* Content-addressed: when the destination already holds exactly the wheel that would be written (the same RECORD,
  the same member list, written by the same writer), nothing is written (``WrittenWheel.written`` is False).
* The file is written next to its destination under a temporary name and moved into place with
  ``os.replace``: a failure (or Ctrl-C) leaves no partial wheel behind.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import stat
import zlib
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO
from zipfile import ZIP_DEFLATED, ZIP_STORED, BadZipFile, ZipFile, ZipInfo

from packaging.metadata import Metadata, RawMetadata
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from wheel import __version__ as WHEEL_VERSION
from wheel.wheelfile import WheelFile, urlsafe_b64encode

from kernelwheel.format.digests import checked_digest, file_digest
from kernelwheel.io.atomic import atomic_path, temporary_directory
from kernelwheel.io.errors import InvalidWheel
from kernelwheel.wheels.naming import WheelName
from kernelwheel.wheels.wheel_contents import CHUNK, Member, Source, WheelContents, move_dist_info

# 1980-01-02: the earliest date a zip file holds in every timezone.
_FIXED_DATE_TIME = (1980, 1, 2, 0, 0, 0)
GENERATOR = "kernelwheel"
# Bumped whenever the bytes this module writes for the same input change (layout, levels, the store rule).
WRITER_FORMAT = 3  # 3: the WHEEL file names kernelwheel as its Generator
# zlib's fast mode: 1.3-3x the speed of the default level 6 on CUDA objects for 1-10 % more bytes (benchmarks/NOTES.md).
DEFLATE_LEVEL = 1
# Members up to this size are always deflated (cheap); larger ones are deflated only when a sample shrinks enough.
ALWAYS_DEFLATE_BELOW = 256 << 10
SAMPLE_CHUNKS = 8
SAMPLE_CHUNK = 32 << 10
STORE_ABOVE_RATIO = 0.95  # the sample deflates to more than 95 % of its size: store the member

# Called with the number of bytes of a member just written (progress), from the writing thread.
BytesCallback = Callable[[int], None]


def _writer_comment() -> bytes:
    """The archive comment: who wrote it and with what, so a rerun knows whether it would write the same bytes."""
    return (f"{GENERATOR} wheel writer {WRITER_FORMAT}; wheel {WHEEL_VERSION}; "
            f"zlib {zlib.ZLIB_RUNTIME_VERSION} level {DEFLATE_LEVEL}").encode()


def _sample(source: Source, size: int) -> bytes:
    """``SAMPLE_CHUNKS`` chunks spread evenly over the member (the same offsets every run)."""
    step = (size - SAMPLE_CHUNK) // (SAMPLE_CHUNKS - 1)
    offsets = [i * step for i in range(SAMPLE_CHUNKS)]
    if isinstance(source, bytes):
        return b"".join(source[o : o + SAMPLE_CHUNK] for o in offsets)
    parts = []
    with source.open("rb") as fh:
        for offset in offsets:
            fh.seek(offset)
            parts.append(fh.read(SAMPLE_CHUNK))
    return b"".join(parts)


def compress_type_for(source: Source, size: int) -> int:
    """``ZIP_DEFLATED`` unless the member is large and a sample of it hardly deflates (then ``ZIP_STORED``)."""
    if size < ALWAYS_DEFLATE_BELOW:
        return ZIP_DEFLATED
    sample = _sample(source, size)
    ratio = len(zlib.compress(sample, DEFLATE_LEVEL)) / max(len(sample), 1)
    return ZIP_STORED if ratio > STORE_ABOVE_RATIO else ZIP_DEFLATED


class _ReproducibleWheelFile(WheelFile):
    """``wheel``'s WheelFile (which hashes every entry into RECORD) with a fixed timestamp on every entry, and
    ``write_path`` to stream a file in (``WheelFile.write`` reads the whole file into memory)."""

    fp: IO[bytes] | None  # ZipFile's; declared again since mypy cannot follow it through wheel's WheelFile

    def writestr(self, zinfo_or_arcname: str | ZipInfo, data: bytes | str, compress_type: int | None = None) -> None:
        if isinstance(zinfo_or_arcname, str):
            zinfo_or_arcname = _zipinfo(zinfo_or_arcname, ZIP_DEFLATED)
        super().writestr(zinfo_or_arcname, data, compress_type)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """Finish the archive after a complete write; after a failed one (or when finishing fails) ``abandon`` it.

        Finishing writes RECORD and the central directory: after EFBIG or ENOSPC those writes fail again, zipfile
        then keeps the file open and ``ZipFile.__del__`` retries them at exit, printing "Exception ignored in" and a
        traceback after the one-line error the caller already gave."""
        if exc_type is not None:
            self.abandon()
            return
        try:
            self.close()
        except BaseException:
            self.abandon()
            raise

    def abandon(self) -> None:
        """Close the file without writing another byte, leaving nothing for ``__del__`` to finish; the caller removes
        the unfinished file (it is a temporary). A flush that fails again while closing changes nothing: the write
        already failed, and that error is the one reported."""
        fp = self.fp
        self.fp = None
        if fp is not None:
            with suppress(OSError):
                fp.close()

    def write_path(self, info: ZipInfo, path: Path, on_bytes: BytesCallback | None) -> str:
        """Stream ``path`` in as ``info``; returns its RECORD hash (``sha256=<urlsafe b64>``)."""
        digest = hashlib.sha256()
        size = 0
        with path.open("rb") as src:
            info.file_size = os.fstat(src.fileno()).st_size  # zipfile decides on ZIP64 from it
            with self.open(info, "w") as dst:
                while chunk := src.read(CHUNK):
                    digest.update(chunk)
                    dst.write(chunk)
                    size += len(chunk)
                    if on_bytes is not None:
                        on_bytes(len(chunk))
        # Registered as WheelFile.writestr registers what it writes: WheelFile.close() writes RECORD from these.
        self._file_hashes[info.filename] = (digest.name, urlsafe_b64encode(digest.digest()).decode("ascii"))
        self._file_sizes[info.filename] = size
        return f"{digest.name}={self._file_hashes[info.filename][1]}"


def _zipinfo(arcname: str, compress_type: int) -> ZipInfo:
    info = ZipInfo(arcname, date_time=_FIXED_DATE_TIME)
    info.compress_type = compress_type
    if compress_type == ZIP_DEFLATED:
        # zipfile takes the level from the ZipInfo it is given (the attribute is public as compress_level in 3.13).
        setattr(info, "_compresslevel", DEFLATE_LEVEL)  # noqa: B010
    mode = 0o755 if arcname.endswith(".so") or ".so." in arcname else 0o644
    info.external_attr = (mode | stat.S_IFREG) << 16
    return info


@dataclass(frozen=True)
class WrittenWheel:
    path: Path
    written: bool  # False: the destination already held exactly these bytes and was left alone
    size: int  # bytes of the wheel at ``path``
    replaced: bool = False  # a different wheel of the same filename was there before (now replaced)


def build_metadata(
    name: WheelName,
    *,
    requires_dist: Iterable[Requirement] = (),
    requires_python: SpecifierSet | None = None,
    summary: str | None = None,
    description: str | None = None,
    base: RawMetadata | None = None,
) -> RawMetadata:
    """METADATA fields for ``name``: ``Name`` and ``Version`` always come from the wheel name itself."""
    raw: RawMetadata = {**(base or {})}
    raw["metadata_version"] = raw.get("metadata_version", "2.1")
    raw["name"] = name.distribution
    raw["version"] = str(name.version)
    requirements = [str(r) for r in requires_dist]
    if requirements:
        # A requirement we set replaces any earlier one on the same project (e.g. an unpinned "torch").
        pinned = {Requirement(r).name for r in requirements}
        kept = [r for r in raw.get("requires_dist", []) if Requirement(r).name not in pinned]
        raw["requires_dist"] = kept + requirements
    if requires_python is not None:
        raw["requires_python"] = str(requires_python)
    if summary is not None:
        raw["summary"] = summary
    if description is not None:  # Markdown; index front ends and `twine check --strict` want one
        raw["description"] = description
        raw["description_content_type"] = "text/markdown"
    return raw


# packaging writes field names in lower case; the core-metadata spec spells them like this.
_FIELD_SPELLING = {"project-url": "Project-URL", "home-page": "Home-page", "author-email": "Author-email",
                   "maintainer-email": "Maintainer-email"}


def _metadata_bytes(raw: RawMetadata) -> bytes:
    try:
        message = Metadata.from_raw(raw).as_rfc822()
    except Exception as exc:  # packaging raises an ExceptionGroup of InvalidMetadata
        raise InvalidWheel(f"METADATA for {raw.get('name')!r} is invalid: {exc}") from None
    for name in dict.fromkeys(message.keys()):
        values = message.get_all(name) or []
        del message[name]
        spelled = _FIELD_SPELLING.get(name.lower(), "-".join(w.capitalize() for w in name.split("-")))
        for value in values:
            message[spelled] = value
    return message.as_bytes()


def _wheel_file_bytes(name: WheelName, root_is_purelib: bool) -> bytes:
    lines = [
        "Wheel-Version: 1.0",
        f"Generator: {GENERATOR}",
        f"Root-Is-Purelib: {'true' if root_is_purelib else 'false'}",
        *(f"Tag: {tag}" for tag in sorted(str(t) for t in name.tags)),
    ]
    return ("\n".join(lines) + "\n\n").encode()


def _members(contents: WheelContents[Member]) -> list[tuple[str, Source]]:
    """Every member but RECORD, in archive order: package files, then the .dist-info (METADATA and WHEEL made here)."""
    name = contents.name
    dist_info = name.dist_info
    payload: dict[str, Source] = {
        path: data for path, data in contents.files.items() if not path.endswith(".dist-info/RECORD")
    }
    stale = [p for p in payload if ".dist-info/" in p and not p.startswith(f"{dist_info}/")]
    if stale:
        raise InvalidWheel(f"{name.filename}: files {stale} belong to another .dist-info than {dist_info}")
    payload[f"{dist_info}/METADATA"] = _metadata_bytes(build_metadata(name, base=contents.metadata))
    payload[f"{dist_info}/WHEEL"] = _wheel_file_bytes(name, contents.root_is_purelib)
    return [(path, payload[path]) for path in sorted(payload, key=lambda p: (p.startswith(f"{dist_info}/"), p))]


def _record_hash(source: Source) -> tuple[str, int]:
    if isinstance(source, bytes):
        return f"sha256={urlsafe_b64encode(hashlib.sha256(source).digest()).decode()}", len(source)
    # file_digest remembers what the digest check already hashed: a rerun reads each file once.
    return f"sha256={urlsafe_b64encode(file_digest(source, 'sha256')).decode()}", source.stat().st_size


def _expected_record(members: list[tuple[str, Source]], record_path: str) -> list[list[str]]:
    rows = []
    for path, source in members:
        digest, size = _record_hash(source)
        rows.append([path, digest, str(size)])
    return [*rows, [record_path, "", ""]]


def _holds(final: Path, record: list[list[str]]) -> bool:
    """Whether ``final`` is the wheel this writer would write for ``record``: same writer, members and RECORD."""
    try:
        with ZipFile(final) as archive:
            if archive.comment != _writer_comment():
                return False
            if [info.filename for info in archive.infolist()] != [row[0] for row in record]:
                return False
            text = archive.read(record[-1][0]).decode()
    except (OSError, BadZipFile, KeyError, UnicodeDecodeError):
        return False
    return list(csv.reader(io.StringIO(text))) == record


def write_wheel_if_changed(contents: WheelContents[Member], out_dir: Path,
                           on_bytes: BytesCallback | None = None) -> WrittenWheel:
    """Write ``contents`` as ``out_dir/<filename>`` atomically, unless that file already holds exactly these bytes.

    ``on_bytes`` is called with each chunk's size as files are streamed in (not for a wheel left alone)."""
    name = contents.name
    members = _members(contents)
    record_path = f"{name.dist_info}/RECORD"
    final = out_dir / name.filename
    if final.is_file() and not final.is_symlink() and _holds(final, _expected_record(members, record_path)):
        return WrittenWheel(final, False, final.stat().st_size)
    replaced = final.exists() or final.is_symlink()
    with atomic_path(final) as tmp, temporary_directory(out_dir, "wheel") as staging:
        # WheelFile checks the filename, so it writes under the real name inside a private folder first.
        staged = staging / name.filename
        with _ReproducibleWheelFile(staged, "w") as wheel:
            wheel.comment = _writer_comment()
            for path, source in members:
                if isinstance(source, bytes):
                    wheel.writestr(_zipinfo(path, compress_type_for(source, len(source))), source)
                    continue
                size = source.stat().st_size
                written = wheel.write_path(_zipinfo(path, compress_type_for(source, size)), source, on_bytes)
                checked = checked_digest(source, "sha256")
                if checked is not None and written != f"sha256={urlsafe_b64encode(checked).decode()}":
                    raise InvalidWheel(f"{name.filename}: {path} changed after it was checked (its digest differs)")
        os.replace(staged, tmp)
        size = tmp.stat().st_size
    return WrittenWheel(final, True, size, replaced)


def write_wheel(contents: WheelContents[Member], out_dir: Path) -> Path:
    """Write ``contents`` as ``out_dir/<filename>`` atomically (left alone when it already holds exactly these
    bytes); returns the final path."""
    return write_wheel_if_changed(contents, out_dir).path


def rename_wheel(contents: WheelContents[Member], new_name: WheelName) -> WheelContents[Member]:
    """The same files under a new distribution name/version/tag; METADATA follows the new name."""
    old = contents.name.dist_info
    files = {move_dist_info(p, old, new_name.dist_info): data for p, data in contents.files.items()}
    metadata = build_metadata(new_name, base=contents.metadata)
    return WheelContents(new_name, metadata, files, contents.root_is_purelib)
