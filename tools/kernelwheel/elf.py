"""What a kernel's ``.so`` files require: ELF check, CPU, symbol versions, Python ABI; and so its wheel tags.

This is where hub2wheel's manylinux tag is decided, never assumed:

* platform: ``manylinux_2_YY`` with YY the newest ``GLIBC_2.YY`` symbol version any file needs (at least 2.17),
  raised to the oldest manylinux policy whose lists allow every ``GLIBCXX_*``, ``CXXABI_*`` and ``GCC_*`` version
  needed: each manylinux image ships a fixed libstdc++ (manylinux_2_28 allows up to GLIBCXX_3.4.24, GCC 8's). The
  policies and the symbol-version reader are auditwheel's public API (``WheelPolicies.versioned_symbols_policy``,
  ``elf_find_versioned_symbols``). GLIBC itself is taken exactly, because PEP 600 defines a tag for every glibc
  minor while auditwheel only has policies for some (2.25 would become 2_26). A libstdc++ version newer than every
  policy falls back to the ``GLIBC`` floor alone.
* python/abi: ``*.abi3.so`` → ``cp39-abi3``; ``*.cpython-3XY-*.so`` → ``cp3XY-cp3XY``. A shared library without a
  ``PyInit_*`` export (loaded through ``torch.ops.load_library``) does not constrain the Python version.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from auditwheel.architecture import Architecture
from auditwheel.elfutils import elf_find_versioned_symbols
from auditwheel.libc import Libc
from auditwheel.policy import WheelPolicies
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from tools.kernelwheel.errors import InvalidVariant
from tools.kernelwheel.naming import manylinux_tag

ELF_MAGIC = b"\x7fELF"
_MACHINES = {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64", "EM_PPC64": "ppc64le", "EM_S390": "s390x"}
_CPYTHON_SUFFIX = re.compile(r"\.cpython-3(\d+)[a-z]*-[^.]+\.so$")
_VERSIONED = re.compile(r"^(GLIBC|GLIBCXX|CXXABI|GCC)_([0-9][0-9.]*|TM_[0-9]+)$")
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
            for _library, version in elf_find_versioned_symbols(elf):
                match = _VERSIONED.fullmatch(version)
                if match:
                    needed.add((match[1], match[2]))
            # auditwheel's elf_is_python_extension wants PyInit_<file name>; a kernel's module may be named
            # otherwise (loaded by torch.ops.load_library), so any defined PyInit_* export counts here.
            for section in elf.iter_sections():
                if isinstance(section, SymbolTableSection) and section.name == ".dynsym":
                    for sym in section.iter_symbols():
                        if (
                            sym.name.startswith("PyInit_")
                            and sym["st_shndx"] != "SHN_UNDEF"
                            and sym["st_info"]["type"] == "STT_FUNC"
                        ):
                            exports_pyinit = True
        except (ELFError, ValueError, KeyError, IndexError, struct.error, OSError) as exc:
            # pyelftools raises more than ELFError on a truncated or fuzzed file.
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise InvalidVariant(f"{shown}: unreadable ELF file: {reason}") from None
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
def _policies(cpu: str) -> WheelPolicies:
    try:
        arch = Architecture(cpu)
    except ValueError:
        raise InvalidVariant(f"CPU {cpu!r} has no manylinux policy in auditwheel") from None
    return WheelPolicies(libc=Libc.GLIBC, arch=arch)


def _glibc_of_policy(name: str) -> tuple[int, int]:
    _, major, minor = name.split("_")[:3]
    return int(major), int(minor)


def platform_tag(infos: Iterable[ElfInfo], cpu: str) -> str:
    """``manylinux_2_YY_<cpu>`` for the oldest glibc (and libstdc++) that provides every needed version."""
    infos = list(infos)
    glibc_floor = max((i.glibc for i in infos if i.glibc), default=(2, 17))
    # Only libstdc++/libgcc versions go to the policy: GLIBC is taken exactly (module docstring).
    libstdcxx = {i.path: {f"{lib}_{v}" for lib, v in i.needed_versions if lib != "GLIBC"} for i in infos}
    policy = _policies(cpu).versioned_symbols_policy(libstdcxx)
    if not policy.name.startswith("manylinux_"):  # only the generic linux policy allows them: newer than all
        return manylinux_tag(glibc_floor, cpu)
    return manylinux_tag(max(_glibc_of_policy(policy.name), glibc_floor), cpu)


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
