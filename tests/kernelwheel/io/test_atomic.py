"""kernelwheel.io.atomic: a file or folder appears complete under its final name, or not at all."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelwheel.io.atomic import (
    Terminated,
    atomic_path,
    replace_tree,
    sigterm_exits,
    stale_temporary_owner,
    sweep_stale_temporaries,
    temporary_directory,
    write_atomic,
)
from tests.helpers.repo import REPO_ROOT
from tests.helpers.signals import communicate_after_signal, deliverable_stop_signals


def test_atomic_path_renames_on_success_with_the_mode(tmp_path: Path) -> None:
    final = tmp_path / "sub" / "index.html"  # the folder is created
    with atomic_path(final, mode=0o600) as tmp:
        assert tmp.parent == final.parent and tmp != final and tmp.exists()
        tmp.write_text("complete\n")
        assert not final.exists()  # nothing under the final name before the end
    assert final.read_text() == "complete\n"
    assert stat.S_IMODE(final.stat().st_mode) == 0o600
    assert os.listdir(final.parent) == ["index.html"]


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_atomic_path_leaves_no_temp_file_after_an_exception(tmp_path: Path, exc: type[BaseException]) -> None:
    final = tmp_path / "wheel.whl"
    final.write_bytes(b"old")
    with pytest.raises(exc), atomic_path(final) as tmp:
        tmp.write_bytes(b"half")
        raise exc("interrupted")
    assert os.listdir(tmp_path) == ["wheel.whl"]  # no .wheel.whl.*.part left behind
    assert final.read_bytes() == b"old"  # and the old file untouched


def test_write_atomic_reports_a_change_and_skips_identical_content(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    assert write_atomic(path, b"one") is True
    assert path.read_bytes() == b"one"
    old = 1_000_000_000
    os.utime(path, ns=(old, old))
    inode = path.stat().st_ino
    assert write_atomic(path, b"one") is False  # unchanged: not rewritten
    assert path.stat().st_mtime_ns == old and path.stat().st_ino == inode
    assert write_atomic(path, b"two") is True
    assert path.read_bytes() == b"two" and path.stat().st_mtime_ns != old
    assert os.listdir(tmp_path) == ["page.html"]


def test_replace_tree_swaps_in_the_new_folder_and_moves_the_old_to_trash(tmp_path: Path) -> None:
    final, staged, trash = tmp_path / "simple", tmp_path / "staged", tmp_path / "trash"
    final.mkdir()
    (final / "old.html").write_text("old")
    staged.mkdir()
    (staged / "new.html").write_text("new")
    replace_tree(staged, final, trash)
    assert os.listdir(final) == ["new.html"] and not staged.exists()
    assert os.listdir(trash) == ["old.html"]


def test_replace_tree_without_an_old_folder(tmp_path: Path) -> None:
    final, staged, trash = tmp_path / "simple", tmp_path / "staged", tmp_path / "trash"
    staged.mkdir()
    (staged / "new.html").write_text("new")
    replace_tree(staged, final, trash)
    assert os.listdir(final) == ["new.html"] and not staged.exists() and not trash.exists()


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


def test_temporaries_carry_the_writer_pid_in_one_pattern(tmp_path: Path) -> None:
    final = tmp_path / "img2gray_cpu-1-py3-none-any.whl"
    with atomic_path(final) as tmp, temporary_directory(tmp_path, "wheel") as staging:
        assert stale_temporary_owner(tmp.name) == os.getpid()
        assert tmp.name.startswith(f".{final.name}.{os.getpid()}.") and tmp.name.endswith(".part")
        assert stale_temporary_owner(staging.name) == os.getpid() and staging.is_dir()
        (staging / "inner").write_bytes(b"x")
        tmp.write_bytes(b"whole")
    assert os.listdir(tmp_path) == [final.name]  # the staging folder is removed with its contents


def test_sweep_removes_only_temporaries_of_dead_writers(tmp_path: Path) -> None:
    dead, alive = _dead_pid(), os.getpid()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("keep")
    out = tmp_path / "out"
    out.mkdir()
    stale_file = out / f".a-1-py3-none-any.whl.{dead}.abcd_123.part"
    stale_file.write_bytes(b"half")
    stale_meta = out / f".a-1-py3-none-any.whl.metadata.{dead}.zzzzzzzz.part"
    stale_meta.write_bytes(b"half")
    stale_dir = out / f".wheel.{dead}.k2j4h5g6.part"
    (stale_dir / "sub").mkdir(parents=True)
    (stale_dir / "sub" / "x.whl").write_bytes(b"half")
    (stale_dir / "link").symlink_to(outside)  # removed as a link, never followed
    kept = [
        out / f".a-1-py3-none-any.whl.{alive}.abcdefgh.part",  # a live writer (this process)
        out / "a-1-py3-none-any.whl",  # not a temporary
        out / f"a.whl.{dead}.abcdefgh.part",  # no leading dot
        out / f".a.whl.{dead}.abcdefg.part",  # 7 random characters: not mkstemp's
        out / f".a.whl.{dead}.ABCDEFGH.part",  # upper case: not mkstemp's
        out / f".a.whl.{dead}.abcdefgh.partial",
        out / ".a.whl.abcdefgh.part",  # no pid: owner unknown
    ]
    for path in kept:
        path.write_bytes(b"keep")
    link = out / f".evil.{dead}.abcdefgh.part"
    link.symlink_to(outside)  # a symlink with the pattern's name: not ours, left alone (and not followed)
    nested = out / "sub"
    nested.mkdir()
    (nested / f".b.whl.{dead}.abcdefgh.part").write_bytes(b"below: not swept")

    removed = sweep_stale_temporaries(out)

    assert sorted(removed) == sorted([stale_file, stale_meta, stale_dir])
    assert all(p.read_bytes() == b"keep" for p in kept)
    assert link.is_symlink() and (outside / "victim.txt").read_text() == "keep"
    assert (nested / f".b.whl.{dead}.abcdefgh.part").exists()
    assert sweep_stale_temporaries(out) == []  # idempotent


def test_sweep_of_a_missing_or_non_folder_path_removes_nothing(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    assert sweep_stale_temporaries(tmp_path / "missing") == []
    assert sweep_stale_temporaries(file) == [] and file.read_text() == "x"


_WRITER = """
import sys, time
from pathlib import Path
from kernelwheel.io.atomic import atomic_path, sigterm_exits, temporary_directory
out = Path(sys.argv[1])
with sigterm_exits(), atomic_path(out / "w.whl") as tmp, temporary_directory(out, "wheel") as staging:
    tmp.write_bytes(b"half")
    (staging / "part").write_bytes(b"half")
    print("writing", flush=True)
    # Short waits, as a writer makes between writes. One 60 s sleep once outlived a SIGTERM by 30 s in CI (not
    # reproduced here): a signal that lands while a process is frozen reaches Python only when its sleep ends.
    for _ in range(600):
        time.sleep(0.1)
