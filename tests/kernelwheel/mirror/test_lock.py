"""mirror.lock between real processes: one unsharded run per wheelhouse; the jobs of one split (--shard K/N) side by
side, each K once; jobs of another split, or an unsharded run, refused while they run; a killed run's locks freed."""

from __future__ import annotations

import os
import subprocess
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from kernelwheel.io.errors import LockHeld, OutputNotWritable
from kernelwheel.mirror.lock import mirror_lock
from kernelwheel.mirror.plan import Shard
from tests.helpers.lock_holders import child_holding

_HOLD = """
import sys, time
from pathlib import Path
from kernelwheel.mirror.lock import mirror_lock
from kernelwheel.mirror.plan import Shard
shard = Shard.parse(sys.argv[2]) if len(sys.argv) > 2 else None
with mirror_lock(Path(sys.argv[1]), Path("mirror.toml"), shard, 0):
    print("held", flush=True)
    time.sleep(600)
"""


def run_holding(house: Path, *shard: str) -> AbstractContextManager[subprocess.Popen[str]]:
    """Another process holding what a run (of ``shard``, e.g. "1/2") holds, until the block ends (then SIGKILL)."""
    return child_holding(_HOLD, str(house), *shard)


def _refused(house: Path, shard: Shard | None) -> str:
    with pytest.raises(LockHeld) as refused, mirror_lock(house, Path("mirror.toml"), shard, 0):
        pass
    return str(refused.value)


@pytest.fixture
def house(tmp_path: Path) -> Path:
    (tmp_path / ".mirror").mkdir()
    return tmp_path


def test_one_unsharded_run_at_a_time_and_a_killed_one_frees_the_wheelhouse(house: Path) -> None:
    with run_holding(house) as first:
        message = _refused(house, None)
        assert message.startswith(f"{house}/.mirror/run.lock: another mirror run is using this wheelhouse (pid "
                                  f"{first.pid} on ")
        assert "kernelwheel mirror mirror.toml, since " in message
        assert "without --shard" in _refused(house, Shard(1, 2))
        first.kill()
        first.wait()
        with mirror_lock(house, Path("mirror.toml"), None, 0):  # at once: the kernel released the dead run's lock
            pass


def test_the_jobs_of_one_split_run_side_by_side_and_nothing_else(house: Path) -> None:
    with run_holding(house, "1/2") as first:
        with mirror_lock(house, Path("mirror.toml"), Shard(2, 2), 0):  # another share of the same split
            pass
        assert (f"another job of shard 1/2 is converting the same kernels (pid {first.pid} on "
                in _refused(house, Shard(1, 2)))
        message = _refused(house, Shard(1, 3))
        assert message.startswith(f"{house}/.mirror/shards-of-2.lock: jobs of another split (--shard K/2) are using "
                                  f"this wheelhouse (pid {first.pid} on ")
        assert "the same N" in message
        message = _refused(house, None)
        assert message.startswith(f"{house}/.mirror/run.lock: the jobs of a sharded run (--shard) are using this "
                                  f"wheelhouse (pid {first.pid} on ")
        assert "--shard 1/2, since" in message
    with mirror_lock(house, Path("mirror.toml"), Shard(1, 3), 0):  # the 1/2 job was killed: another split may run
        pass


def test_a_lock_file_planted_as_a_symlink_is_refused_in_one_line_and_not_followed(house: Path) -> None:
    outside = house.parent / f"{house.name}-outside"
    (house / ".mirror" / "run.lock").symlink_to(outside)
    with pytest.raises(OutputNotWritable) as refused, mirror_lock(house, Path("mirror.toml"), None, 0):
        pass
    assert str(refused.value) == (f"{house}/.mirror/run.lock: cannot be used as a lock file (Too many levels of "
                                  "symbolic links); nothing was done")
    assert not os.path.lexists(outside)
