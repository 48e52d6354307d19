"""What a kernel's ``.so`` files require: ELF check, CPU, symbol versions, Python ABI; and so its wheel tags.

This is where hub2wheel's manylinux tag is decided, never assumed:

* platform: ``manylinux_2_YY`` with YY the newest ``GLIBC_2.YY`` symbol version any file needs (at least 2.17),
  raised to the oldest manylinux policy whose lists allow every ``GLIBCXX_*``, ``CXXABI_*`` and ``GCC_*`` version
  needed: each manylinux image ships a fixed libstdc++ (manylinux_2_28 allows up to GLIBCXX_3.4.24, GCC 8's). The
  policies and the symbol-version reader are auditwheel's public API (``WheelPolicies.versioned_symbols_policy``,
  ``elf_find_versioned_symbols``). GLIBC itself is taken exactly, because PEP 600 defines a tag for every glibc
  minor while auditwheel only has policies for some (2.25 would become 2_26). A libstdc++/libgcc version that no
  manylinux policy allows (newer than every image's, or made up) refuses the variant, naming the version: no tag
  promises a system that has it.
* python/abi: ``*.abi3.so`` → ``cp39-abi3``; ``*.cpython-3XY-*.so`` → ``cp3XY-cp3XY``. A shared library without a
  ``PyInit_*`` export (loaded through ``torch.ops.load_library``) does not constrain the Python version.

A file is ELF by its magic bytes (``has_elf_magic``), whatever its name. Reading one is hostile-input safe: the
file is mapped, not read into a buffer sized by header fields; the symbol and symbol-version walks are bounded by
the file's size (a damaged ``.gnu.version_r`` can declare billions of entries); and any exception pyelftools or
auditwheel raises on a damaged file becomes one ``InvalidVariant`` line.
"""

from __future__ import annotations

import importlib.metadata
import json
import mmap
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

from kernelwheel.format.variant_pieces import ABI3T_MIN_PYTHON, Python
from kernelwheel.io import json_cache
from kernelwheel.io.errors import InvalidVariant
from kernelwheel.wheels.naming import manylinux_tag

if TYPE_CHECKING:  # auditwheel and pyelftools are imported where a file is parsed (~0.2 s of every start otherwise)
    from auditwheel.policy import WheelPolicies

