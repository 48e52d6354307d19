"""io.file_lock between real processes: a held lock refuses at once or after a bounded wait, naming its recorded
holder; shared holders coexist; a holder killed with SIGKILL frees the lock and its record is not believed."""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import time
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from kernelwheel.io.errors import LockHeld
from kernelwheel.io.file_lock import Holder, file_lock, recorded_holder
from tests.helpers.lock_holders import child_holding

_HOLD = """
import sys, time
from pathlib import Path
from kernelwheel.io.file_lock import Holder, file_lock
with file_lock(Path(sys.argv[1]), shared=sys.argv[2] == "shared", holder=Holder.me("a test holder")):
    print("held", flush=True)
    time.sleep(600)
"""


def holding(path: Path, mode: str = "exclusive") -> AbstractContextManager[subprocess.Popen[str]]:
    """Another process holding ``path`` until the block ends (then killed with SIGKILL, as a crash would)."""
    return child_holding(_HOLD, str(path), mode)


def test_a_held_lock_refuses_at_once_naming_its_holder(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    with holding(path) as child:
        started = time.monotonic()
        with pytest.raises(LockHeld) as refused, file_lock(path, wait=0, refused="another run holds it"):
            pass
        assert time.monotonic() - started < 2
        assert str(refused.value).startswith(
            f"{path}: another run holds it (pid {child.pid} on {socket.gethostname()}, a test holder, since 20")
        started = time.monotonic()
        with pytest.raises(LockHeld), file_lock(path, wait=0.5):
            pass
        assert 0.5 <= time.monotonic() - started < 3


def test_shared_holders_coexist_and_keep_an_exclusive_one_out(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    with holding(path, "shared"):
        with file_lock(path, shared=True, wait=0, holder=Holder.me("not recorded: shared")):
            assert recorded_holder(path) is None  # shared holders record nothing: each would overwrite the others
        with pytest.raises(LockHeld), file_lock(path, wait=0):
            pass


def test_a_killed_holder_frees_the_lock_and_its_record_is_not_believed(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    with holding(path) as child:
        held = recorded_holder(path)
        assert held is not None and (held.pid, held.host, held.what) == (child.pid, socket.gethostname(),
                                                                         "a test holder")
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert json.loads(path.read_text())["pid"] == child.pid  # the record a SIGKILL left behind
        assert recorded_holder(path) is None  # its process is gone
        with file_lock(path, wait=0, holder=Holder.me("the next run")):  # the kernel released it: no wait
            mine = recorded_holder(path)
            assert mine is not None and (mine.pid, mine.what) == (os.getpid(), "the next run")
        assert path.read_bytes() == b""  # released: no holder left recorded


def test_a_lock_path_that_is_a_symlink_is_never_followed(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").write_text("not a lock\n")
    (tmp_path / "run.lock").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError) as refused, file_lock(tmp_path / "run.lock", wait=0, holder=Holder.me("a run")):
        pass
    assert refused.value.errno == errno.ELOOP and str(refused.value.filename) == str(tmp_path / "run.lock")
    assert (tmp_path / "elsewhere").read_text() == "not a lock\n"
