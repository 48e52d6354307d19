"""The one atomic writer: a file appears under its final name complete, or not at all.

Everything is written to a temporary name in the destination's own folder (so the final step is a same-filesystem
``os.replace``), and the temporary file is removed on any failure, including ``KeyboardInterrupt`` and (inside
``sigterm_exits``) SIGTERM. Every temporary this toolkit makes, file or folder, is named
``.<final name>.<pid>.<random>.part``: the pid of the writing process is in the name, so a later run can tell a
leftover of a killed writer (SIGKILL, power loss) from one still being written, and ``sweep_stale_temporaries``
removes only the former.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from kernelwheel.io.errors import OutputNotWritable

# The longest file or folder name Linux file systems hold (NAME_MAX), in bytes.
NAME_MAX = 255
# mkstemp/mkdtemp add 8 characters from this alphabet between prefix and suffix.
_TEMPORARY = re.compile(r"^\.(?P<final>.+)\.(?P<pid>[1-9][0-9]{0,9})\.[a-z0-9_]{8}\.part$")
TEMPORARY_SUFFIX = ".part"
# Bytes a temporary's name adds to the final name: "." + "." + pid (up to 10 digits) + "." + 8 random + ".part".
TEMPORARY_NAME_OVERHEAD = 1 + 1 + 10 + 1 + 8 + len(TEMPORARY_SUFFIX)


def _prefix(final_name: str) -> str:
    return f".{final_name}.{os.getpid()}."


@contextmanager
def atomic_path(final: Path, mode: int = 0o644) -> Iterator[Path]:
    """Yield a temporary path next to ``final``; on success it becomes ``final`` (with ``mode``), else it is removed."""
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=_prefix(final.name), suffix=TEMPORARY_SUFFIX, dir=final.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, mode)
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def temporary_directory(parent: Path, label: str) -> Iterator[Path]:
    """A private folder ``parent/.<label>.<pid>.<random>.part/`` (same filesystem as ``parent``), removed with its
    contents on exit, success or not."""
    path = Path(tempfile.mkdtemp(prefix=_prefix(label), suffix=TEMPORARY_SUFFIX, dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def check_writable_directory(path: Path, what: str = "output folder") -> None:
    """Refuse, in one line and before any work, an output folder that cannot take new files: a file, a path below a
    file, a name component over NAME_MAX, a dangling symlink, or a folder (``path`` or, when it does not exist yet,
    its nearest existing ancestor) that refuses a new entry. Nothing is created: a probe folder is made and removed,
    since permission bits say nothing for root or on a read-only mount."""
    for part in path.parts:
        if len(os.fsencode(part)) > 255:
            raise OutputNotWritable(f"{what} {str(path)[:60]}...: the name {part[:40]!r}... is over 255 bytes")
    existing = path
    try:
        while not existing.exists():
            if os.path.lexists(existing):
                raise OutputNotWritable(f"{what} {path}: {existing} is a dangling symbolic link")
            if existing.parent == existing:
                break
            existing = existing.parent
        is_dir = existing.is_dir()
    except OSError as exc:  # ELOOP, ENAMETOOLONG for the whole path, EACCES on a parent
        raise OutputNotWritable(f"{what} {path}: {exc.strerror or exc}") from None
    if not is_dir:
        where = "exists and is not a folder" if existing == path else f"{existing} above it is a file, not a folder"
        raise OutputNotWritable(f"{what} {path}: {where}")
    try:
        with temporary_directory(existing, "probe"):
            pass
    except OSError as exc:
        raise OutputNotWritable(f"{what} {path}: {existing} cannot be written into: {exc.strerror or exc}") from None


def write_atomic(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` atomically; False (and nothing written) when the file already holds exactly it."""
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return True


def replace_tree(staged: Path, final: Path, trash: Path) -> None:
    """Swap the complete folder ``staged`` in as ``final``; an old ``final`` is moved to ``trash`` (same filesystem,
    removed by the caller's temporary directory), so ``final`` is always either the old or the new folder."""
    if final.exists():
        final.replace(trash)
    staged.replace(final)


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` of this machine still runs (another user's counts as running)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # another user's live process; a pid beyond the OS's: not ours to judge
        return True
    return True


def stale_temporary_owner(name: str) -> int | None:
    """The pid in a temporary's name (``.<final>.<pid>.<random>.part``); None for any other name."""
    match = _TEMPORARY.match(name)
    return int(match["pid"]) if match else None


def sweep_stale_temporaries(directory: Path) -> list[Path]:
    """Remove the temporaries this toolkit left in ``directory`` (not below it) whose writing process is gone;
    returns what was removed. Only names of the form ``.<final>.<pid>.<random>.part`` are considered, only regular
    files and real folders (never a symlink, never followed), and one whose pid is alive is left alone (another
    run may be writing it). A missing or unreadable ``directory``, or an entry that cannot be removed, is skipped.
    The pid check is local: temporaries written from another machine or PID namespace into a shared folder are
    judged by this machine's processes."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return []
    removed: list[Path] = []
    for entry in entries:
        pid = stale_temporary_owner(entry.name)
        if pid is None or process_alive(pid):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            elif entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
            else:
                continue
        except OSError:
            continue
        removed.append(Path(entry.path))
    return removed


class Terminated(SystemExit):
    """Raised in the main thread on SIGTERM inside ``sigterm_exits``: unwinds like an exception, so every
    ``atomic_path`` and ``temporary_directory`` removes its temporary; exits 143 (128 + SIGTERM)."""

    def __init__(self) -> None:
        super().__init__(128 + signal.SIGTERM)


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the cleanup short
    raise Terminated()


@contextmanager
def sigterm_exits() -> Iterator[None]:
    """Within the block, SIGTERM raises ``Terminated`` instead of killing the process outright (main thread only;
    elsewhere the block runs unchanged). The previous handler comes back afterwards."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