"""


def _start_writer(out: Path) -> subprocess.Popen[str]:
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(out)], stdout=subprocess.PIPE, text=True,
                              cwd=REPO_ROOT, preexec_fn=deliverable_stop_signals)
    assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
    return writer


def test_sigterm_during_a_write_removes_the_temporaries(tmp_path: Path) -> None:
    writer = _start_writer(tmp_path)
    assert len(os.listdir(tmp_path)) == 2  # the .part file and the staging folder, mid-write
    writer.send_signal(signal.SIGTERM)
    communicate_after_signal(writer, 30)
    assert writer.returncode == 143
    assert os.listdir(tmp_path) == []


def test_after_the_first_sigterm_a_second_cannot_cut_the_cleanup_short() -> None:
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # as a harness may have left it
    try:
        _second_sigterm_during_cleanup()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _second_sigterm_during_cleanup() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated), sigterm_exits():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler runs at once and raises
        finally:
            assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN  # while cleaning up
    assert signal.getsignal(signal.SIGTERM) == before  # and the caller's handler is back afterwards


def test_sigkill_leftovers_are_swept_by_the_next_run(tmp_path: Path) -> None:
    writer = _start_writer(tmp_path)
    writer.kill()
    writer.wait(timeout=30)
    left = sorted(os.listdir(tmp_path))
    assert len(left) == 2 and all(stale_temporary_owner(n) == writer.pid for n in left)
    assert sorted(p.name for p in sweep_stale_temporaries(tmp_path)) == left
    assert os.listdir(tmp_path) == []
