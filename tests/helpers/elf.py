"""Reading the built library in tests: its NEEDED libraries and dynamic symbols (pyelftools), demangled names; and
damaged or foreign-CPU copies of an ELF file for the hostile-input tests."""

from __future__ import annotations

import io
import struct
import subprocess
import zipfile
from pathlib import Path

from elftools.elf.elffile import ELFFile

LIBRARY = "img2gray/_C.abi3.so"


def extracted_library(wheel: Path, into: Path) -> Path:
    """The wheel's ``img2gray/_C.abi3.so``, extracted under ``into``."""
    with zipfile.ZipFile(wheel) as archive:
        archive.extract(LIBRARY, into)
    return into / LIBRARY


def needed_libraries(so: Path) -> list[str]:
    with so.open("rb") as f:
        dynamic = ELFFile(f).get_section_by_name(".dynamic")
        return [tag.needed for tag in dynamic.iter_tags() if tag.entry.d_tag == "DT_NEEDED"]


def dynamic_symbols(so: Path) -> tuple[list[str], list[str]]:
    """(undefined, defined) names in the dynamic symbol table."""
    with so.open("rb") as f:
        symbols = list(ELFFile(f).get_section_by_name(".dynsym").iter_symbols())
    undefined = [s.name for s in symbols if s.name and s["st_shndx"] == "SHN_UNDEF"]
    defined = [s.name for s in symbols if s.name and s["st_shndx"] != "SHN_UNDEF"]
    return undefined, defined


def demangled(names: list[str]) -> list[str]:
    result = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
    return result.stdout.splitlines()


def as_aarch64(so: bytes) -> bytes:
    """The same ELF file claiming e_machine EM_AARCH64 (183): what the CPU check reads."""
    return so[:18] + struct.pack("<H", 183) + so[20:]


def endless_version_needs(so: bytes) -> bytes:
    """A damaged ``.gnu.version_r``: 2**32-1 entries declared, each pointing back at the first (vn_next = 0).
    pyelftools walks it for ever (200,000 entries take ~7 s); the fuzzing of hostile inputs hung on such a file."""
    elf = ELFFile(io.BytesIO(so))
    index = next(i for i, s in enumerate(elf.iter_sections()) if s["sh_type"] == "SHT_GNU_verneed")
    header = elf["e_shoff"] + index * elf["e_shentsize"]
    data = bytearray(so)
    data[header + 44 : header + 48] = struct.pack("<I", 0xFFFFFFFF)  # Elf64_Shdr.sh_info: the number of entries
    offset = elf.get_section(index)["sh_offset"]
    data[offset + 12 : offset + 16] = struct.pack("<I", 0)  # Elf64_Verneed.vn_next
    return bytes(data)


# A C++ library whose std::string (the C++11 ABI) needs GLIBCXX_3.4.21: auditwheel's manylinux_2_24 policy is the
# oldest that allows it (manylinux_2_17 stops at GLIBCXX_3.4.19).
CXX_NEEDS = b"GLIBCXX_3.4.21"
_CXX_SOURCE = '#include <string>\nstd::string suffixed(const char* s) { return std::string(s) + "x"; }\n'


def cxx_library(out: Path) -> bytes:
    """Compile a small C++ shared library with g++ into ``out``; returns its bytes (it needs ``CXX_NEEDS``)."""
    src = out.with_suffix(".cpp")
    src.write_text(_CXX_SOURCE)
    subprocess.run(["g++", "-shared", "-fPIC", "-O1", "-s", str(src), "-o", str(out)], check=True)
    data = out.read_bytes()
    assert CXX_NEEDS in data, "g++ no longer emits the symbol version these tests patch"
    return data


def with_version_need(so: bytes, old: bytes, new: bytes) -> bytes:
    """The same ELF file needing symbol version ``new`` where it needed ``old`` (same length): the name in
    ``.dynstr`` that ``.gnu.version_r`` points at is overwritten, which is all a symbol-version reader sees."""
    assert len(old) == len(new) and so.count(old) >= 1
    return so.replace(old, new)
