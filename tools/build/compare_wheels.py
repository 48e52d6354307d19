"""Whether two wheels are the same bytes, and if not, where they differ.

``python tools/build/compare_wheels.py A.whl B.whl`` prints ``identical: sha256 <digest>`` and exits 0, or prints one
line per difference and exits 1: the wheels' sha256, members only in one, the zip metadata of a member (date, mode,
compression, order), a member's bytes, the fields of a JSON member, and for an ELF member (``_C.abi3.so``) the
sections that differ and by how many bytes. The release workflow runs it on two builds of the same commit before
uploading; ``python -m tools.cli.build_wheel --reproduce`` on a published wheel and its rebuild. Standard library
only, so it runs by path on a CI runner that has nothing installed.
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

# What identifies a zip entry beyond its bytes: two builds must agree on every one.
ZIP_FIELDS = ("date_time", "compress_type", "external_attr", "create_system", "extract_version", "flag_bits", "extra")


class NotAWheel(ValueError):
    """A path that is missing or not a zip archive."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def elf_sections(data: bytes) -> dict[str, bytes] | None:
    """Section name → contents of a little-endian ELF64 file (``SHT_NOBITS`` sections as their size), or None for
    anything else. Enough of ELF to say which sections of two builds of one library differ."""
    if len(data) < 64 or data[:6] != b"\x7fELF\x02\x01":
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shoff == 0 or shentsize < 64 or shoff + shnum * shentsize > len(data) or shstrndx >= shnum:
        return None
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    _, _, _, _, strtab_offset, strtab_size = headers[shstrndx]
    names = data[strtab_offset : strtab_offset + strtab_size]
    sections: dict[str, bytes] = {}
    for name_offset, kind, _flags, _addr, offset, size in headers:
        name = names[name_offset : names.find(b"\0", name_offset)].decode("ascii", "replace") or "<null>"
        sections[name] = size.to_bytes(8, "little") if kind == 8 else data[offset : offset + size]  # 8: SHT_NOBITS
    return sections


def _differing_bytes(a: bytes, b: bytes) -> int:
    return sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b))


def _json_differences(name: str, a: bytes, b: bytes) -> list[str] | None:
    """The top-level fields of two JSON objects that differ (``_build_info.json``: torch, toolkit, arch list...)."""
    try:
        first, second = json.loads(a), json.loads(b)
    except ValueError:
        return None
    if not isinstance(first, dict) or not isinstance(second, dict):
        return None
    return [f"{name}: {key} {first.get(key)!r} != {second.get(key)!r}"
            for key in sorted(first.keys() | second.keys()) if first.get(key) != second.get(key)] or None


def _member_differences(name: str, a: bytes, b: bytes) -> list[str]:
    if name.endswith(".json") and (fields := _json_differences(name, a, b)):
        return fields
    sections_a, sections_b = elf_sections(a), elf_sections(b)
    if sections_a is None or sections_b is None:
        return [f"{name}: {_differing_bytes(a, b)} of {len(a)} bytes differ (sizes {len(a)} and {len(b)})"]
    lines = []
    for section in sorted(sections_a.keys() | sections_b.keys()):
        if section not in sections_a or section not in sections_b:
            lines.append(f"{name}: section {section} only in {'the first' if section in sections_a else 'the second'}")
        elif sections_a[section] != sections_b[section]:
            first, second = sections_a[section], sections_b[section]
            lines.append(f"{name}: section {section}: {_differing_bytes(first, second)} of {len(first)} bytes differ")
    return lines or [f"{name}: {_differing_bytes(a, b)} of {len(a)} bytes differ, outside any section"]


def _open(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except FileNotFoundError:
        raise NotAWheel(f"{path}: no such file") from None
    except (OSError, zipfile.BadZipFile) as exc:
        raise NotAWheel(f"{path}: not a wheel (zip archive): {exc}") from None


def differences(first: Path, second: Path) -> list[str]:
    """One line per difference between two wheel files; empty when they are byte-identical."""
    with _open(first) as a, _open(second) as b:
        digest_a, digest_b = sha256(first), sha256(second)
        if digest_a == digest_b:
            return []
        lines = [f"sha256 {digest_a} != {digest_b}"]
        if first.name != second.name:
            lines.append(f"file names differ: {first.name} and {second.name}")
        entries_a = {info.filename: info for info in a.infolist()}
        entries_b = {info.filename: info for info in b.infolist()}
        for name in sorted(entries_a.keys() ^ entries_b.keys()):
            lines.append(f"{name}: only in {first if name in entries_a else second}")
        common = [name for name in entries_a if name in entries_b]
        if common != [name for name in entries_b if name in entries_a]:
            lines.append("the members are in another order")
        for name in common:
            info_a, info_b = entries_a[name], entries_b[name]
            fields = [f"{field} {getattr(info_a, field)!r} != {getattr(info_b, field)!r}"
                      for field in ZIP_FIELDS if getattr(info_a, field) != getattr(info_b, field)]
            if fields:
                lines.append(f"{name}: zip entry {', '.join(fields)}")
            data_a, data_b = a.read(info_a), b.read(info_b)
            if data_a != data_b:
                lines.extend(_member_differences(name, data_a, data_b))
            elif info_a.compress_size != info_b.compress_size:
                lines.append(f"{name}: the same bytes, compressed to {info_a.compress_size} and {info_b.compress_size}")
        if a.comment != b.comment:
            lines.append(f"archive comments differ: {a.comment!r} and {b.comment!r}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python tools/build/compare_wheels.py A.whl B.whl", file=sys.stderr)
        return 2
    first, second = Path(args[0]), Path(args[1])
    try:
        lines = differences(first, second)
    except NotAWheel as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not lines:
        print(f"identical: sha256 {sha256(first)}")
        return 0
    print(f"{first} and {second} differ:")
    for line in lines:
        print(f"  {line}")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
