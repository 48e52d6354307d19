"""tools/kernelwheel/wheels/wheel_writer.py: reproducible, atomic wheels whose RECORD the installer library accepts."""

from __future__ import annotations

import random
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from installer.sources import WheelFile as InstallerWheelFile
from packaging.requirements import Requirement
from packaging.version import Version

from kernelwheel.format.digests import file_digest
from kernelwheel.io.errors import InvalidWheel
from kernelwheel.wheels.naming import WheelName
from kernelwheel.wheels.wheel_contents import Source, WheelContents
from kernelwheel.wheels.wheel_reader import read_wheel
from kernelwheel.wheels.wheel_writer import (
    build_metadata,
    compress_type_for,
    rename_wheel,
    write_wheel,
    write_wheel_if_changed,
)

NAME = WheelName("demo-cpu", Version("1.0+torch2.14"), "py3", "none", "any")


def contents() -> WheelContents:
    metadata = build_metadata(NAME, requires_dist=[Requirement("torch==2.14.*")], summary="demo")
    return WheelContents(NAME, metadata, {"demo/__init__.py": b"X = 1\n", "demo/_ops.py": b""}, True)


def test_written_wheel_validates_and_reads_back(tmp_path: Path) -> None:
    path = write_wheel(contents(), tmp_path)
    assert path.name == "demo_cpu-1.0+torch2.14-py3-none-any.whl"
    with InstallerWheelFile.open(path) as source:
        source.validate_record()
    back = read_wheel(path)
    assert back.name == NAME and back.metadata["version"] == "1.0+torch2.14"
    assert back.metadata["requires_dist"] == ["torch==2.14.*"]
    assert back.files["demo/__init__.py"] == b"X = 1\n"
    text = zipfile.ZipFile(path).read(f"{NAME.dist_info}/METADATA").decode()
    assert "Name: demo-cpu\n" in text and "Version: 1.0+torch2.14\n" in text


def test_same_input_gives_byte_identical_wheels(tmp_path: Path) -> None:
    first = write_wheel(contents(), tmp_path / "a").read_bytes()
    second = write_wheel(contents(), tmp_path / "b").read_bytes()
    assert first == second


