"""The GPUs a wheel's binaries run on, read from the binaries themselves (``fatbin``), and what is done with them.

``read_gpu_targets`` finds ``.nv_fatbin`` and ``.hip_fatbin`` in one ``.so`` with pyelftools (the file mapped, the
sections sliced from the mapping, never copied whole); a wheel's targets are the union over its ``.so`` files. They are
recorded twice in a wheel hub2wheel writes: ``<name>.dist-info/gpu_targets.json`` (``{"cuda_sass": ["8.0", "9.0"],
"cuda_ptx": ["9.0"], "rocm": []}``), and one line of the description (``description_line``), which the index's PEP
658 ``.metadata`` carries (it is METADATA, whose body is the description): ``kernelwheel install-command`` reads that
line back (``from_description``) to leave out a wheel the target's GPU cannot run (``cuda_problem``).

The rule is CUDA's (``entry_runtime.cuda_arch_supports``, the one the import-time check uses): SASS for ``X.Y`` runs
on capability ``X.Z`` with ``Z >= Y``, an arch-specific ``X.Ya`` on ``X.Y`` only; PTX for ``X.Y`` runs (compiled by the
driver) on any capability at or above ``X.Y``.
"""

from __future__ import annotations

import io
import json
import mmap
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

from kernelwheel.io.errors import InvalidVariant, InvalidWheel
from kernelwheel.wheels.elf import has_elf_magic, is_elf
from kernelwheel.wheels.entry_runtime import cuda_arch_supports
from kernelwheel.wheels.fatbin import CUDA_SECTION, ROCM_SECTION, FatbinContents, read_cuda_fatbin, read_offload_bundles

if TYPE_CHECKING:  # pyelftools is imported where a file is read
    from elftools.elf.elffile import ELFFile

FILE_NAME = "gpu_targets.json"  # in the wheel's .dist-info
LINE_PREFIX = "- GPU code in the binaries (read by hub2wheel): "
_CUDA_ARCH = re.compile(r"[0-9]{1,2}\.[0-9][af]?")
_ROCM_ARCH = re.compile(r"gfx[0-9a-z]+(?:-[0-9]+)*(?:-generic)?")
_LINE = re.compile(r"CUDA SASS (?P<sass>[^;]*); CUDA PTX (?P<ptx>[^;]*); ROCm (?P<rocm>[^;]*)")
_MAX_TARGETS = 256  # per kind: more is no wheel's, and keeps a hostile .metadata's line small


def _cuda_key(arch: str) -> tuple[int, int, str]:
    major, _, rest = arch.partition(".")
    return int(major), int(rest[0]), rest[1:]


