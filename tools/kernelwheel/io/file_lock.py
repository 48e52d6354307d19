"""Advisory locks on a lock file (``flock``), shared or exclusive, waited for up to a bound or not at all.

A ``flock`` belongs to the open file, so the kernel releases it when its process ends however it ends (SIGKILL, an
OOM kill, a CI timeout): a lock left by a dead run never blocks the next one, and there is nothing to clean up by
hand. An exclusive holder may record who it is (pid, host, since when, what) in the lock file, so that a run it
refuses can name it; the record is cleared on release, and one left by a killed process on this host is ignored
(its pid is gone). The file is opened with ``O_NOFOLLOW``: a symlink planted under its name is refused, never
followed. ``flock`` locks work between the processes of one machine and, on Linux, between NFS clients (NFSv4
emulates them with byte-range locks); on other network file systems, give each machine its own folder.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from kernelwheel.io.atomic import process_alive
from kernelwheel.io.errors import LockHeld

_RECORD_BYTES = 4096
_POLL_S = 0.1


@dataclass(frozen=True)
class Holder:
    """Who holds a lock: recorded by an exclusive holder, read by a process the lock refuses."""

    pid: int
    host: str
    since: str  # UTC, ISO 8601, to the second
    what: str  # e.g. the command line's gist

    @classmethod
    def me(cls, what: str) -> Holder:
        since = datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
        return cls(os.getpid(), socket.gethostname(), since, what)

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}, {self.what}, since {self.since}"


def recorded_holder(path: Path) -> Holder | None:
    """The holder recorded in lock file ``path``; None when none is (not recorded, cleared, unreadable, another
    shape) or it is a process of this host that is gone (killed while holding: the kernel released its lock)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        raw = os.read(fd, _RECORD_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        data = json.loads(raw)
        holder = Holder(int(data["pid"]), str(data["host"]), str(data["since"]), str(data["what"]))
    except (ValueError, TypeError, KeyError):
        return None
    if holder.host == socket.gethostname() and not process_alive(holder.pid):
        return None
    return holder


def _acquire(fd: int, mode: int, wait: float | None) -> bool:
    """Take the lock on ``fd``: blocking (``wait`` None), or polling until ``wait`` seconds have passed."""
    if wait is None:
        fcntl.flock(fd, mode)
        return True
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
        time.sleep(min(_POLL_S, max(0.0, deadline - time.monotonic())))


@contextmanager
def file_lock(path: Path, *, shared: bool = False, wait: float | None = None, holder: Holder | None = None,
              refused: str = "another process holds it") -> Iterator[None]:
    """Hold lock file ``path`` (created when missing) for the block: shared or exclusive; ``wait`` None waits as long
    as it takes, a number of seconds (0: not at all) bounds the wait, then raises ``LockHeld`` (``path``:
    ``refused``, and the recorded holder when there is one). An exclusive holder records ``holder`` in the file.
    A path that cannot be opened as a lock file (a symlink: ELOOP, a folder) is the ``OSError`` of ``open``, which
    each caller words for its own command."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        if not _acquire(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX, wait):
            known = recorded_holder(path)
            by = f" ({known.describe()})" if known is not None else ""
            raise LockHeld(f"{path}: {refused}{by}")
        recorded = None if shared else holder  # only an exclusive holder records itself
        if recorded is not None:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(asdict(recorded)).encode(), 0)
        try:
            yield
        finally:
            if recorded is not None:
                os.ftruncate(fd, 0)  # a later reader finds no holder rather than a finished one
    finally:
        os.close(fd)  # releases the lock
