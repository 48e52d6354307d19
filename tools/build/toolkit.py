"""The one rule for a build's CUDA tag (``cu130`` in ``img2gray-cu130`` and in ``torch215-cxx11-cu130-...``): the
toolkit that compiled the binary.

A binary compiled by nvcc X.Y needs a CUDA X.Y (or newer) runtime, and kernels' rule (same major, minor <= the
torch's) loads a ``cuXY`` build under any newer-minor torch of that major. So the compiler's version is what the
binary asks for, not the torch's CUDA it was built against: torch 2.15 for CUDA 13.2 with nvcc 13.0 gives ``cu130``
(cmake/cuda.cmake, which names the wheel, records the compiler's version the same way). Torch's CUDA is used only
when there is no compiler to ask; a torch without CUDA gives ``cpu``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from kernelwheel.wheels.naming import cuda_backend_tag

_RELEASE = re.compile(r"release (\d+\.\d+)")


def backend_tag(nvcc: str | None, torch_cuda: str | None) -> str:
    """``cu<XY>`` of the compiler (``nvcc``: ``"13.0"``), else of torch's CUDA; ``cpu`` for a torch without CUDA."""
    if torch_cuda is None or torch_cuda == "":
        return "cpu"
    return cuda_backend_tag(nvcc or torch_cuda)


def nvcc_version() -> str | None:
    """The CUDA compiler's ``major.minor``, found where cmake/cuda.cmake looks ($CUDA_HOME, $CUDACXX, nvcc on PATH,
    /usr/local/cuda); None when there is none or it does not answer."""
    home = os.environ.get("CUDA_HOME")
    candidates = [f"{home}/bin/nvcc" if home else None, os.environ.get("CUDACXX"), shutil.which("nvcc"),
                  "/usr/local/cuda/bin/nvcc"]
    nvcc = next((c for c in candidates if c and Path(c).is_file()), None)
    if nvcc is None:
        return None
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = _RELEASE.search(out)
    return match[1] if match else None
