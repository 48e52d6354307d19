"""tools/kernelwheel/wheels/wheelfile.py: reproducible, atomic wheels whose RECORD the installer library accepts."""

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
from kernelwheel.io.errors import InvalidWheel, OutputNotWritable
from kernelwheel.wheels import wheelfile
from kernelwheel.wheels.naming import WheelName
from kernelwheel.wheels.wheelfile import (
    Source,
    WheelContents,
    build_metadata,
    check_wheel,
    compress_type_for,
    read_wheel,
    rename_wheel,
    unpack_wheel,
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


def unpack_beside(path: Path, label: str | None = None) -> list[str]:
    """unpack_wheel into a folder beside the wheel."""
    return unpack_wheel(path, lambda arcname: path.parent / "unpacked" / arcname, label)


READERS = pytest.mark.parametrize("reader", [read_wheel, check_wheel, unpack_beside],
                                  ids=["read_wheel", "check_wheel", "unpack_wheel"])


@READERS
def test_a_tampered_file_is_refused(tmp_path: Path, reader: Callable[[Path], object]) -> None:
    path = write_wheel(contents(), tmp_path)
    tampered = tmp_path / "t" / path.name
    tampered.parent.mkdir()
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tampered, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, b"X = 2\n" if info.filename == "demo/__init__.py" else data)
    with pytest.raises(InvalidWheel, match=r"cannot be read as a wheel: Hash mismatch for file 'demo/__init__\.py'"):
        reader(tampered)


@pytest.mark.parametrize(("damage", "reason"), [
    ("truncated", "zipfile.BadZipFile: File is not a zip file"),
    ("corrupt deflate", "zlib.error: Error -3 while decompressing data"),
    ("unknown compression", "NotImplementedError: That compression method is not supported"),
])
@READERS
def test_a_damaged_zip_is_said_to_be_unreadable_in_one_line(damage: str, reason: str, tmp_path: Path,
                                                            reader: Callable[[Path, str], object]) -> None:
    path = write_wheel(contents(), tmp_path)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        member = next(i for i in archive.infolist() if i.compress_type == zipfile.ZIP_DEFLATED and i.compress_size > 8)
    start = member.header_offset + 30 + len(member.filename.encode()) + len(member.extra)  # after its local header
    if damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "corrupt deflate":
        data[start : start + 4] = b"\xff\xff\xff\xff"
    else:  # compression method 99 in the local and central headers (AES in WinZip; nothing zipfile reads)
        data[member.header_offset + 8 : member.header_offset + 10] = (99).to_bytes(2, "little")
        central = _central_header(data, member.filename)
        data[central + 10 : central + 12] = (99).to_bytes(2, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(InvalidWheel) as info:
        reader(path, "the wheel")
    assert str(info.value).startswith(f"the wheel: not a readable wheel (zip archive): {reason}"), info.value


def _central_header(data: bytearray, filename: str) -> int:
    """Where the central directory entry of ``filename`` starts."""
    offset = data.index(b"PK\x01\x02")
    while data[offset + 46 : offset + 46 + len(filename)] != filename.encode():
        offset = data.index(b"PK\x01\x02", offset + 4)
    return offset


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


def _wheel_of_zeros(tmp_path: Path, size: int) -> Path:
    """A wheel with a ``size``-byte member of zeros: it deflates about 1000:1, as a zip bomb's does."""
    zeros = tmp_path / "zeros.bin"
    with zeros.open("wb") as fh:
        fh.truncate(size)
    base = contents()
    return write_wheel(WheelContents(base.name, base.metadata, {**base.files, "demo/zeros.bin": zeros},
                                     base.root_is_purelib), tmp_path / "out")


def test_check_wheel_hashes_every_member_a_chunk_at_a_time(tmp_path: Path) -> None:
    path = _wheel_of_zeros(tmp_path, 64 << 20)
    assert path.stat().st_size < 1 << 20
    checked, peak = _with_peak_memory(lambda: check_wheel(path))
    assert peak < 8 << 20, f"peak {peak / 2**20:.1f} MiB while checking a 64 MiB member"
    assert checked.name == NAME and checked.metadata["version"] == "1.0+torch2.14" and checked.files == {}
    assert read_wheel(path).files["demo/zeros.bin"] == bytes(64 << 20)  # what check_wheel hashed and let go


def test_read_wheel_refuses_a_wheel_whose_files_unpack_past_its_limit(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = _wheel_of_zeros(tmp_path, 64 << 20)
    monkeypatch.setattr(wheelfile, "MAX_READ_BYTES", 32 << 20)
    unpacked = sum(i.file_size for i in zipfile.ZipFile(path).infolist() if not i.filename.endswith("/RECORD"))
    with pytest.raises(InvalidWheel) as info:
        read_wheel(path, "bomb.whl")
    assert str(info.value) == (f"bomb.whl: its files unpack to {unpacked} bytes, more than the 32 MiB this tool "
                               "reads into memory")
    assert check_wheel(path).name == NAME  # streaming has no such limit


def test_unpack_wheel_copies_each_file_to_its_place_a_chunk_at_a_time(tmp_path: Path) -> None:
    path = _wheel_of_zeros(tmp_path, 64 << 20)
    names, peak = _with_peak_memory(lambda: unpack_beside(path))
    assert peak < 8 << 20, f"peak {peak / 2**20:.1f} MiB while unpacking a 64 MiB member"
    with zipfile.ZipFile(path) as archive:
        expected = {i.filename: archive.read(i) for i in archive.infolist() if not i.filename.endswith("/RECORD")}
    unpacked = path.parent / "unpacked"
    assert {name: (unpacked / name).read_bytes() for name in names} == expected
    assert (unpacked / "demo/zeros.bin").stat().st_size == 64 << 20


def test_unpack_wheel_refuses_a_wheel_past_its_limit_before_writing(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = _wheel_of_zeros(tmp_path, 64 << 20)
    monkeypatch.setattr(wheelfile, "MAX_READ_BYTES", 32 << 20)
    with pytest.raises(InvalidWheel, match=r"^bomb\.whl: its files unpack to \d+ bytes, more than the 32 MiB this tool "
                                           r"unpacks to disk$"):
        unpack_beside(path, "bomb.whl")
    assert not (path.parent / "unpacked").exists()


def test_unpack_wheel_says_when_the_output_cannot_be_written(tmp_path: Path) -> None:
    path = write_wheel(contents(), tmp_path)
    (tmp_path / "a-file").write_text("")
    with pytest.raises(OutputNotWritable, match=r"a-file/demo/__init__\.py: cannot be written: "):
        unpack_wheel(path, lambda arcname: tmp_path / "a-file" / arcname)


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
