"""tools/kernelwheel/wheelfile.py: reproducible, atomic wheels whose RECORD the installer library accepts."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from installer.sources import WheelFile as InstallerWheelFile
from packaging.requirements import Requirement
from packaging.version import Version

from tools.kernelwheel.errors import InvalidWheel
from tools.kernelwheel.naming import WheelName
from tools.kernelwheel.wheelfile import WheelContents, build_metadata, read_wheel, rename_wheel, write_wheel

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


def test_read_wheel_refuses_a_tampered_file(tmp_path: Path) -> None:
    path = write_wheel(contents(), tmp_path)
    tampered = tmp_path / "t" / path.name
    tampered.parent.mkdir()
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tampered, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, b"X = 2\n" if info.filename == "demo/__init__.py" else data)
    with pytest.raises(InvalidWheel, match="cannot be read as a wheel"):
        read_wheel(tampered)
