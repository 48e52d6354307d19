"""Children that a test stops with a signal start with SIGINT and SIGTERM deliverable, whatever the suite inherited.

A shell running the suite in the background (``make test &``) leaves SIGINT ignored, which Python keeps; a harness
may leave a signal blocked, and the mask survives exec. Either way the child would rightly not react, and the test
would measure the harness instead of the code.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
_SIGNAL_FIELDS = ("State", "Threads", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")


def deliverable_stop_signals() -> None:
    """``preexec_fn`` for ``subprocess.Popen``: SIGINT at its default (Python installs its KeyboardInterrupt
    handler), SIGINT and SIGTERM unblocked."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)


def communicate_after_signal(child: subprocess.Popen[str], seconds: float) -> tuple[str, str]:
    """The child's (stdout, stderr) once it exits; if it is still running after ``seconds``, kill it and fail with
    its signal state as its kernel reports it (pending, blocked, ignored, caught)."""
    try:
        out, err = child.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        status = Path(f"/proc/{child.pid}/status").read_text().splitlines()
        child.kill()
        child.communicate()
        fields = [line for line in status if line.startswith(_SIGNAL_FIELDS)]
        raise AssertionError(f"still running {seconds} s after the signal: {fields}") from None
    return out or "", err or ""
