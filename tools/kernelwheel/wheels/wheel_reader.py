"""Reading wheel files: every file checked against its RECORD hash, within limits set before anything is read.

``read_wheel`` holds the files in memory, ``check_wheel`` only hashes them, ``unpack_wheel`` copies them to disk (both
a chunk at a time); each refuses, as one ``InvalidWheel`` line, a damaged zip, a path outside the wheel, a METADATA
over ``MAX_METADATA_BYTES``, and (reading into memory or unpacking) files that unpack to more than ``MAX_READ_BYTES``.
"""

from __future__ import annotations

import csv
import io
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from zipfile import BadZipFile, LargeZipFile, ZipInfo

from packaging.metadata import parse_email
from wheel.wheelfile import WheelError, WheelFile

from kernelwheel.format.variant_folder import check_relpath
from kernelwheel.io.errors import InvalidWheel, OutputNotWritable, one_line
from kernelwheel.wheels.variant_names import parse_any_wheel_filename
from kernelwheel.wheels.wheel_contents import CHUNK, WheelContents, move_dist_info

# What reading a damaged or hostile zip raises besides WheelError: a truncated or foreign file, corrupt deflate data,
# an unsupported compression method or an encrypted member (NotImplementedError, RuntimeError), undecodable names.
UNREADABLE_ZIP_ERRORS = (BadZipFile, LargeZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError,
                         UnicodeError, OSError)
UNREADABLE_ZIP = "not a readable wheel (zip archive):"


@contextmanager
def _reading(label: str) -> Iterator[None]:
    """What reading a wheel raises, as one-line InvalidWheel errors naming ``label``."""
    try:
        yield
    except (WheelError, OSError, KeyError) as exc:
        raise InvalidWheel(f"{label}: cannot be read as a wheel: {exc}") from None
    except UNREADABLE_ZIP_ERRORS as exc:
        raise InvalidWheel(f"{label}: {UNREADABLE_ZIP} {one_line(exc)}") from None


# read_wheel holds every file in memory and unpack_wheel writes them all to disk, so both refuse a wheel whose files
# unpack to more than this. The zip's own sizes are what zipfile decompresses up to, so they bound what is read: a
# zip bomb of a few KiB can declare terabytes.
MAX_READ_BYTES = 4 << 30
_KEPT_ANYWAY = ("METADATA", "WHEEL", "variant.json")  # what check_wheel keeps of the .dist-info
# The most bytes of METADATA a wheel may hold. Parsing it takes ~12x its size in memory (a 100 MB METADATA cost the
# index 1.25 GB); the largest on PyPI (long descriptions) are a few hundred kB. docs/private-index.md names it.
MAX_METADATA_BYTES = 4 << 20
MAX_VARIANT_JSON_BYTES = 64 << 10  # a variant wheel's .dist-info/variant.json: a few hundred bytes, read whole


def read_wheel(path: Path, label: str | None = None) -> WheelContents:
    """Read a wheel into memory, checking every file against its RECORD hash; ``label`` names it in errors (default:
    the path). A wheel whose files unpack to more than ``MAX_READ_BYTES`` is refused."""
    return _read(path, label or str(path), keep_files=True)


def check_wheel(path: Path, label: str | None = None) -> WheelContents:
    """``read_wheel``'s checks without keeping the files (``files`` is empty): each file is hashed against RECORD a
    chunk at a time, so memory stays flat whatever the wheel holds (the index checks every wheel it lists)."""
    return _read(path, label or str(path), keep_files=False)


def unpack_wheel(path: Path, place: Callable[[str], Path], label: str | None = None) -> list[str]:
    """Copy every file of the wheel to ``place(arcname)`` a chunk at a time, each checked against its RECORD hash as it
    is read (memory stays flat whatever the wheel holds); returns the arcnames. ``place`` refuses a name by raising. A
    wheel whose files unpack to more than ``MAX_READ_BYTES`` is refused before anything is written; a file that fails
    its hash is left where it was written, so unpack into a folder that is removed on failure."""
    label = label or str(path)
    parse_any_wheel_filename(path.name)
    with _reading(label), WheelFile(path) as wheel:
        members = _members_within_limit(wheel, label, "unpacks to disk")
        check_paths(wheel, label)
        for info in members:
            _copy_member(wheel, info, place(info.filename))
    return [info.filename for info in members]


