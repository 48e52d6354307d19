"""Which mirror runs may use one wheelhouse at once: lock files in ``<wheelhouse>/.mirror/`` (``io.file_lock``).

* A run without ``--shard`` holds ``run.lock`` exclusively: a second run of the wheelhouse (a cron job overlapping a
  manual run) is refused, or waits up to its bound, whatever it was asked to convert.
* The jobs of a CI matrix (``--shard K/N``) each convert their own kernels, writing only their own state files, so
  they share ``run.lock`` (which keeps an unsharded run out) and hold ``shard-K-of-N.lock`` exclusively (two jobs
  given the same K/N would convert the same kernels). Jobs splitting the kernels another way (another N) would
  convert some kernels twice at once: a job holds ``shards-of-N.lock`` shared and, holding it, finds whether any
  other ``shards-of-M.lock`` is held (an exclusive try, let go at once); of two such jobs starting together, the
  one that looks second is refused (both may be, never neither).

A refused run has done nothing. The locks are ``flock`` locks: a killed run's are released by the kernel.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator
from pathlib import Path

from kernelwheel.io.errors import LockHeld, OutputNotWritable
from kernelwheel.io.file_lock import Holder, file_lock, recorded_holder
from kernelwheel.mirror.plan import Shard
from kernelwheel.mirror.state import STATE_FOLDER

RUN_LOCK = "run.lock"
_SPLIT = re.compile(r"shards-of-([1-9][0-9]{0,5})\.lock", re.ASCII)
# Another split's probe holds this split's lock for an instant: a job waits this long for it even when asked not to.
_PROBE_GRACE_S = 2.0


def _shard_holders(folder: Path, count: int | None = None) -> str:
    """The recorded holders of the shard locks (of ``count`` shards only, when given), as one clause."""
    pattern = f"shard-*-of-{count}.lock" if count is not None else "shard-*-of-*.lock"
    found = [holder.describe() for path in sorted(folder.glob(pattern)) if (holder := recorded_holder(path))]
    return f" ({'; '.join(found)})" if found else ""


def _split_in_use(path: Path) -> bool:
    """Whether some job holds ``path`` (a ``shards-of-M.lock``): an exclusive try, let go at once."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases the try, if it took the lock
    return False


def _other_split(folder: Path, count: int) -> None:
    for path in sorted(folder.glob("shards-of-*.lock")):
        match = _SPLIT.fullmatch(path.name)
        if match and int(match[1]) != count and _split_in_use(path):
            raise LockHeld(f"{path}: jobs of another split (--shard K/{match[1]}) are using this wheelhouse"
                           f"{_shard_holders(folder, int(match[1]))}; every job sharing a wheelhouse must split "
                           f"the kernels alike (the same N), or this job and they would convert some kernels twice")


@contextlib.contextmanager
def mirror_lock(wheelhouse: Path, config: Path, shard: Shard | None, wait: float | None) -> Iterator[None]:
    """Hold what a run of ``config`` (``shard``'s share) needs of ``wheelhouse`` for the block; ``wait`` None waits
    as long as it takes, a number of seconds bounds the wait (0: refuse at once). Raises ``LockHeld``, one line
    naming the lock and the run holding it."""
    try:
        with _locked(wheelhouse / STATE_FOLDER, config, shard, wait):
            yield
    except OSError as exc:  # a lock file that is a symlink (never followed), a folder, on a read-only disk
        if exc.filename is None:
            raise
        raise OutputNotWritable(f"{exc.filename}: cannot be used as a lock file ({exc.strerror or exc}); "
                                "nothing was done") from None


@contextlib.contextmanager
def _locked(folder: Path, config: Path, shard: Shard | None, wait: float | None) -> Iterator[None]:
    what = f"kernelwheel mirror {config}" + (f" --shard {shard.index}/{shard.count}" if shard else "")
    with contextlib.ExitStack() as held:
        if shard is None:
            try:
                held.enter_context(file_lock(folder / RUN_LOCK, wait=wait, holder=Holder.me(what),
                                             refused="another mirror run is using this wheelhouse"))
            except LockHeld as exc:
                if recorded_holder(folder / RUN_LOCK) is not None:
                    raise
                raise LockHeld(f"{folder / RUN_LOCK}: the jobs of a sharded run (--shard) are using this "
                               f"wheelhouse{_shard_holders(folder)}") from exc
        else:
            held.enter_context(file_lock(folder / RUN_LOCK, shared=True, wait=wait,
                                         refused="another mirror run (without --shard) is using this wheelhouse"))
            grace = None if wait is None else max(wait, _PROBE_GRACE_S)
            held.enter_context(file_lock(folder / f"shards-of-{shard.count}.lock", shared=True, wait=grace))
            _other_split(folder, shard.count)
            held.enter_context(file_lock(
                folder / f"shard-{shard.index}-of-{shard.count}.lock", wait=wait, holder=Holder.me(what),
                refused=f"another job of shard {shard.index}/{shard.count} is converting the same kernels"))
        yield