@dataclass(frozen=True)
class GpuTargets:
    """SASS and PTX architectures (``9.0``, ``9.0a``, ``10.0f``) and ROCm processors (``gfx942``), sorted."""

    cuda_sass: tuple[str, ...] = ()
    cuda_ptx: tuple[str, ...] = ()
    rocm: tuple[str, ...] = ()

    @classmethod
    def of(cls, sass: Iterable[str] = (), ptx: Iterable[str] = (), rocm: Iterable[str] = ()) -> GpuTargets:
        return cls(tuple(sorted(set(sass), key=_cuda_key)), tuple(sorted(set(ptx), key=_cuda_key)),
                   tuple(sorted(set(rocm))))

    def __bool__(self) -> bool:
        return bool(self.cuda_sass or self.cuda_ptx or self.rocm)

    def union(self, other: GpuTargets) -> GpuTargets:
        return GpuTargets.of((*self.cuda_sass, *other.cuda_sass), (*self.cuda_ptx, *other.cuda_ptx),
                             (*self.rocm, *other.rocm))

    def to_json(self) -> dict[str, list[str]]:
        return {"cuda_sass": list(self.cuda_sass), "cuda_ptx": list(self.cuda_ptx), "rocm": list(self.rocm)}

    def json_bytes(self) -> bytes:
        return (json.dumps(self.to_json(), indent=2) + "\n").encode()

    @classmethod
    def from_json(cls, value: object, where: str) -> GpuTargets:
        """``gpu_targets.json``'s object, every name checked; ``InvalidWheel`` naming ``where`` otherwise."""
        if not isinstance(value, dict) or set(value) != {"cuda_sass", "cuda_ptx", "rocm"}:
            raise InvalidWheel(f"{where}: expected an object with cuda_sass, cuda_ptx and rocm, got {value!r:.80}")
        lists = {key: value[key] for key in ("cuda_sass", "cuda_ptx", "rocm")}
        for key, names in lists.items():
            pattern = _ROCM_ARCH if key == "rocm" else _CUDA_ARCH
            if (not isinstance(names, list) or len(names) > _MAX_TARGETS
                    or not all(isinstance(n, str) and pattern.fullmatch(n) for n in names)):
                raise InvalidWheel(f"{where}: {key} must be a list of names such as "
                                   f"{'gfx942' if key == 'rocm' else '9.0'}, got {names!r:.80}")
        return cls.of(lists["cuda_sass"], lists["cuda_ptx"], lists["rocm"])

    def describe(self) -> str:
        """``CUDA SASS 8.0, 9.0; CUDA PTX 9.0; ROCm none``: the description line's body, and how messages name them."""
        return "; ".join(f"{label} {', '.join(names) or 'none'}" for label, names in
                         (("CUDA SASS", self.cuda_sass), ("CUDA PTX", self.cuda_ptx), ("ROCm", self.rocm)))

    def runtime_archs(self, backend: str) -> tuple[str, ...]:
        """The archs the entry's import-time check compares with the GPU: SASS as they are, PTX as ``X.Y+PTX``;
        the ``gfx`` processors for ROCm; () for any other backend."""
        if backend == "cuda":
            return (*self.cuda_sass, *(f"{arch}+PTX" for arch in self.cuda_ptx))
        return self.rocm if backend == "rocm" else ()


def description_line(targets: GpuTargets) -> str:
    return LINE_PREFIX + targets.describe()


def from_description(description: str) -> GpuTargets | None:
    """The targets a description's line records (``description_line``); None when it has no such line (the wheel
    was not written by hub2wheel, or its binaries hold no GPU code) or the line is not one it writes."""
    lines = [line for line in description.splitlines() if line.startswith(LINE_PREFIX)]
    if len(lines) != 1:
        return None
    match = _LINE.fullmatch(lines[0][len(LINE_PREFIX):].strip())
    if match is None:
        return None
    parts = {key: [] if match[key] == "none" else match[key].split(", ") for key in ("sass", "ptx", "rocm")}
    try:
        return GpuTargets.from_json({"cuda_sass": parts["sass"], "cuda_ptx": parts["ptx"], "rocm": parts["rocm"]},
                                    "the description")
    except InvalidWheel:
        return None


def cuda_runs_on(targets: GpuTargets, capability: tuple[int, int]) -> bool:
    """Whether some SASS or PTX of ``targets`` runs on a GPU of ``capability`` (CUDA's rule, module docstring)."""
    return any(cuda_arch_supports(arch, capability) for arch in targets.runtime_archs("cuda"))


def cuda_problem(targets: GpuTargets, capability: tuple[int, int], gpu: str) -> str | None:
    """Why a GPU (``gpu``: how to name it) cannot run ``targets``' CUDA code, in one line; None when it can."""
    if cuda_runs_on(targets, capability):
        return None
    return (f"{gpu} (CUDA capability {capability[0]}.{capability[1]}) runs none of its GPU code: "
            f"{targets.describe()} (SASS runs on the same major with an equal or newer minor, PTX at or above its "
            "version)")


