"""A command's peak memory, read by a wrapper process from ``RUSAGE_CHILDREN`` (the command and whatever it starts,
not the test process), so a test can hold a command to a memory bound."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

_WRAPPER = ("import resource, subprocess, sys; returncode = subprocess.run(sys.argv[2:]).returncode; "
            "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
            "sys.exit(returncode)")


def run_with_peak_mib(argv: list[str], report: Path, **kwargs: Any) -> tuple[subprocess.CompletedProcess[str], float]:
    """``subprocess.run(argv, capture_output=True, text=True, **kwargs)`` and the peak RSS of its process tree, in
    MiB (``report`` is where the wrapper writes it)."""
    run = subprocess.run([sys.executable, "-c", _WRAPPER, str(report), *argv], capture_output=True, text=True,
                         **kwargs)
    return run, int(report.read_text()) / 1024
