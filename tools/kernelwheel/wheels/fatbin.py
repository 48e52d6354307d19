"""The GPU code inside a ``.so``: CUDA fat binaries (``.nv_fatbin``) and ROCm offload bundles (``.hip_fatbin``).

Pure parsing of bytes, no CUDA or ROCm tools; ``gpu_targets`` finds the sections with pyelftools and hands them here.

A CUDA fat binary section is one or more containers laid end to end, each a 16-byte header
(``<I H H Q``: magic ``0xBA55ED50``, version 1, header size, size of the entries that follow) and its entries, each
an entry header followed by its payload (padded to 8 bytes):

=======  ====  ======================================================================================
offset   type  field
=======  ====  ======================================================================================
0x00     u16   kind: 1 PTX, 2 ELF (SASS, a cubin); 8 is LTO-IR, which no driver loads (not counted)
0x04     u32   this header's size (64, or 80 to 120 for the entries of newer architectures)
0x08     u64   the payload's size, padded (the next entry starts after it)
0x1C     u32   the architecture, ``major * 10 + minor``: 90 for ``sm_90``/``compute_90``, 120 for ``sm_120``
0x28     u64   flags: 0x1000, 0x2000 (LZ4) or 0x8000 (zstd) compressed payload; 0x100000 arch-specific
               (``sm_90a``: runs on that capability only); 0x200000 family-specific (``sm_100f``)
=======  ====  ======================================================================================

The layout was checked against objects nvcc 13.0 builds for several ``-gencode`` targets and cuobjdump's
``--list-elf --list-ptx`` of them (tests/kernelwheel/wheels/test_fatbin.py builds them). A compressed entry's
architecture is in its header, so nothing is decompressed. ``__nv_relfatbin`` (the objects before the device link
of an ``-rdc`` build) is not what the driver loads and is not read.

A ROCm offload bundle (clang's ``__CLANG_OFFLOAD_BUNDLE__``) is its 24-byte magic, a u64 entry count, then per entry
u64 offset, u64 size, u64 id length and the id (``hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-``): the ``gfx`` processor of
each id is its target. A compressed bundle (``CCOB``) keeps its ids inside the compressed stream: it is counted, not
read.

Reading is hostile-input safe: nothing is read past the section, no size field allocates anything (the result is
sets of short strings), every loop advances by at least one header, counts are capped, and a size or count that
does not fit is refused with one ``InvalidVariant`` line naming the file and the offset.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from kernelwheel.io.errors import InvalidVariant

CUDA_SECTION = ".nv_fatbin"
ROCM_SECTION = ".hip_fatbin"

FATBIN_MAGIC = 0xBA55ED50
_CONTAINER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQ12xI8xQ")  # kind, version, header size, payload size, arch (0x1C), flags (0x28)
ENTRY_MIN = 64  # the smallest entry header (every field above lies within it)
ENTRY_MAX = 4096  # no entry header is near this size (nvcc 13.0 writes at most 120 bytes)
KIND_PTX, KIND_ELF = 1, 2
FLAG_COMPRESSED = 0x1000 | 0x2000 | 0x8000
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY_SPECIFIC = 0x200000
MAX_ENTRIES = 1 << 20  # a CUDA math library holds a few thousand; a million is a damaged or hostile file

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED_BUNDLE_MAGIC = b"CCOB"
_BUNDLE_ENTRY_MIN = 3 * 8 + 1  # offset, size, id length, at least one byte of id
_MAX_ID = 1024
# The processor of a target id: ``...amdhsa--gfx90a:xnack-``, ``...amdhsa-gfx906``, ``...--gfx9-4-generic``.
_GFX = re.compile(r"-(gfx[0-9a-z]+(?:-[0-9]+)*(?:-generic)?)(?::|$)")


@dataclass
class FatbinContents:
    """What one section held: SASS and PTX architectures (``9.0``, ``9.0a``, ``10.0f``), ``gfx`` targets, and how
    many entries were compressed (read from their headers all the same) or could not be read (compressed bundles)."""

    sass: set[str] = field(default_factory=set)
    ptx: set[str] = field(default_factory=set)
    rocm: set[str] = field(default_factory=set)
    entries: int = 0
    compressed: int = 0
    unread_bundles: int = 0


def arch_name(arch: int, flags: int) -> str | None:
    """``90`` → ``9.0``, with ``a``/``f`` from the flags; None for a number no GPU has (0, or beyond 99.9)."""
    if not 10 <= arch <= 999:
        return None
    suffix = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY_SPECIFIC else ""
    return f"{arch // 10}.{arch % 10}{suffix}"


def read_cuda_fatbin(data: bytes | memoryview, where: str, found: FatbinContents | None = None) -> FatbinContents:
    """Every container of a ``.nv_fatbin`` section; ``InvalidVariant`` naming ``where`` and the offset when a
    header does not fit in the section (zero padding between containers is skipped)."""
    found = found if found is not None else FatbinContents()
    size = len(data)
    offset = 0
    while offset < size:
        if offset % 8 == 0 and not any(data[offset:offset + 8]):  # zero padding between containers
            offset += 8
            continue
        if offset + _CONTAINER.size > size:
            raise _refused(where, offset, f"a fat binary header needs {_CONTAINER.size} bytes, {size - offset} left")
        magic, _version, header_size, fat_size = _CONTAINER.unpack_from(data, offset)
        if magic != FATBIN_MAGIC:
            raise _refused(where, offset, f"magic {magic:#010x}, expected {FATBIN_MAGIC:#010x}")
        if not _CONTAINER.size <= header_size <= ENTRY_MAX:
            raise _refused(where, offset, f"the container's header size is {header_size} bytes")
        end = offset + header_size + fat_size
        if end > size:
            raise _refused(where, offset, f"the container says {fat_size} bytes of entries, the section has "
                                          f"{max(size - offset - header_size, 0)} left")
        _read_entries(data, offset + header_size, end, where, found)
        offset = end
    return found


def _read_entries(data: bytes | memoryview, offset: int, end: int, where: str, found: FatbinContents) -> None:
    while offset < end:
        if offset + ENTRY_MIN > end:
            raise _refused(where, offset, f"an entry header needs {ENTRY_MIN} bytes, the container has {end - offset}")
        kind, _version, header_size, payload_size, arch, flags = _ENTRY.unpack_from(data, offset)
        if not ENTRY_MIN <= header_size <= ENTRY_MAX:
            raise _refused(where, offset, f"an entry header of {header_size} bytes (expected {ENTRY_MIN} to "
                                          f"{ENTRY_MAX})")
        if payload_size > end - offset - header_size:
            raise _refused(where, offset, f"an entry of {payload_size} bytes, the container has "
                                          f"{max(end - offset - header_size, 0)} left")
        found.entries += 1
        if found.entries > MAX_ENTRIES:
            raise _refused(where, offset, f"more than {MAX_ENTRIES} entries")
        if kind in (KIND_PTX, KIND_ELF):
            name = arch_name(arch, flags)
            if name is None:
                raise _refused(where, offset, f"an entry for architecture {arch}, which no GPU has")
            (found.sass if kind == KIND_ELF else found.ptx).add(name)
            found.compressed += bool(flags & FLAG_COMPRESSED)
        offset += header_size + payload_size


def read_offload_bundles(data: bytes | memoryview, where: str,
                         found: FatbinContents | None = None) -> FatbinContents:
    """The ``gfx`` targets of every uncompressed clang offload bundle in a ``.hip_fatbin`` section; a compressed
    bundle is counted in ``unread_bundles``."""
    found = found if found is not None else FatbinContents()
    view = memoryview(data)
    size = len(view)
    offset = 0
    while offset < size:
        start = _next_bundle(view, offset, where)
        if start is None:
            break
        if bytes(view[start:start + 4]) == COMPRESSED_BUNDLE_MAGIC:
            found.unread_bundles += 1
            break  # its size fields depend on its version; what follows it is not searched
        offset = _read_bundle(view, start, where, found)
    return found


def _next_bundle(view: memoryview, offset: int, where: str) -> int | None:
    """Where the next bundle starts, past zero padding (looked at a page at a time); None at the section's end."""
    size = len(view)
    while offset < size:
        chunk = bytes(view[offset:offset + 4096])
        stripped = chunk.lstrip(b"\0")
        if stripped:
            start = offset + len(chunk) - len(stripped)
            head = bytes(view[start:start + len(BUNDLE_MAGIC)])
            if head == BUNDLE_MAGIC or head.startswith(COMPRESSED_BUNDLE_MAGIC):
                return start
            raise _refused(where, start, f"expected an offload bundle ({BUNDLE_MAGIC.decode()} or "
                                         f"{COMPRESSED_BUNDLE_MAGIC.decode()}), found {head[:8]!r}")
        offset += len(chunk)
    return None


