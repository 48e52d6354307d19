"""read_limited: regular files only, opened without blocking, read no further than one byte past the limit."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from kernelwheel.io.limited_read import NotRegularFile, file_problem, read_limited


def _in_a_thread(path: Path, max_bytes: int) -> BaseException | bytes:
    """read_limited's result or exception; a call still blocked after 10 s fails the test instead of hanging it."""
    outcome: list[BaseException | bytes] = []

    def call() -> None:
        try:
            outcome.append(read_limited(path, max_bytes))
        except BaseException as exc:  # handed to the test to assert on
            outcome.append(exc)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(10)
    assert outcome, f"read_limited({path}) is still blocked after 10 s"
    return outcome[0]


@pytest.mark.parametrize(("size", "max_bytes", "expected"), [
    (0, 10, 0),
    (10, 10, 10),
    (11, 10, 11),  # one byte over: the caller sees it is over the limit
    (5 << 20, 3 << 20, (3 << 20) + 1),  # several chunks, and reading stops at the limit
])
def test_a_regular_file_is_read_up_to_one_byte_past_the_limit(tmp_path: Path, size: int, max_bytes: int,
                                                              expected: int) -> None:
    data = os.urandom(size)
    (tmp_path / "f").write_bytes(data)
    assert read_limited(tmp_path / "f", max_bytes) == data[:expected]


def test_a_fifo_without_a_writer_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    outcome = _in_a_thread(tmp_path / "fifo", 100)
    assert isinstance(outcome, NotRegularFile)
    assert outcome.strerror == "not a regular file (a FIFO)" and outcome.filename == str(tmp_path / "fifo")


def test_a_device_that_never_ends_is_refused_before_reading(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to("/dev/zero")  # a symlink is followed: its target is what would be read
    outcome = _in_a_thread(tmp_path / "link", 1 << 30)
    assert isinstance(outcome, NotRegularFile) and outcome.strerror == "not a regular file (a character device)"


def test_a_directory_and_a_missing_file_raise_what_open_raises(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        read_limited(tmp_path, 100)
    with pytest.raises(FileNotFoundError):
        read_limited(tmp_path / "missing", 100)
    with pytest.raises(NotADirectoryError):
        (tmp_path / "file").write_bytes(b"")
        read_limited(tmp_path / "file" / "below", 100)


def test_file_problem_says_what_the_path_is_when_it_is_not_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"x")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    assert file_problem(tmp_path / "file") is None and file_problem(tmp_path / "link") is None
    assert file_problem(tmp_path / "fifo") == "not a regular file (a FIFO)"
    assert file_problem(Path("/dev/null")) == "not a regular file (a character device)"
    assert file_problem(tmp_path) == "a directory, not a file"
    assert file_problem(tmp_path / "dangling") == "no such file"
    assert file_problem(tmp_path / ("x" * 5000)) == "no such file"  # ENAMETOOLONG, not an OSError
    assert file_problem(Path("a\0b")) == "no such file"  # ValueError, not raised
