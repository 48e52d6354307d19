"""What a kernel's ``.so`` files require, read with pyelftools: ELF check, CPU, symbol versions, Python ABI.

The wheel tags come from here and are never assumed:

* platform: ``manylinux_2_YY`` with YY the newest ``GLIBC_2.YY`` symbol version any file needs (at least 2.17),
  raised to the oldest manylinux policy (auditwheel's ``manylinux-policy.json``) whose lists allow every
  ``GLIBCXX_*``, ``CXXABI_*`` and ``GCC_*`` version needed: each manylinux image ships a fixed libstdc++
  (manylinux_2_28 allows up to GLIBCXX_3.4.24, GCC 8's). A libstdc++ version newer than every policy falls back to
  the ``GLIBC`` floor alone.
* python/abi: ``*.abi3.so`` → ``cp39-abi3``; ``*.cpython-3XY-*.so`` → ``cp3XY-cp3XY``. A shared library without a
  ``PyInit_*`` export (loaded through ``torch.ops.load_library``) does not constrain the Python version.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection
from elftools.elf.sections import SymbolTableSection

from tools.kernelwheel.errors import InvalidVariant
from tools.kernelwheel.naming import manylinux_tag

ELF_MAGIC = b"\x7fELF"
_MACHINES = {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64", "EM_PPC64": "ppc64le", "EM_S390": "s390x"}
_CPYTHON_SUFFIX = re.compile(r"\.cpython-3(\d+)[a-z]*-[^.]+\.so$")
_VERSIONED = re.compile(r"^(GLIBC|GLIBCXX|CXXABI|GCC)_([0-9][0-9.]*|TM_\d+)$")
# PEP 384: a module built with Py_LIMITED_API=0x03090000 is tagged cp39-abi3 (kernel-builder, issue A).
ABI3_PYTHON = "cp39"


def is_elf(data: bytes) -> bool:
    return data[:4] == ELF_MAGIC


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


@dataclass(frozen=True)
class ElfInfo:
    """One shared object: its CPU, the symbol versions it needs, and whether it is a Python extension."""

    path: str
    cpu: str
    needed_versions: frozenset[tuple[str, str]]  # {("GLIBC", "2.28"), ("GLIBCXX", "3.4.21"), ...}
    is_extension: bool  # exports PyInit_*
    python_abi: str | None  # "abi3", "cp311" or None (not an extension / bare .so)

    @property
    def glibc(self) -> tuple[int, int] | None:
        versions = [_version_key(v) for lib, v in self.needed_versions if lib == "GLIBC" and v[0].isdigit()]
        if not versions:
            return None
        newest = max(versions)
        return (newest[0], newest[1] if len(newest) > 1 else 0)


def read_elf(path: Path, display: str | None = None) -> ElfInfo:
    """Read ``path``; ``InvalidVariant`` if it is not an ELF shared object."""
    shown = display or str(path)
    with path.open("rb") as fh:
        if not is_elf(fh.read(4)):
            raise InvalidVariant(f"{shown}: not an ELF file (a .so in a Linux build must be an ELF shared object)")
        fh.seek(0)
        try:
            elf = ELFFile(fh)
            cpu = _MACHINES.get(elf["e_machine"], str(elf["e_machine"]))
            needed: set[tuple[str, str]] = set()
            exports_pyinit = False
            for section in elf.iter_sections():
                if isinstance(section, GNUVerNeedSection):
                    for _verneed, auxs in section.iter_versions():
                        for aux in auxs:
                            match = _VERSIONED.match(aux.name)
                            if match:
                                needed.add((match[1], match[2]))
                if isinstance(section, SymbolTableSection) and section.name == ".dynsym":
                    for sym in section.iter_symbols():
                        if (
                            sym.name.startswith("PyInit_")
                            and sym["st_shndx"] != "SHN_UNDEF"
                            and sym["st_info"]["type"] == "STT_FUNC"
                        ):
                            exports_pyinit = True
        except ELFError as exc:
            raise InvalidVariant(f"{shown}: unreadable ELF file: {exc}") from None
    name = path.name
    python_abi: str | None = None
    if exports_pyinit:
        cpython = _CPYTHON_SUFFIX.search(name)
        if name.endswith(".abi3.so"):
            python_abi = "abi3"
        elif cpython:
            python_abi = f"cp3{cpython[1]}"
        else:
            # A bare "mod.so" imports on any CPython 3; it is abi3 in practice for kernel-builder output.
            python_abi = "abi3"
    return ElfInfo(shown, cpu, frozenset(needed), exports_pyinit, python_abi)


@cache
def _manylinux_policies() -> list[dict[str, object]]:
    try:
        text = resources.files("auditwheel.policy").joinpath("manylinux-policy.json").read_text()
    except (ModuleNotFoundError, FileNotFoundError):
        return []
    policies = [p for p in json.loads(text) if str(p["name"]).startswith("manylinux_")]
    return sorted(policies, key=lambda p: -int(str(p["priority"])))


def _glibc_of_policy(name: str) -> tuple[int, int]:
    _, major, minor = name.split("_")[:3]
    return int(major), int(minor)


def platform_tag(infos: Iterable[ElfInfo], cpu: str) -> str:
    """``manylinux_2_YY_<cpu>`` for the oldest glibc (and libstdc++) that provides every needed version."""
    infos = list(infos)
    needed = set().union(*(i.needed_versions for i in infos)) if infos else set()
    glibc_floor = max((i.glibc for i in infos if i.glibc), default=(2, 17))
    for policy in _manylinux_policies():
        allowed: dict[str, list[str]] = policy["symbol_versions"].get(cpu, {})  # type: ignore[attr-defined]
        if not allowed:
            continue
        # GLIBC itself is taken exactly (PEP 600 tags exist for every glibc minor); policies only map the
        # libstdc++/libgcc versions (GLIBCXX, CXXABI, GCC) to the manylinux image that ships them.
        if all(v in allowed.get(lib, []) for lib, v in needed if lib in allowed and lib != "GLIBC"):
            glibc = _glibc_of_policy(str(policy["name"]))
            return manylinux_tag(max(glibc, glibc_floor), cpu)
    return manylinux_tag(glibc_floor, cpu)


@dataclass(frozen=True)
class PythonTags:
    python_tag: str
    abi_tag: str
    requires_python: str | None


def python_tags(infos: Iterable[ElfInfo]) -> PythonTags:
    """``cp39-abi3`` when every extension is abi3, ``cpXY-cpXY`` for version-specific ones, ``py3-none`` if none."""
    abis = {i.python_abi for i in infos if i.is_extension}
    specific = sorted(a for a in abis if a and a != "abi3")
    if len(specific) > 1:
        raise InvalidVariant(f"extensions for several Python versions in one variant: {', '.join(specific)}")
    if specific:
        tag = specific[0]
        return PythonTags(tag, tag, f"=={tag[2]}.{tag[3:]}.*")
    if abis:
        return PythonTags(ABI3_PYTHON, "abi3", f">={ABI3_PYTHON[2]}.{ABI3_PYTHON[3:]}")
    return PythonTags("py3", "none", None)
