"""Another process that holds a lock while a test runs: a Python script run as a child, which prints ``held`` once
it holds what it takes, and is killed with SIGKILL when the test's block ends, as a crash would end it (the kernel
then releases its flock locks)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tests.helpers.repo import REPO_ROOT


@contextmanager
def child_holding(script: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """``python -c script *args`` with the checkout's kernelwheel, from the moment it printed ``held`` to the end of
    the block."""
    child = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "tools")})
    try:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        yield child
    finally:
        child.kill()
        child.wait()
