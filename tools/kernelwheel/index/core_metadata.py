"""A candidate wheel's core metadata, checked against its file name and its wheel: the torch it requires, and the GPU
code its binaries hold (the description's line hub2wheel writes, ``wheels.gpu_targets``)."""

from __future__ import annotations

import tempfile
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

from packaging.metadata import parse_email
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from kernelwheel.index.client import Candidate, metadata_file
from kernelwheel.index.indexed_wheel import metadata_bytes, torch_requirement_from
from kernelwheel.index.wheel_download import download_wheel
from kernelwheel.io.errors import IndexUnreachable, InvalidWheel
from kernelwheel.io.urls import printable, redact
from kernelwheel.wheels.gpu_targets import GpuTargets, from_description
from kernelwheel.wheels.naming import labelled_torch
from kernelwheel.wheels.wheel_reader import MAX_METADATA_BYTES


def _metadata_of_wheel(path: Path, candidate: Candidate) -> bytes:
    where = redact(candidate.url)
    try:
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
            if not names:
                raise InvalidWheel(f"{where}: not a wheel: it has no *.dist-info/METADATA")
            if len(names) > 1:
                raise InvalidWheel(f"{where}: not a wheel: it has {len(names)} METADATA files ({', '.join(names)})")
            with archive.open(names[0]) as member:
                data = member.read(MAX_METADATA_BYTES + 1)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError,
            UnicodeError, OSError) as exc:
        raise InvalidWheel(f"{where}: not a wheel (not a readable zip archive: {exc})") from None
    if len(data) > MAX_METADATA_BYTES:
        raise InvalidWheel(f"{where}: its METADATA is over {MAX_METADATA_BYTES >> 20} MiB; expected at most that")
    return data


def _core_metadata(data: bytes, candidate: Candidate, source: str) -> dict[str, object]:
    """``data`` parsed as core metadata, refused unless its Name and Version are the wheel file's."""
    raw, _ = parse_email(data)
    name, version = raw.get("name"), raw.get("version")
    if not isinstance(name, str) or not isinstance(version, str):
        raise InvalidWheel(f"{source}: not core metadata (no Name and Version fields); refusing {candidate.filename}")
    expected = candidate.name
    try:
        same_version = Version(version) == expected.version
    except InvalidVersion:
        same_version = False
    if canonicalize_name(name) != canonicalize_name(expected.distribution) or not same_version:
        raise InvalidWheel(
            f"{source}: says {printable(name)} {printable(version)}, but the file is {candidate.filename} "
            f"({expected.distribution} {expected.version}); refusing it"
        )
    return dict(raw)


def _check_against_wheel(candidate: Candidate, metadata: bytes) -> None:
    """Refuse a ``.metadata`` that is not the METADATA of the wheel it stands for, where that wheel is at hand (a
    file:// index: its METADATA member is read, bounded, not the whole wheel). A hash on the page only proves the
    file is the one the page names; a ``.metadata`` that says ``torch>=2.10`` for a wheel pinned to 2.13 would make
    the plan, and the installer's resolver, install it next to a torch it was not built for."""
    parts = urlsplit(candidate.url)
    if parts.scheme != "file":
        return  # over http(s) the wheel is not downloaded for this (it can be GBs); pip downloads it
    path = Path(url2pathname(unquote(parts.path)))
    where = redact(candidate.metadata_url or candidate.url)
    try:
        own = metadata_bytes(path)
    except FileNotFoundError:
        raise IndexUnreachable(f"{redact(candidate.url)}: listed on the index but not there") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError,
            UnicodeError, OSError) as exc:
        raise InvalidWheel(f"{redact(candidate.url)}: not a wheel (not a readable zip archive: {exc})") from None
    if own != metadata:
        raise InvalidWheel(
            f"{where}: differs from the METADATA inside {candidate.filename} (Requires-Dist "
            f"{_requires(metadata)} vs {_requires(own)}); expected the wheel's own METADATA. The index is stale or "
            "was tampered with: rebuild it (kernelwheel index)"
        )


def _requires(metadata: bytes) -> list[str]:
    raw, _ = parse_email(metadata)
    return [printable(line) for line in raw.get("requires_dist", [])]


@dataclass(frozen=True)
class WheelFacts:
    """What the plan reads from a candidate's core metadata."""

    torch: SpecifierSet | None  # its torch requirement (None: it names no torch)
    gpu: GpuTargets | None  # the GPU code its binaries hold (None: unknown, no line in its description)


def wheel_facts(candidate: Candidate, environment: Mapping[str, str] | None = None) -> WheelFacts:
    """The wheel's ``Requires-Dist: torch`` specifier that applies in ``environment`` (the target's PEP 508 marker
    values; None: every torch line applies, ``torch_requirement_from``), and its GPU targets: from PEP 658 metadata,
    else (torch only: a wheel is not downloaded for its GPU line) the label, else the wheel.

    Raises ``DigestMismatch`` when the ``.metadata`` (or wheel) fetched is not the file the page's hash names,
    ``InvalidWheel`` when the wheel downloaded as fallback is not a zip with one ``.dist-info/METADATA``, or when a
    ``.metadata`` differs from the METADATA of a wheel at hand (``_check_against_wheel``).
    """
    metadata = metadata_file(candidate) if candidate.metadata_url is not None else None
    if metadata is not None:
        assert candidate.metadata_url is not None
        raw = _core_metadata(metadata, candidate, redact(candidate.metadata_url))
        _check_against_wheel(candidate, metadata)
    else:
        label = labelled_torch(candidate.name.version)
        if label is not None:
            return WheelFacts(SpecifierSet(f"=={label}.*"), None)
        # The folder (and the download in it) is gone whatever happens, a deadline or an error included.
        with tempfile.TemporaryDirectory(prefix="kernelwheel-wheel-") as folder:
            metadata = _metadata_of_wheel(download_wheel(candidate, Path(folder)), candidate)
        raw = _core_metadata(metadata, candidate, f"{redact(candidate.url)} (its METADATA)")
    requires = raw.get("requires_dist", [])
    description = raw.get("description")
    return WheelFacts(
        torch_requirement_from(requires if isinstance(requires, list) else [], candidate.filename, environment),
        from_description(description) if isinstance(description, str) else None)
