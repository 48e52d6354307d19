"""What this copy of img2gray was built with: read from ``_build_info.json``, written by CMake
(cmake/build_info.cmake, from cmake/build_info.json.in)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Optional, Tuple


@dataclass(frozen=True)
class BuildInfo:
    kernel: str
    version: str
    backend: str  # the backend's tag, the wheel's distribution suffix: "cu130", "cpu", ...
    backend_type: str  # "cuda", "cpu", ...
    backend_version: Optional[str]  # the backend toolkit's major.minor ("13.0"), None for CPU-only builds
    abi: str  # "classic" (tied to one torch minor) or "stable" (torch stable ABI)
    requires_torch: str  # "2.14" (classic: that minor only) or "2.10" (stable: that minor or newer)
    ops_namespace: str  # torch.ops namespace the library registers ("img2gray" in wheels)
    torch: str  # the torch version compiled against, e.g. "2.14.1+cu130"
    cuda: Optional[str]  # toolkit major.minor, None for CPU-only builds
    cuda_arch_list: Tuple[str, ...]


@cache
def build_info() -> BuildInfo:
    data = json.loads((Path(__file__).with_name("_build_info.json")).read_text(encoding="utf-8"))
    backend = data["backend"]  # {"type": "cuda", "version": "13.0", "tag": "cu130"}
    return BuildInfo(
        kernel=data["kernel"],
        version=data["version"],
        backend=backend["tag"],
        backend_type=backend["type"],
        backend_version=backend["version"],
        abi=data["abi"],
        requires_torch=data["requires_torch"],
        ops_namespace=data["ops_namespace"],
        torch=data["torch"],
        cuda=data["cuda"],
        cuda_arch_list=tuple(data["cuda_arch_list"]),
    )
