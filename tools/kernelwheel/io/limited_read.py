"""Reading a small file the user named or the toolkit found (a lock file, a trusted root, a cache, an index page):
a regular file only, and never more than a limit.

``open()`` of a FIFO waits for a writer and a read of /dev/zero never ends, so a path given as ``--lock FIFO`` hung
the command. Here the file is opened without blocking and checked with ``fstat`` on the open descriptor (no window
between the check and the read), then read in chunks, stopping one byte past the limit: enough for the caller to
refuse it, without allocating the limit (up to 2 GiB for a wheel) up front.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_CHUNK_BYTES = 1 << 20

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularFile(OSError):
    """The path is a FIFO, a device or a socket; ``strerror`` says which, as the ``OSError`` callers already show."""

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(errno.EINVAL, f"not a regular file ({kind})", str(path))


def file_problem(path: Path) -> str | None:
    """None when ``path`` is a regular file (or a symlink to one); else what it is, for a one-line error: "no such
    file", "a directory, not a file", "not a regular file (a FIFO)". Never raises (a name too long is "no such
    file", as ``os.path.isfile`` has it)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # ValueError: a NUL in the name
        return "no such file"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory, not a file"
    return f"not a regular file ({_kind(mode)})"


def _kind(mode: int) -> str:
    return next((kind for test, kind in _KINDS if test(mode)), "not a file")


def read_limited(path: Path, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes + 1`` of them (more than ``max_bytes`` means the
    file is over the limit). A directory raises ``IsADirectoryError`` as ``open()`` would; a FIFO, device or socket
    raises ``NotRegularFile``; other failures are the ``OSError`` of the system call."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, _kind(mode))
        received = bytearray()
        while len(received) <= max_bytes:
            chunk = os.read(fd, min(_CHUNK_BYTES, max_bytes + 1 - len(received)))
            if not chunk:
                break
            received += chunk
        return bytes(received)
    finally:
        os.close(fd)
