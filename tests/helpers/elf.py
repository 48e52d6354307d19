"""Reading the built library in tests: its NEEDED libraries and dynamic symbols (pyelftools), demangled names."""

from __future__ import annotations

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