ELF_MAGIC = b"\x7fELF"
_MACHINES = {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64", "EM_PPC64": "ppc64le", "EM_S390": "s390x"}
_CPYTHON_SUFFIX = re.compile(r"\.cpython-3([0-9]+)[a-z]*-[^.]+\.so$")
_VERSIONED = re.compile(r"^(GLIBC|GLIBCXX|CXXABI|GCC)_([0-9][0-9.]*|TM_[0-9]+)$")
# PEP 384: a module built with Py_LIMITED_API=0x03090000 is tagged cp39-abi3 (as kernel-builder builds).
ABI3_PYTHON = "cp39"


def is_elf(data: bytes) -> bool:
    return data[:4] == ELF_MAGIC


def has_elf_magic(path: Path) -> bool:
    """Whether the file starts with the ELF magic (how a compiled file is recognised, never by its name)."""
    with path.open("rb") as fh:
        return is_elf(fh.read(4))


def looks_like_shared_object(name: str) -> bool:
    """``x.so`` / ``x.so.1``: a name that promises ELF, so a non-ELF file under it is refused."""
    return name.endswith(".so") or ".so." in name


class _Unreadable(Exception):
    """A damaged-file finding of our own, inside the block that turns every exception into InvalidVariant."""


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


# The verdict cache: what ``_parse`` found in a file, keyed by the file's content sha256 and by the checker (this
# module's rules and the auditwheel / pyelftools versions doing the parsing). A verdict is a function of those bytes
# and that checker only, so a file with a known hash is not parsed again; only files that parsed are kept (a
# refusal is always found by parsing). ``platform_tag`` answers are kept the same way, keyed by their inputs.
_CHECKER_RULES = 2  # raise whenever _parse or platform_tag decides differently
# Process-wide, not per run: a verdict is a function of the file's bytes and this checker, whichever run asks.
_VERDICTS: dict[str, tuple[str, frozenset[tuple[str, str]], bool]] = {}
_PLATFORMS: dict[str, str] = {}
_VERDICTS_LOCK = threading.Lock()
_VERDICTS_FORMAT = 1
_VERDICTS_MAX_BYTES = 64 * 1024 * 1024


@cache
def checker_version() -> str:
    """What a cached verdict was decided by: this module's rules and the parsing libraries' versions."""
    versions = []
    for dist in ("auditwheel", "pyelftools"):
        try:
            versions.append(f"{dist}={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{dist}=?")
    return ";".join([f"rules={_CHECKER_RULES}", *versions])


def load_verdicts(path: Path) -> None:
    """Remember the verdicts ``save_verdicts`` kept in ``path``; a missing or damaged file, or one written by
    another checker version, is ignored (every file is then parsed)."""
    data = json_cache.load(path, _verdicts_header(), max_bytes=_VERDICTS_MAX_BYTES)
    if data is None:
        return
    try:
        elfs = {str(sha): (str(cpu), frozenset((str(lib), str(v)) for lib, v in needed), pyinit is True)
                for sha, (cpu, needed, pyinit) in data["elf"].items()}
        platforms = {str(key): str(tag) for key, tag in data["platform"].items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        return
    with _VERDICTS_LOCK:
        for sha, verdict in elfs.items():
            _VERDICTS.setdefault(sha, verdict)
        for key, tag in platforms.items():
            _PLATFORMS.setdefault(key, tag)


def save_verdicts(path: Path) -> None:
    """Keep the verdicts known to this run in ``path`` (atomically) for the next run."""
    with _VERDICTS_LOCK:
        body = {"elf": {sha: [cpu, sorted(needed), pyinit] for sha, (cpu, needed, pyinit) in sorted(_VERDICTS.items())},
                "platform": dict(sorted(_PLATFORMS.items()))}
    json_cache.save(path, _verdicts_header(), body)


def _verdicts_header() -> dict[str, object]:
    return {"format": _VERDICTS_FORMAT, "checker": checker_version()}


def read_elf(path: Path, display: str | None = None, *, sha256: bytes | None = None) -> ElfInfo:
    """Read ``path``; ``InvalidVariant`` if it is not an ELF file or cannot be parsed. ``sha256``: the file's content
    digest, when the caller has it (``digests.file_digest``): a file already parsed by this checker is not parsed
    again (the verdict cache above)."""
    shown = display or str(path)
    key = sha256.hex() if sha256 is not None else None
    try:
        with path.open("rb") as fh:
            if not is_elf(fh.read(4)):
                raise InvalidVariant(f"{shown}: not an ELF file (a .so in a Linux build must be an ELF shared object)")
            known = _VERDICTS.get(key) if key is not None else None
            if known is not None:
                cpu, needed, exports_pyinit = known
            else:
                with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                    cpu, found, exports_pyinit = _parse(mapped, len(mapped))
                needed = frozenset(found)
                if key is not None:
                    with _VERDICTS_LOCK:
                        _VERDICTS[key] = (cpu, needed, exports_pyinit)
    except InvalidVariant:
        raise
    except OSError as exc:
        raise InvalidVariant(f"{shown}: cannot be read: {exc.strerror or exc}") from None
    except Exception as exc:  # pyelftools and auditwheel raise any type on a damaged file
        reason = str(exc).splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise InvalidVariant(f"{shown}: unreadable ELF file: {reason}") from None
    name = path.name
    python_abi: str | None = None
    if exports_pyinit:
        cpython = _CPYTHON_SUFFIX.search(name)
        if name.endswith(".abi3.so"):
            python_abi = "abi3"
        elif name.endswith(".abi3t.so"):  # PEP 803: the free-threaded stable ABI (3.15+)
            python_abi = "abi3t"
        elif cpython:
            python_abi = f"cp3{cpython[1]}"
        else:
            # A bare "mod.so" imports on any CPython 3; it is abi3 in practice for kernel-builder output.
            python_abi = "abi3"
    return ElfInfo(shown, cpu, needed, exports_pyinit, python_abi)


def _parse(stream: mmap.mmap, size: int) -> tuple[str, set[tuple[str, str]], bool]:
    """``(cpu, needed symbol versions, exports PyInit_*)``; every walk is bounded by the file's size."""
    from auditwheel.elfutils import elf_find_versioned_symbols
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    # No honest file has more entries than it has 8-byte units (a symbol or version entry is 16 bytes or more).
    most = max(size // 8, 64)
    elf = ELFFile(cast("IO[bytes]", stream))  # an mmap has the read/seek/tell ELFFile uses
    cpu = _MACHINES.get(elf["e_machine"], str(elf["e_machine"]))
    needed: set[tuple[str, str]] = set()
    for count, (_library, version) in enumerate(elf_find_versioned_symbols(elf)):
        if count > most:
            raise _Unreadable(f"more symbol-version entries than a {size}-byte file can hold")
        match = _VERSIONED.fullmatch(version)
        if match:
            needed.add((match[1], match[2]))
    # auditwheel's elf_is_python_extension wants PyInit_<file name>; a kernel's module may be named otherwise
    # (loaded by torch.ops.load_library), so any defined PyInit_* export counts here.
    exports_pyinit = False
    for section in elf.iter_sections():
        if isinstance(section, SymbolTableSection) and section.name == ".dynsym":
            if section.num_symbols() > most:
                raise _Unreadable(f".dynsym declares {section.num_symbols()} symbols, more than the file can hold")
            # Parsing every symbol costs ~0.1 s for a torch-sized .dynsym (pyelftools, under the GIL): look for the
            # name in the symbols' string table first; a library that never names PyInit_ cannot export one.
            if b"PyInit_" not in section.stringtable.data():
                continue
            for sym in section.iter_symbols():
                if (
                    sym.name.startswith("PyInit_")
                    and sym["st_shndx"] != "SHN_UNDEF"
                    and sym["st_info"]["type"] == "STT_FUNC"
                ):
                    exports_pyinit = True
    return cpu, needed, exports_pyinit


@cache
def _policies(cpu: str) -> WheelPolicies:
    from auditwheel.architecture import Architecture
    from auditwheel.libc import Libc
    from auditwheel.policy import WheelPolicies

    try:
        arch = Architecture(cpu)
    except ValueError:
        raise InvalidVariant(f"CPU {cpu!r} has no manylinux policy in auditwheel") from None
    return WheelPolicies(libc=Libc.GLIBC, arch=arch)


def _glibc_of_policy(name: str) -> tuple[int, int]:
    _, major, minor = name.split("_")[:3]
    return int(major), int(minor)


@cache
def _allowed_versions(cpu: str) -> dict[str, frozenset[str]]:
    """Per library (``GLIBCXX``, ``CXXABI``, ``GCC``...), every version some manylinux policy of ``cpu`` allows."""
    allowed: dict[str, set[str]] = {}
    for policy in _policies(cpu):
        if policy.name.startswith("manylinux_"):
            for lib, versions in policy.symbol_versions.items():
                allowed.setdefault(lib, set()).update(versions)
    return {lib: frozenset(versions) for lib, versions in allowed.items()}


def _refuse_unknown_versions(libstdcxx: dict[str, set[str]], cpu: str) -> None:
    """Refuse a file needing a libstdc++/libgcc symbol version (``GLIBCXX_3.4.99``) that no manylinux policy allows.

    auditwheel answers such a set with its generic ``linux`` policy; taking the GLIBC floor then tagged the file
    ``manylinux_2_17``, lower than the same file without that version (``2_24``): pip would install it on systems
    whose libstdc++ cannot load it. No manylinux tag promises a system that has the version, so the variant is
    refused instead, naming it and the newest version any policy allows."""
    allowed = _allowed_versions(cpu)
    for path, versions in sorted(libstdcxx.items()):
        for symbol in sorted(versions):
            lib, _, version = symbol.partition("_")
            if lib in allowed and version not in allowed[lib]:
                newest = max(allowed[lib], key=_version_key, default="none")
                raise InvalidVariant(
                    f"{path}: needs symbol version {symbol}, which no manylinux policy in auditwheel allows; expected "
                    f"at most {lib}_{newest} (a libstdc++/libgcc that a manylinux image ships)")


def platform_tag(infos: Iterable[ElfInfo], cpu: str) -> str:
    """``manylinux_2_YY_<cpu>`` for the oldest glibc (and libstdc++) that provides every needed version."""
    infos = list(infos)
    glibc_floor = max((i.glibc for i in infos if i.glibc), default=(2, 17))
    # Only libstdc++/libgcc versions go to the policy: GLIBC is taken exactly (module docstring).
    libstdcxx = {i.path: {f"{lib}_{v}" for lib, v in i.needed_versions if lib != "GLIBC"} for i in infos}
    # The answer depends on the version sets only (not on the file names): the key for the verdict cache.
    key = json.dumps([cpu, list(glibc_floor), sorted(sorted(versions) for versions in libstdcxx.values())])
    known = _PLATFORMS.get(key)
    if known is not None:
        return known
    _refuse_unknown_versions(libstdcxx, cpu)
    policy = _policies(cpu).versioned_symbols_policy(libstdcxx)
    if not policy.name.startswith("manylinux_"):  # each version is known, but no one policy allows them all
        wanted = sorted({v for versions in libstdcxx.values() for v in versions})
        raise InvalidVariant(f"no manylinux policy allows all of {', '.join(wanted)} together; expected the symbol "
                             "versions of one manylinux image's libstdc++ and libgcc")
    tag = manylinux_tag(max(_glibc_of_policy(policy.name), glibc_floor), cpu)
    with _VERDICTS_LOCK:
        _PLATFORMS[key] = tag
    return tag


@dataclass(frozen=True)
class PythonTags:
    python_tag: str
    abi_tag: str
    requires_python: str | None


def python_tags(infos: Iterable[ElfInfo], declared: Python | None = None) -> PythonTags:
    """``cp39-abi3`` when every extension is abi3, ``cpXY-cpXY`` for version-specific ones, ``py3-none`` if none.

    ``declared``: the ``cpython-X.Y-abi3|abi3t`` a kernels 0.19 variant name spells. kernels refuses the build below
    Python X.Y, so its stable-ABI extensions are tagged ``cpXY-<abi>`` and the wheel requires ``>=X.Y``."""
    abis = {i.python_abi for i in infos if i.is_extension}
    if declared is not None and abis <= {"abi3", "abi3t"}:
        return _declared_tags(declared, bool(abis))
    specific = sorted(a for a in abis if a and a not in ("abi3", "abi3t"))
    if len(specific) > 1:
        raise InvalidVariant(f"extensions for several Python versions in one variant: {', '.join(specific)}")
    if specific:
        tag = specific[0]
        return PythonTags(tag, tag, f"=={tag[2]}.{tag[3:]}.*")
    if "abi3t" in abis:
        return _declared_tags(Python(ABI3T_MIN_PYTHON, "abi3t"), True)
    if abis:
        return PythonTags(ABI3_PYTHON, "abi3", f">={ABI3_PYTHON[2]}.{ABI3_PYTHON[3:]}")
    return PythonTags("py3", "none", None)


def _declared_tags(declared: Python, compiled: bool) -> PythonTags:
    floor = f">={declared.version.major}.{declared.version.minor}"
    if not compiled:  # no extension module: any Python 3 imports it, kernels still wants X.Y
        return PythonTags("py3", "none", floor)
    return PythonTags(declared.tag, declared.abi, floor)