def check_paths(wheel: WheelFile, label: str) -> None:
    """Refuse a member or RECORD entry that is not a plain relative path inside the wheel (absolute, ``..``,
    backslash: ``layout.check_relpath``, the rule hub2wheel applies to a variant's files), and a RECORD entry naming
    a file the wheel does not hold. An installer writes RECORD's paths (pip refuses ``../../evil.py``), so a wheel
    that names one is refused wherever it is read: verify_wheel, the index, upload."""
    members = {info.filename for info in wheel.infolist() if not info.is_dir()}
    for name in sorted(members):
        check_relpath(name, f"{label}: member", inside="the wheel", error=InvalidWheel)
    with wheel.open(wheel.record_path) as record:
        rows = list(csv.reader(io.TextIOWrapper(record, encoding="utf-8", newline="")))
    for entry in (row[0] for row in rows if row):
        check_relpath(entry, f"{label}: RECORD entry", inside="the wheel", error=InvalidWheel)
        if entry not in members:
            raise InvalidWheel(f"{label}: RECORD names {entry!r}, which the wheel does not hold; expected only the "
                               "wheel's own files")


def _files(wheel: WheelFile) -> list[ZipInfo]:
    """The wheel's files: its members but folders and RECORD."""
    return [i for i in wheel.infolist() if not i.is_dir() and i.filename != wheel.record_path]


def _members_within_limit(wheel: WheelFile, label: str, what: str) -> list[ZipInfo]:
    """``_files(wheel)``, refused if they unpack to more than ``MAX_READ_BYTES``."""
    members = _files(wheel)
    unpacked = sum(info.file_size for info in members)
    if unpacked > MAX_READ_BYTES:
        raise InvalidWheel(f"{label}: its files unpack to {unpacked} bytes, more than the {MAX_READ_BYTES >> 20} MiB "
                           f"this tool {what}")
    return members


def _copy_member(wheel: WheelFile, info: ZipInfo, target: Path) -> None:
    """One member into ``target``, read to its end (WheelFile checks the RECORD hash there). A failed write is the
    output's fault, not the wheel's: OutputNotWritable."""
    with wheel.open(info) as member:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            out = target.open("wb")
        except OSError as exc:
            raise OutputNotWritable(f"{target}: cannot be written: {one_line(exc)}") from None
        with out:
            while chunk := member.read(CHUNK):
                try:
                    out.write(chunk)
                except OSError as exc:
                    raise OutputNotWritable(f"{target}: cannot be written: {one_line(exc)}") from None


def _read(path: Path, label: str, *, keep_files: bool) -> WheelContents:
    name = parse_any_wheel_filename(path.name)  # a variant wheel's name too (variant_names)
    with _reading(label), WheelFile(path) as wheel:
        dist_info = wheel.dist_info_path
        members = _members_within_limit(wheel, label, "reads into memory") if keep_files else _files(wheel)
        check_paths(wheel, label)
        _check_metadata_size(wheel, f"{dist_info}/METADATA", label)
        _check_metadata_size(wheel, f"{dist_info}/variant.json", label, MAX_VARIANT_JSON_BYTES)
        kept = {f"{dist_info}/{n}" for n in _KEPT_ANYWAY}
        files = {info.filename: _checked_member(wheel, info, keep_files or info.filename in kept) for info in members}
        if not keep_files:
            files = {n: data for n, data in files.items() if n in kept}
    metadata_path = f"{dist_info}/METADATA"
    if metadata_path not in files:
        raise InvalidWheel(f"{label}: has no {metadata_path}")
    raw, unparsed = parse_email(files.pop(metadata_path))
    if unparsed:
        raise InvalidWheel(f"{label}: METADATA has fields packaging cannot read: {sorted(unparsed)}")
    wheel_meta = files.pop(f"{dist_info}/WHEEL", b"").decode()
    purelib = "Root-Is-Purelib: true" in wheel_meta
    # Files of the old .dist-info (licenses, entry points) move to the new name when the wheel is renamed.
    renamed = {move_dist_info(p, dist_info, name.dist_info): data for p, data in files.items()}
    return WheelContents(name=name, metadata=raw, files=renamed, root_is_purelib=purelib)


def _check_metadata_size(wheel: WheelFile, name: str, label: str, limit: int = MAX_METADATA_BYTES) -> None:
    """Refuse a METADATA (or variant.json) over ``limit`` before it is read (the zip's size is what zipfile reads up
    to)."""
    try:
        size = wheel.getinfo(name).file_size
    except KeyError:
        return  # _read says "has no METADATA"; a wheel without variant.json is no variant wheel
    if size > limit:
        most = f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit >> 10} KiB"
        raise InvalidWheel(f"{label}: its {name.rpartition('/')[2]} is {size} bytes; expected at most {most}")


def _checked_member(wheel: WheelFile, info: ZipInfo, keep: bool) -> bytes:
    """A member's bytes (``b""`` unless ``keep``), read to its end: WheelFile checks the RECORD hash there."""
    with wheel.open(info) as member:
        if keep:
            data: bytes = member.read()
            return data
        while member.read(CHUNK):
            pass
        return b""
