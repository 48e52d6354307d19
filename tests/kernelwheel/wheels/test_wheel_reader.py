"""tools/kernelwheel/wheels/wheel_reader.py: every file checked against RECORD, damaged zips in one line, the limits."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from kernelwheel.io.errors import InvalidWheel, OutputNotWritable
from kernelwheel.wheels import wheel_reader
from kernelwheel.wheels.wheel_contents import WheelContents
from kernelwheel.wheels.wheel_reader import check_wheel, read_wheel, unpack_wheel
from kernelwheel.wheels.wheel_writer import write_wheel
from tests.kernelwheel.wheels.test_wheel_writer import NAME, _with_peak_memory, contents


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
    monkeypatch.setattr(wheel_reader, "MAX_READ_BYTES", 32 << 20)
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
    monkeypatch.setattr(wheel_reader, "MAX_READ_BYTES", 32 << 20)
    with pytest.raises(InvalidWheel, match=r"^bomb\.whl: its files unpack to \d+ bytes, more than the 32 MiB this tool "
                                           r"unpacks to disk$"):
        unpack_beside(path, "bomb.whl")
    assert not (path.parent / "unpacked").exists()


def test_unpack_wheel_says_when_the_output_cannot_be_written(tmp_path: Path) -> None:
    path = write_wheel(contents(), tmp_path)
    (tmp_path / "a-file").write_text("")
    with pytest.raises(OutputNotWritable, match=r"a-file/demo/__init__\.py: cannot be written: "):
        unpack_wheel(path, lambda arcname: tmp_path / "a-file" / arcname)