def _read_bundle(view: memoryview, start: int, where: str, found: FatbinContents) -> int:
    """One bundle at ``start``: its targets into ``found``; returns where it ends (its last payload's end)."""
    size = len(view)
    header = start + len(BUNDLE_MAGIC) + 8
    if header > size or bytes(view[start:start + len(BUNDLE_MAGIC)]) != BUNDLE_MAGIC:
        raise _refused(where, start, f"expected {BUNDLE_MAGIC.decode()} and an entry count")
    (count,) = struct.unpack_from("<Q", view, start + len(BUNDLE_MAGIC))
    if count > (size - header) // _BUNDLE_ENTRY_MIN or count > MAX_ENTRIES:
        raise _refused(where, start, f"an offload bundle declares {count} entries, more than the section can hold")
    offset, end = header, header
    for _ in range(count):
        if offset + 24 > size:
            raise _refused(where, offset, "an offload bundle entry runs past the section")
        payload_offset, payload_size, id_size = struct.unpack_from("<QQQ", view, offset)
        if not 0 < id_size <= min(_MAX_ID, size - offset - 24):
            raise _refused(where, offset, f"an offload bundle entry id of {id_size} bytes")
        if payload_offset > size - start or payload_size > size - start - payload_offset:
            raise _refused(where, offset, f"an offload bundle entry of {payload_size} bytes at {payload_offset}, "
                                          f"past the section's end")
        entry_id = bytes(view[offset + 24:offset + 24 + id_size]).decode("ascii", "replace")
        offset += 24 + id_size
        end = max(end, offset, start + payload_offset + payload_size)
        found.entries += 1
        if entry_id.startswith("host-"):
            continue
        target = _GFX.search(entry_id)
        if target is not None:
            found.rocm.add(target[1])
    return end


def _refused(where: str, offset: int, what: str) -> InvalidVariant:
    return InvalidVariant(f"{where}: unreadable GPU code at offset {offset}: {what}")
