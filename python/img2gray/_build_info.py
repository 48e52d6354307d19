"""What this copy of img2gray was built with: read from ``_build_info.json``, written by CMakeLists.txt."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional, Tuple


@dataclass(frozen=True)
class BuildInfo:
    kernel: str
    version: str
    backend: str  # "cu130", "cpu", ...
    abi: str  # "classic" (tied to one torch minor) or "stable" (torch stable ABI)
    requires_torch: str  # "2.14" (classic: that minor only) or "2.10" (stable: that minor or newer)
    ops_namespace: str  # torch.ops namespace the library registers ("img2gray" in wheels)
    torch: str  # the torch version compiled against, e.g. "2.14.1+cu130"
    cuda: Optional[str]  # toolkit major.minor, None for CPU-only builds
    cuda_arch_list: Tuple[str, ...]


@lru_cache(maxsize=None)
def build_info() -> BuildInfo:
    data = json.loads((Path(__file__).with_name("_build_info.json")).read_text(encoding="utf-8"))
    return BuildInfo(
        kernel=data["kernel"],
        version=data["version"],
        backend=data["backend"],
        abi=data["abi"],
        requires_torch=data["requires_torch"],
        ops_namespace=data["ops_namespace"],
        torch=data["torch"],
        cuda=data["cuda"],
        cuda_arch_list=tuple(data["cuda_arch_list"]),
    )
