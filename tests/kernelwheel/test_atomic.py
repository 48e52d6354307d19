"""tools.kernelwheel.atomic: a file or folder appears complete under its final name, or not at all."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tools.kernelwheel.atomic import atomic_path, replace_tree, write_atomic


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
