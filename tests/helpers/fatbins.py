"""Shared objects with GPU code for the fat binary tests: built by nvcc for several ``-gencode`` targets (once per
test session, in parallel), and synthetic containers and offload bundles, honest or hostile, as bytes or as a section
of a small ELF built by gcc."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytest

from tests.helpers.repo import REPO_ROOT

KERNEL = """
__global__ void scale(float* x, float a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }
extern "C" void launch(float* x, float a, int n) { scale<<<(n + 255) / 256, 256>>>(x, a, n); }
"""

# name → nvcc flags, and what cuobjdump --list-elf --list-ptx says they hold (checked with nvcc 13.0; cuobjdump
# prints a family-specific sm_100f as sm_100: the "f" is our reading of the entry's flags)
BUILDS: Mapping[str, tuple[Sequence[str], Sequence[str], Sequence[str]]] = {
    "sass80_90_ptx90": (["-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=[sm_90,compute_90]"],
                        ["8.0", "9.0"], ["9.0"]),
    "arch_specific": (["-gencode", "arch=compute_90a,code=sm_90a", "-gencode",
                       "arch=compute_100a,code=[sm_100a,compute_100a]", "-gencode", "arch=compute_120,code=compute_120"],
                      ["9.0a", "10.0a"], ["10.0a", "12.0"]),
    "compressed_all": (["-gencode", "arch=compute_75,code=sm_75", "-gencode", "arch=compute_86,code=sm_86",
                        "-gencode", "arch=compute_100f,code=sm_100f", "-Xfatbin=-compress-all"],
                       ["7.5", "8.6", "10.0f"], []),
    "ptx_only": (["-gencode", "arch=compute_75,code=compute_75"], [], ["7.5"]),
}


def nvcc() -> str | None:
    return shutil.which("nvcc") or (("/usr/local/cuda/bin/nvcc") if os.access("/usr/local/cuda/bin/nvcc", os.X_OK)
                                    else None)


_BUILT: dict[str, Path] = {}
CACHE = REPO_ROOT / "build-cmake" / "test-fatbins"  # ignored by git, removed by make clean


def built(factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``build_all`` once per checkout and compiler: the objects are kept under ``CACHE``, in a folder named by the
    digest of nvcc's version, the source and the flags, so the test processes of one `make test` (two workers, two
    venvs) and later runs share one build. A folder is moved into place whole, so a reader never sees half of one."""
    if _BUILT:
        return dict(_BUILT)
    compiler = nvcc()
    if compiler is None:
        pytest.skip("nvcc is not installed: the fat binary tests need it to build CUDA objects (CI has nvcc 13.0)")
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=True).stdout
    key = hashlib.sha256(json.dumps([version, KERNEL, {k: v[0] for k, v in BUILDS.items()}]).encode()).hexdigest()
    folder = CACHE / key[:16]
    if not all((folder / f"{name}.so").is_file() for name in BUILDS):
        fresh = factory.mktemp("nvcc-fatbins")
        build_all(fresh)
        CACHE.mkdir(parents=True, exist_ok=True)
        staged = Path(tempfile.mkdtemp(dir=CACHE, prefix=".staged-"))
        for name in BUILDS:
            shutil.copyfile(fresh / f"{name}.so", staged / f"{name}.so")
        try:
            staged.rename(folder)
        except OSError:  # another process moved its build into place first: the same bytes, keep that one
            shutil.rmtree(staged, ignore_errors=True)
    _BUILT.update({name: folder / f"{name}.so" for name in BUILDS})
    return dict(_BUILT)


def build_all(folder: Path) -> dict[str, Path]:
    """Every ``BUILDS`` entry as ``<folder>/<name>.so``, nvcc runs side by side; skips the test without nvcc."""
    compiler = nvcc()
    if compiler is None:
        pytest.skip("nvcc is not installed: the fat binary tests need it to build CUDA objects (CI has nvcc 13.0)")
    source = folder / "kernel.cu"
    source.write_text(KERNEL)
    running = {name: subprocess.Popen([compiler, "-shared", "-Xcompiler", "-fPIC", *flags, str(source), "-o",
                                       str(folder / f"{name}.so")], cwd=folder, stderr=subprocess.PIPE, text=True)
               for name, (flags, _, _) in BUILDS.items()}
    for name, process in running.items():
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, f"nvcc for {name}: {err}"
    return {name: folder / f"{name}.so" for name in BUILDS}


def entry(kind: int, arch: int, payload: bytes = b"\x7fELF....", *, flags: int = 0x11, header_size: int = 64,
          payload_size: int | None = None) -> bytes:
    """One fat binary entry: its header (the fields ``fatbin`` reads; the rest zero) and its payload padded to 8."""
    padded = payload + b"\0" * (-len(payload) % 8)
    size = len(padded) if payload_size is None else payload_size
    header = struct.pack("<HHIQ12xI8xQ", kind, 0x0101, header_size, size, arch, flags)
    return header + b"\0" * (max(header_size, 64) - len(header)) + padded


def container(entries: Iterable[bytes], *, fat_size: int | None = None, magic: int = 0xBA55ED50,
              header_size: int = 16) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", magic, 1, header_size, len(body) if fat_size is None else fat_size) + body


def bundle(ids: Sequence[str], *, count: int | None = None) -> bytes:
    """A clang offload bundle: magic, entry count, then offset, size, id length and id per entry, then payloads."""
    table = b""
    header = 24 + 8 + sum(24 + len(i) for i in ids)
    payloads = b""
    for target in ids:
        payload = f"code for {target}".encode()
        table += struct.pack("<QQQ", header + len(payloads), len(payload), len(target)) + target.encode()
        payloads += payload
    return b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(ids) if count is None else count) + table + payloads


def elf_with_section(folder: Path, name: str, section: str, data: bytes) -> Path:
    """A small shared object (gcc) holding ``data`` as section ``section`` (objcopy --add-section)."""
    if shutil.which("gcc") is None or shutil.which("objcopy") is None:
        pytest.skip("gcc and objcopy are needed to build an ELF file with a synthetic GPU section")
    source = folder / f"{name}.c"
    source.write_text("int answer(void) { return 42; }\n")
    plain = folder / f"{name}.plain.so"
    subprocess.run(["gcc", "-shared", "-fPIC", str(source), "-o", str(plain)], check=True)
    blob = folder / f"{name}.section"
    blob.write_bytes(data)
    out = folder / f"{name}.so"
    subprocess.run(["objcopy", "--add-section", f"{section}={blob}", str(plain), str(out)], check=True)
    return out


CUDA_VARIANT = "torch-stable-abi210-cu130-x86_64-linux"


def cuda_variant_repo(root: Path, so_cache: Path, gpu_library: Path, archs: Sequence[str]) -> Path:
    """A kernel repository with one flat CUDA variant: the fixture's extension module, ``gpu_library`` beside it as
    ``_gpu.so``, metadata.json declaring ``archs`` (and its digest over the files)."""
    from tests.helpers import kernel_repos

    repo = root / "gpukernel"
    vdir = kernel_repos.flat_variant(repo / "build", CUDA_VARIANT, so_cache, name="gpukernel")
    shutil.copyfile(gpu_library, vdir / "_gpu.so")
    meta = json.loads((vdir / "metadata.json").read_text())
    meta["backend"]["archs"] = list(archs)
    del meta["digest"]
    (vdir / "metadata.json").unlink()
    meta["digest"] = kernel_repos.kernel_builder_digest(vdir)
    (vdir / "metadata.json").write_text(json.dumps(meta))
    return repo
