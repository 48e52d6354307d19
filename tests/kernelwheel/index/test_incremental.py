"""Tests for the index's fast path: a wheel whose stat identity (size, mtime_ns, ctime_ns, inode) is the one the state
recorded when it was last hashed is not read again; any other change is hashed, and a changed published file refused."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from kernelwheel.cli import index as index_cli
from kernelwheel.index import state, writer
from kernelwheel.index.writer import write_index
from kernelwheel.io.errors import InvalidIndexState, InvalidWheel
from tests.helpers import standin_wheels as standin

T214 = "img2gray_cu130-0.1.0+torch2.14-cp39-abi3-manylinux_2_28_x86_64.whl"


@pytest.fixture
def no_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written a moment ago count as settled (by default they are hashed again once, RACY_WINDOW_NS later)."""
    monkeypatch.setattr(state, "RACY_WINDOW_NS", 0)


@pytest.fixture
def read_files(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files the index reads from now on (hashes, validates, or reads the METADATA of)."""
    seen: list[str] = []
    for name in ("sha256_file", "inspect_wheel", "metadata_bytes"):
        real = getattr(writer, name)

        def spy(path: Path, real: Any = real) -> Any:
            seen.append(path.name)
            return real(path)

        monkeypatch.setattr(writer, name, spy)
    return seen


@pytest.mark.usefixtures("no_racy_window")
def test_a_rerun_reads_no_wheel_whose_stat_identity_is_unchanged(wheelhouse: Path, read_files: list[str]) -> None:
    assert write_index(wheelhouse).hashed == 3
    write_index(wheelhouse)  # the .metadata files written by the first run get their identities now
    read_files.clear()
    report = write_index(wheelhouse)
    assert (report.hashed, report.added, report.files_written, read_files) == (0, [], 0, [])
    new = standin.write_standin(wheelhouse, torch="2.15")
    report = write_index(wheelhouse)
    assert report.hashed == 1 and report.added == [new.name]
    assert {name.removesuffix(".metadata") for name in read_files} == {new.name}


@pytest.mark.usefixtures("no_racy_window")
def test_verify_hashes_every_wheel_again(wheelhouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_index(wheelhouse)
    write_index(wheelhouse)
    assert write_index(wheelhouse).hashed == 0
    assert index_cli.main([str(wheelhouse), "--verify", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["hashed"], summary["added"]) == (3, [])


def test_a_file_changed_a_moment_ago_is_hashed_again_next_run(wheelhouse: Path) -> None:
    """Within RACY_WINDOW_NS of its stat a file could change again without its timestamps moving: no identity."""
    write_index(wheelhouse)
    recorded = json.loads((wheelhouse / "simple" / state.STATE_FILE).read_text())
    assert [entry["identity"] for entry in recorded["wheels"]] == [None, None, None]
    assert write_index(wheelhouse).hashed == 3


@pytest.mark.usefixtures("no_racy_window")
@pytest.mark.parametrize("how", ["in place, mtime restored", "replaced by rename, mtime restored"])
def test_changed_bytes_under_a_published_name_are_hashed_and_refused(wheelhouse: Path, tmp_path: Path,
                                                                     how: str) -> None:
    write_index(wheelhouse)
    write_index(wheelhouse)
    wheel = wheelhouse / T214
    before = wheel.stat()
    data = bytearray(wheel.read_bytes())
    data[-30] ^= 0xFF  # same size, other bytes (inside the zip's end record: still a file name the index knows)
    if how.startswith("in place"):
        with wheel.open("r+b") as f:
            f.write(bytes(data))
    else:
        other = tmp_path / "other.whl"
        other.write_bytes(bytes(data))
        os.replace(other, wheel)
    os.utime(wheel, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = wheel.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert (after.st_ctime_ns, after.st_ino) != (before.st_ctime_ns, before.st_ino)
    page = (wheelhouse / "simple" / "img2gray-cu130" / "index.html").read_bytes()
    with pytest.raises(InvalidWheel, match=re.escape(f"{T214}: the index already serves this file name with other bytes")):
        write_index(wheelhouse)
    assert (wheelhouse / "simple" / "img2gray-cu130" / "index.html").read_bytes() == page


@pytest.mark.usefixtures("no_racy_window")
def test_a_tampered_metadata_file_is_rewritten_though_its_wheel_is_unchanged(wheelhouse: Path) -> None:
    write_index(wheelhouse)
    write_index(wheelhouse)
    metadata = wheelhouse / (T214 + ".metadata")
    good = metadata.read_bytes()
    metadata.write_bytes(good.replace(b"torch==2.14.*", b"torch>=2.0"))
    report = write_index(wheelhouse)
    assert metadata.read_bytes() == good and report.hashed == 1


@pytest.mark.usefixtures("no_racy_window")
def test_a_copied_wheelhouse_is_hashed_again(wheelhouse: Path, tmp_path: Path) -> None:
    """cp -a, rsync and restores give every file a new inode and ctime: nothing recorded is trusted there."""
    write_index(wheelhouse)
    write_index(wheelhouse)
    copy = tmp_path / "copy"
    shutil.copytree(wheelhouse, copy)
    assert write_index(copy).hashed == 3


def test_a_state_of_the_first_version_is_read_and_every_wheel_hashed_once(wheelhouse: Path) -> None:
    write_index(wheelhouse)
    state_file = wheelhouse / "simple" / state.STATE_FILE
    recorded = json.loads(state_file.read_text())
    for entry in recorded["wheels"]:
        del entry["identity"], entry["variant"]
    state_file.write_text(json.dumps({**recorded, "version": 1}))
    report = write_index(wheelhouse)
    assert (report.hashed, report.added, report.files_written) == (3, [], 0)


@pytest.mark.usefixtures("no_racy_window")
def test_a_state_of_the_second_version_is_trusted_as_it_was(wheelhouse: Path) -> None:
    write_index(wheelhouse)
    state_file = wheelhouse / "simple" / state.STATE_FILE
    recorded = json.loads(state_file.read_text())
    for entry in recorded["wheels"]:
        del entry["variant"]  # version 2 knew no variant wheels
    state_file.write_text(json.dumps({**recorded, "version": 2}))
    report = write_index(wheelhouse)
    assert (report.hashed, report.added, report.files_written) == (0, [], 0)


@pytest.mark.parametrize("identity, problem", [
    ([1, 2, 3], "wheels[0].identity is [1, 2, 3], not null or an object with wheel and metadata"),
    ({"wheel": [1, 2, 3], "metadata": None}, "wheels[0].identity.wheel is [1, 2, 3], not null or 4 non-negative"),
    ({"wheel": None, "metadata": [1, 2, 3, -4]}, "wheels[0].identity.metadata is [1, 2, 3, -4], not null or 4"),
    ({"wheel": [True, 2, 3, 4], "metadata": None}, "wheels[0].identity.wheel is [True, 2, 3, 4], not null or 4"),
])
def test_a_malformed_identity_is_a_clear_error(wheelhouse: Path, identity: object, problem: str) -> None:
    write_index(wheelhouse)
    state_file = wheelhouse / "simple" / state.STATE_FILE
    recorded = json.loads(state_file.read_text())
    recorded["wheels"][0]["identity"] = identity
    state_file.write_text(json.dumps(recorded))
    with pytest.raises(InvalidIndexState) as raised:
        write_index(wheelhouse)
    assert f"{state_file}: {problem}" in str(raised.value)
