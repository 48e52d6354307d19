"""The target machine's GPUs, for the install plan: their CUDA compute capability, from ``--gpu-arch X.Y`` or asked
of ``nvidia-smi`` (never by importing torch, which takes seconds and needs the CUDA libraries to load).

``nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader`` prints one ``NVIDIA H100 80GB HBM3, 9.0`` line per
GPU (``compute_cap`` is known to drivers from 510 on). Without nvidia-smi, or when it fails or prints something else,
there is no GPU check, and the plan says why (``GpuCheck.reason``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

from kernelwheel.io.errors import ToolError

_CAPABILITY = re.compile(r"([0-9]{1,2})\.([0-9])")
_QUERY = ["--query-gpu=name,compute_cap", "--format=csv,noheader"]
_MAX_GPUS = 64


def parse_capability(text: str) -> tuple[int, int]:
    """``9.0`` → ``(9, 0)``; ``ToolError`` for anything else (``sm_90`` and ``90`` included)."""
    match = _CAPABILITY.fullmatch(text.strip())
    if match is None:
        raise ToolError(f"expected a CUDA compute capability such as 9.0 (an H100) or 12.0, got {text.strip()!r:.40}")
    return int(match[1]), int(match[2])


@dataclass(frozen=True)
class Gpu:
    name: str
    capability: tuple[int, int]

    @property
    def version(self) -> str:
        return f"{self.capability[0]}.{self.capability[1]}"


@dataclass(frozen=True)
class GpuCheck:
    """The GPUs every chosen wheel must run on (none: no check, and ``reason`` says why), and where they came from."""

    gpus: tuple[Gpu, ...] = ()
    source: str = ""  # "--gpu-arch" or "nvidia-smi"
    reason: str = ""  # why there is no check

    def describe(self) -> str:
        if not self.gpus:
            return f"GPU not checked: {self.reason}"
        listed = ", ".join(f"{gpu.name} (CUDA capability {gpu.version})" for gpu in self.gpus)
        return f"GPU {listed}, from {self.source}"

    def to_json(self) -> dict[str, object]:
        return {"checked": bool(self.gpus), "source": self.source or None, "reason": self.reason or None,
                "gpus": [{"name": gpu.name, "compute_capability": gpu.version} for gpu in self.gpus]}


def from_argument(text: str) -> GpuCheck:
    capability = parse_capability(text)
    return GpuCheck((Gpu("the GPU named by --gpu-arch", capability),), "--gpu-arch")


def probe(*, timeout_s: float = 20) -> GpuCheck:
    """This machine's GPUs as nvidia-smi lists them (one entry per distinct name and capability)."""
    command = shutil.which("nvidia-smi")
    if command is None:
        return GpuCheck(reason="nvidia-smi is not on PATH (pass --gpu-arch X.Y to check anyway)")
    try:
        done = subprocess.run([command, *_QUERY], capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return GpuCheck(reason=f"nvidia-smi could not be run ({type(exc).__name__}); pass --gpu-arch X.Y")
    if done.returncode != 0:
        said = (done.stdout.strip() or done.stderr.strip()).splitlines()[:1]
        return GpuCheck(reason=f"nvidia-smi exited with {done.returncode}"
                               + (f" ({said[0][:120]!r})" if said else "") + "; pass --gpu-arch X.Y")
    gpus: list[Gpu] = []
    for line in done.stdout.splitlines()[:_MAX_GPUS]:
        if not line.strip():
            continue
        name, _, cap = line.rpartition(",")
        try:
            gpu = Gpu(name.strip()[:120] or "a GPU", parse_capability(cap))
        except ToolError:
            return GpuCheck(reason=f"nvidia-smi printed {line.strip()[:120]!r}, not a name and a compute capability "
                                   "(a driver older than 510 has no compute_cap); pass --gpu-arch X.Y")
        if gpu not in gpus:
            gpus.append(gpu)
    if not gpus:
        return GpuCheck(reason="nvidia-smi lists no GPU")
    return GpuCheck(tuple(gpus), "nvidia-smi")