def declared_mismatch(declared: Sequence[str], targets: GpuTargets, backend: str, where: str) -> str | None:
    """One warning line when metadata.json's ``backend.archs`` and the binaries' targets differ; None when they
    agree (or either is empty: nothing declared, or no GPU code to compare with)."""
    if not declared or not targets:
        return None
    if backend == "rocm":
        said = {("ROCm", arch) for arch in declared}
        held = {("ROCm", arch) for arch in targets.rocm}
    elif backend == "cuda":
        said = set()
        for arch in declared:
            base = arch.removesuffix("+PTX")
            said.add(("SASS", base))
            if arch.endswith("+PTX"):
                said.add(("PTX", base))
        held = {("SASS", a) for a in targets.cuda_sass} | {("PTX", a) for a in targets.cuda_ptx}
    else:
        return None
    if said == held:
        return None
    missing = ", ".join(f"{kind} {arch}" for kind, arch in sorted(said - held)) or "none"
    extra = ", ".join(f"{kind} {arch}" for kind, arch in sorted(held - said)) or "none"
    return (f"{where}: metadata.json declares architectures {', '.join(declared)}, the binaries hold "
            f"{targets.describe()} (declared but not in the binaries: {missing}; in the binaries but not declared: "
            f"{extra}); the wheel's import-time check uses the binaries'")


def read_gpu_targets(path: Path, display: str) -> GpuTargets:
    """The GPU code of one ELF file; ``InvalidVariant`` naming ``display`` when a section cannot be read."""
    try:
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return _read(mapped, display)
    except OSError as exc:
        raise InvalidVariant(f"{display}: cannot be read: {exc.strerror or exc}") from None


def gpu_targets_of(data: bytes, display: str) -> GpuTargets:
    """The GPU code of an ELF file held in memory (a wheel's member, ``read_wheel``)."""
    return _read(data, display)


def wheel_files_targets(files: Mapping[str, bytes | Path], display: str) -> GpuTargets:
    """The GPU code of a wheel's files together: each ELF file's (recognised by its magic, never by its name), in
    memory or on disk; an unreadable one is named ``display: path``."""
    found = GpuTargets()
    for path, member in sorted(files.items()):
        if isinstance(member, Path):
            if has_elf_magic(member):
                found = found.union(read_gpu_targets(member, f"{display}: {path}"))
        elif is_elf(member):
            found = found.union(gpu_targets_of(member, f"{display}: {path}"))
    return found


def _read(buffer: bytes | mmap.mmap, display: str) -> GpuTargets:
    from elftools.elf.elffile import ELFFile

    found = FatbinContents()
    try:
        stream = io.BytesIO(buffer) if isinstance(buffer, bytes) else buffer  # an mmap reads and seeks as a file
        sections = _sections(ELFFile(cast("IO[bytes]", stream)), len(buffer), display)
        with memoryview(buffer) as whole:
            for name, offset, size in sections:
                with whole[offset:offset + size] as data:
                    reader = read_cuda_fatbin if name == CUDA_SECTION else read_offload_bundles
                    reader(data, f"{display} ({name})", found)
    except InvalidVariant:
        raise
    except Exception as exc:  # pyelftools raises any type on a damaged file
        reason = str(exc).splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise InvalidVariant(f"{display}: unreadable ELF file: {reason}") from None
    return GpuTargets.of(found.sass, found.ptx, found.rocm)


def _sections(elf: ELFFile, file_size: int, display: str) -> list[tuple[str, int, int]]:
    """``(name, offset, size)`` of the GPU code sections, each checked to lie inside the file."""
    found = []
    for name in (CUDA_SECTION, ROCM_SECTION):
        section = elf.get_section_by_name(name)
        if section is None or section["sh_type"] == "SHT_NOBITS":
            continue
        offset, size = int(section["sh_offset"]), int(section["sh_size"])
        if offset > file_size or size > file_size - offset:
            raise InvalidVariant(f"{display}: section {name} says {size} bytes at offset {offset}, past the end of "
                                 f"the {file_size}-byte file")
        found.append((name, offset, size))
    return found


def read_recorded(data: bytes | None, where: str) -> GpuTargets | None:
    """A wheel's ``gpu_targets.json`` (``where``: how to name it), checked; None when the wheel has none."""
    if data is None:
        return None
    if len(data) > 64 * 1024:
        raise InvalidWheel(f"{where}: {len(data)} bytes; expected a small JSON object")
    try:
        value = json.loads(data)
    except ValueError as exc:
        raise InvalidWheel(f"{where}: not JSON ({exc})") from None
    return GpuTargets.from_json(value, where)
