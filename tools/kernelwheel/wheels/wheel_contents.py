"""A wheel as this package holds it: its name, METADATA and files (bytes, or paths streamed when written).

``wheel_reader`` gives one (``read_wheel``), ``wheel_writer`` writes one (``write_wheel``); both stream a member
``CHUNK`` bytes at a time, and both move the files of an old ``.dist-info`` under a new name (``move_dist_info``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic

from packaging.metadata import RawMetadata
from typing_extensions import TypeVar  # its ``default=`` (PEP 696) is in typing from Python 3.13 on

from kernelwheel.wheels.naming import WheelName

# Bytes of a member streamed at a time, written into a wheel or read out of one.
CHUNK = 1 << 20

# A member's bytes: in memory, or a file streamed from disk.
Source = bytes | Path

# What a WheelContents holds per member: bytes (``read_wheel``'s result, the default) or ``Source`` (bytes or paths).
Member = TypeVar("Member", bound=Source, default=bytes)


@dataclass
class WheelContents(Generic[Member]):
    """A wheel: its name, its METADATA and every other file (RECORD excluded). ``read_wheel`` gives the files as
    bytes; a wheel to write may also name files by path (``WheelContents[Source]``), streamed when it is written."""

    name: WheelName
    metadata: RawMetadata
    files: dict[str, Member] = field(default_factory=dict)
    root_is_purelib: bool = False


def move_dist_info(path: str, old: str, new: str) -> str:
    """``path`` under the ``new`` .dist-info folder when it is under the ``old`` one; other paths as they are."""
    return new + path[len(old) :] if path.startswith(f"{old}/") else path
