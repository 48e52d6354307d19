"""Reading and writing wheel files: reproducible, RECORD by the ``wheel`` library, written atomically.

* Entries are sorted (package files first, ``.dist-info`` last, RECORD at the very end) and carry one fixed
  timestamp, so the same input always gives a byte-identical wheel.
* The file is written next to its destination under a temporary name and moved into place with
  ``os.replace``: a failure leaves no partial wheel behind.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from zipfile import ZIP_DEFLATED, ZipInfo

from packaging.metadata import Metadata, RawMetadata, parse_email
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from wheel.wheelfile import WheelError, WheelFile

from tools.kernelwheel.atomic import atomic_path, temporary_directory
from tools.kernelwheel.errors import InvalidWheel
from tools.kernelwheel.naming import WheelName

# 1980-01-02: the earliest date a zip file holds in every timezone.
_FIXED_DATE_TIME = (1980, 1, 2, 0, 0, 0)
GENERATOR = "img2gray-tools"


class _ReproducibleWheelFile(WheelFile):
    """``wheel``'s WheelFile (which hashes every entry into RECORD) with a fixed timestamp on every entry."""

    def writestr(self, zinfo_or_arcname: str | ZipInfo, data: bytes | str, compress_type: int | None = None) -> None:
        if isinstance(zinfo_or_arcname, str):
            zinfo_or_arcname = _zipinfo(zinfo_or_arcname)
        super().writestr(zinfo_or_arcname, data, compress_type)


def _zipinfo(arcname: str) -> ZipInfo:
    info = ZipInfo(arcname, date_time=_FIXED_DATE_TIME)
    info.compress_type = ZIP_DEFLATED
    mode = 0o755 if arcname.endswith(".so") or ".so." in arcname else 0o644
    info.external_attr = (mode | stat.S_IFREG) << 16
    return info


@dataclass
class WheelContents:
    """A wheel held in memory: its name, its METADATA and every other file (RECORD excluded)."""

    name: WheelName
    metadata: RawMetadata
    files: dict[str, bytes] = field(default_factory=dict)
    root_is_purelib: bool = False


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


def write_wheel(contents: WheelContents, out_dir: Path) -> Path:
    """Write ``contents`` as ``out_dir/<filename>`` atomically; returns the final path."""
    name = contents.name
    dist_info = name.dist_info
    payload = {path: data for path, data in contents.files.items() if not path.endswith(".dist-info/RECORD")}
    stale = [p for p in payload if ".dist-info/" in p and not p.startswith(f"{dist_info}/")]
    if stale:
        raise InvalidWheel(f"{name.filename}: files {stale} belong to another .dist-info than {dist_info}")
    payload[f"{dist_info}/METADATA"] = _metadata_bytes(build_metadata(name, base=contents.metadata))
    payload[f"{dist_info}/WHEEL"] = _wheel_file_bytes(name, contents.root_is_purelib)

    final = out_dir / name.filename
    with atomic_path(final) as tmp, temporary_directory(out_dir, "wheel") as staging:
        # WheelFile checks the filename, so it writes under the real name inside a private folder first.
        staged = staging / name.filename
        with _ReproducibleWheelFile(staged, "w") as wheel:
            for path in sorted(payload, key=lambda p: (p.startswith(f"{dist_info}/"), p)):
                wheel.writestr(_zipinfo(path), payload[path])
        os.replace(staged, tmp)
    return final


def read_wheel(path: Path) -> WheelContents:
    """Read a wheel, checking every file against its RECORD hash."""
    try:
        name = WheelName.parse(path.name)
        with WheelFile(path) as wheel:
            dist_info = wheel.dist_info_path
            files = {
                info.filename: wheel.read(info.filename)
                for info in wheel.infolist()
                if not info.is_dir() and info.filename != wheel.record_path
            }
    except (WheelError, OSError, KeyError) as exc:
        raise InvalidWheel(f"{path}: cannot be read as a wheel: {exc}") from None
    metadata_path = f"{dist_info}/METADATA"
    if metadata_path not in files:
        raise InvalidWheel(f"{path}: has no {metadata_path}")
    raw, unparsed = parse_email(files.pop(metadata_path))
    if unparsed:
        raise InvalidWheel(f"{path}: METADATA has fields packaging cannot read: {sorted(unparsed)}")
    wheel_meta = files.pop(f"{dist_info}/WHEEL", b"").decode()
    purelib = "Root-Is-Purelib: true" in wheel_meta
    # Files of the old .dist-info (licenses, entry points) move to the new name when the wheel is renamed.
    renamed = {_move_dist_info(p, dist_info, name.dist_info): data for p, data in files.items()}
    return WheelContents(name=name, metadata=raw, files=renamed, root_is_purelib=purelib)


def _move_dist_info(path: str, old: str, new: str) -> str:
    return new + path[len(old) :] if path.startswith(f"{old}/") else path


def rename_wheel(contents: WheelContents, new_name: WheelName) -> WheelContents:
    """The same files under a new distribution name/version/tag; METADATA follows the new name."""
    old = contents.name.dist_info
    files = {_move_dist_info(p, old, new_name.dist_info): data for p, data in contents.files.items()}
    metadata = build_metadata(new_name, base=contents.metadata)
    return WheelContents(new_name, metadata, files, contents.root_is_purelib)