def test_failed_write_leaves_nothing_behind(tmp_path: Path) -> None:
    bad = contents()
    bad.metadata["requires_dist"] = ["not a requirement ;;"]
    with pytest.raises(InvalidWheel, match="METADATA for 'demo-cpu' is invalid"):
        write_wheel(bad, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_rename_moves_dist_info_and_metadata(tmp_path: Path) -> None:
    original = contents()
    original.files[f"{NAME.dist_info}/licenses/LICENSE"] = b"MIT"
    new = WheelName("demo-cu130", Version("1.0+torch2.14"), "cp39", "abi3", "linux_x86_64")
    renamed = rename_wheel(original, new)
    assert f"{new.dist_info}/licenses/LICENSE" in renamed.files
    assert renamed.metadata["name"] == "demo-cu130"
    back = read_wheel(write_wheel(renamed, tmp_path))
    assert back.name == new and back.metadata["name"] == "demo-cu130"


def _random_file(path: Path, size: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    with path.open("wb") as fh:
        for _ in range(size >> 20):
            fh.write(rng.randbytes(1 << 20))
    return path


def _streamed(tmp_path: Path, files: dict[str, bytes]) -> WheelContents[Source]:
    """contents() with ``files`` added as paths on disk (streamed when written)."""
    base = contents()
    paths: dict[str, Source] = dict(base.files)
    for arcname, data in files.items():
        on_disk = tmp_path / "src" / arcname
        on_disk.parent.mkdir(parents=True, exist_ok=True)
        on_disk.write_bytes(data)
        paths[arcname] = on_disk
    return WheelContents(base.name, base.metadata, paths, base.root_is_purelib)


Result = TypeVar("Result")


def _with_peak_memory(run: Callable[[], Result]) -> tuple[Result, int]:
    """``run()``'s result, and the most memory Python allocated while it ran."""
    tracemalloc.start()
    try:
        result = run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def test_a_large_member_is_streamed_not_held_in_memory(tmp_path: Path) -> None:
    big = _random_file(tmp_path / "big.so", 64 << 20)
    base = contents()
    streamed = WheelContents(base.name, base.metadata, {**base.files, "demo/_big.so": big}, base.root_is_purelib)
    path, peak = _with_peak_memory(lambda: write_wheel(streamed, tmp_path / "out"))
    assert peak < 8 << 20, f"peak {peak / 2**20:.1f} MiB while writing a 64 MiB member"
    with InstallerWheelFile.open(path) as source:
        source.validate_record()
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("demo/_big.so")
        assert info.file_size == 64 << 20 and info.compress_type == zipfile.ZIP_STORED  # random bytes: stored
        assert (info.external_attr >> 16) & 0o777 == 0o755


def test_members_that_do_not_deflate_are_stored_the_rest_deflated(tmp_path: Path) -> None:
    rng = random.Random(1)
    noise = rng.randbytes(1 << 20)
    code = b"".join(b"mov %d, rax; call f%d\n" % (i, i % 97) for i in range(60_000))  # ~1.3 MB, compressible
    small_noise = rng.randbytes(100 << 10)  # below ALWAYS_DEFLATE_BELOW: not worth a sample
    assert compress_type_for(noise, len(noise)) == zipfile.ZIP_STORED
    assert compress_type_for(code, len(code)) == zipfile.ZIP_DEFLATED
    assert compress_type_for(small_noise, len(small_noise)) == zipfile.ZIP_DEFLATED
    # Mostly compressible with one random stretch: the sample spans the file, so it still deflates.
    mixed = code + rng.randbytes(200 << 10)
    assert compress_type_for(mixed, len(mixed)) == zipfile.ZIP_DEFLATED
    path = write_wheel(_streamed(tmp_path, {"demo/noise.so": noise, "demo/code.so": code}), tmp_path / "out")
    with zipfile.ZipFile(path) as archive:
        kinds = {i.filename: i.compress_type for i in archive.infolist()}
        assert archive.read("demo/noise.so") == noise and archive.read("demo/code.so") == code
    assert kinds["demo/noise.so"] == zipfile.ZIP_STORED
    assert kinds["demo/code.so"] == zipfile.ZIP_DEFLATED
    assert kinds["demo/__init__.py"] == kinds[f"{NAME.dist_info}/METADATA"] == zipfile.ZIP_DEFLATED
    assert compress_type_for(tmp_path / "src" / "demo" / "noise.so", len(noise)) == zipfile.ZIP_STORED  # from a path


def test_streamed_and_in_memory_members_give_the_same_bytes(tmp_path: Path) -> None:
    data = {"demo/noise.so": random.Random(2).randbytes(600 << 10), "demo/text.py": b"X = 1\n" * 50_000}
    from_paths = write_wheel(_streamed(tmp_path, data), tmp_path / "a").read_bytes()
    base = contents()
    in_memory = WheelContents(base.name, base.metadata, {**base.files, **data}, base.root_is_purelib)
    assert write_wheel(in_memory, tmp_path / "b").read_bytes() == from_paths


def test_an_identical_wheel_is_left_alone_a_different_one_replaced(tmp_path: Path) -> None:
    data = {"demo/_ext.so": random.Random(3).randbytes(300 << 10)}
    first = write_wheel_if_changed(_streamed(tmp_path, data), tmp_path / "out")
    assert first.written
    before = first.path.stat()
    again = write_wheel_if_changed(_streamed(tmp_path, data), tmp_path / "out")
    after = again.path.stat()
    assert not again.written and again.path == first.path and again.size == before.st_size
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # not even rewritten in place
    changed = write_wheel_if_changed(_streamed(tmp_path, {"demo/_ext.so": b"\x7fELF other"}), tmp_path / "out")
    assert changed.written and zipfile.ZipFile(changed.path).read("demo/_ext.so") == b"\x7fELF other"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [NAME.filename]  # no temporaries left


def test_a_wheel_from_another_writer_is_rewritten(tmp_path: Path) -> None:
    path = write_wheel(contents(), tmp_path)
    expected = path.read_bytes()
    with zipfile.ZipFile(path, "a") as archive:  # same members and RECORD, another comment
        archive.comment = b"written by something else"
    assert path.read_bytes() != expected
    assert write_wheel_if_changed(contents(), tmp_path).written
    assert path.read_bytes() == expected


def test_interrupted_write_leaves_the_old_wheel_and_no_temporaries(tmp_path: Path) -> None:
    out = tmp_path / "out"
    old = write_wheel(_streamed(tmp_path, {"demo/_ext.so": b"old"}), out).read_bytes()
    big = {"demo/_ext.so": random.Random(4).randbytes(3 << 20)}

    def interrupt(n: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_wheel_if_changed(_streamed(tmp_path, big), out, on_bytes=interrupt)
    assert [p.name for p in out.iterdir()] == [NAME.filename]
    assert (out / NAME.filename).read_bytes() == old


def test_a_file_changed_after_its_digest_was_checked_is_refused(tmp_path: Path) -> None:
    streamed = _streamed(tmp_path, {"demo/_ext.so": b"checked bytes"})
    on_disk = streamed.files["demo/_ext.so"]
    assert isinstance(on_disk, Path)
    file_digest(on_disk, "sha256")  # what convert's digest check does
    on_disk.write_bytes(b"swapped bytes")
    with pytest.raises(InvalidWheel, match=r"demo/_ext.so changed after it was checked"):
        write_wheel(streamed, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []
