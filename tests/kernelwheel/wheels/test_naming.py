"""tools/kernelwheel/wheels/naming.py: names, versions, requirements and tags."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from kernelwheel.format.variants import Variant
from kernelwheel.io.atomic import atomic_path
from kernelwheel.io.errors import InvalidWheelName
from kernelwheel.wheels.naming import (
    MAX_WHEEL_FILENAME_BYTES,
    NAME_MAX,
    WheelName,
    cuda_backend_tag,
    distribution_name,
    kernel_version,
    labelled_torch,
    manylinux_tag,
    parse_version,
    torch_label,
    torch_minor,
    torch_requirement,
    wheel_name_for,
)


@pytest.mark.parametrize(("kernel", "backend", "expected"), [
    ("img2gray", "cu130", "img2gray-cu130"), ("img2gray", "cu128", "img2gray-cu128"),
    ("img2gray", "cpu", "img2gray-cpu"), ("img2gray", "rocm71", "img2gray-rocm71"), ("img2gray", None, "img2gray"),
])
def test_distribution_name(kernel: str, backend: str | None, expected: str) -> None:
    assert distribution_name(kernel, backend) == expected


@pytest.mark.parametrize(("kernel", "backend", "message"), [
    ("img gray", "cu130", "kernel name 'img gray' is not a valid distribution name"),
    ("img2gray", "cuda13", "backend tag 'cuda13': unknown backend 'cuda13'"),
])
def test_distribution_name_refuses_bad_input(kernel: str, backend: str, message: str) -> None:
    with pytest.raises(InvalidWheelName, match=message):
        distribution_name(kernel, backend)


@pytest.mark.parametrize(("cuda", "tag"), [("13.0", "cu130"), ("12.8.93", "cu128"), ("12.10", "cu1210")])
def test_cuda_backend_tag(cuda: str, tag: str) -> None:
    assert cuda_backend_tag(cuda) == tag


def test_versions_carry_a_dotted_torch_label_that_sorts_numerically() -> None:
    assert torch_minor("2.14.1+cu130") == Version("2.14")
    v29, v210 = kernel_version("0.1.0", Version("2.9")), kernel_version("0.1.0", Version("2.10"))
    assert str(v210) == "0.1.0+torch2.10" and v210 > v29
    assert kernel_version("0.1.0", None) == Version("0.1.0")
    with pytest.raises(InvalidWheelName, match="already has a local label"):
        kernel_version("0.1.0+x", Version("2.14"))
    with pytest.raises(InvalidWheelName, match="is not a PEP 440 version"):
        kernel_version("zero", Version("2.14"))


def test_torch_label_and_its_inverse() -> None:
    assert torch_label(Version("2.14")) == "torch2.14"
    assert labelled_torch(Version("0.1.0+torch2.14")) == Version("2.14")
    assert labelled_torch(Version("0.1.0+torch2.9")) < labelled_torch(Version("0.1.0+torch2.10"))  # type: ignore[operator]
    assert labelled_torch(Version("0.1.0")) is None
    assert labelled_torch(Version("0.1.0+cu130")) is None


def test_torch_requirement() -> None:
    assert str(torch_requirement(Version("2.14"))) == "torch==2.14.*"
    assert str(torch_requirement(Version("2.10"), stable_abi=True)) == "torch>=2.10"


def test_manylinux_tag_has_a_floor_at_2_17() -> None:
    assert manylinux_tag((2, 28), "x86_64") == "manylinux_2_28_x86_64"
    assert manylinux_tag((2, 5), "aarch64") == "manylinux_2_17_aarch64"


def test_wheel_name_round_trips_through_packaging() -> None:
    name = WheelName("img2gray-cu130", Version("0.1.0+torch2.14"), "cp39", "abi3", "manylinux_2_28_x86_64")
    assert name.filename == "img2gray_cu130-0.1.0+torch2.14-cp39-abi3-manylinux_2_28_x86_64.whl"
    assert name.dist_info == "img2gray_cu130-0.1.0+torch2.14.dist-info"
    assert WheelName.parse(name.filename) == name
    compressed = WheelName.parse("img2gray-0.1.0-py2.py3-none-any.whl")
    assert compressed.tag == "py2.py3-none-any" and len(compressed.tags) == 2


def test_wheel_name_parse_refuses_non_wheels() -> None:
    with pytest.raises(InvalidWheelName, match=r"img2gray\.tar\.gz"):
        WheelName.parse("img2gray.tar.gz")


CPU = Variant.parse("torch213-cxx11-cpu-x86_64-linux")
TAGS = {"python_tag": "cp39", "abi_tag": "abi3", "platform_tag": "manylinux_2_17_x86_64"}


def test_the_longest_wheel_filename_leaves_room_for_its_metadata_file_and_temporaries(tmp_path: Path) -> None:
    # "<kernel>_cpu-1+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl": 55 bytes besides the kernel name
    fixed = len("_cpu-1+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl")
    longest = wheel_name_for(CPU, "k" * (MAX_WHEEL_FILENAME_BYTES - fixed), Version("1"), **TAGS)
    assert len(longest.filename) == MAX_WHEEL_FILENAME_BYTES
    # what is made from it really fits: the index's .metadata file under an atomic temporary name
    with atomic_path(tmp_path / f"{longest.filename}.metadata") as tmp:
        assert len(tmp.name) <= NAME_MAX
        tmp.write_bytes(b"Metadata-Version: 2.1\n")
    with pytest.raises(InvalidWheelName, match=rf"is {MAX_WHEEL_FILENAME_BYTES + 1} bytes, over the "
                                               rf"{MAX_WHEEL_FILENAME_BYTES} that fit"):
        wheel_name_for(CPU, "k" * (MAX_WHEEL_FILENAME_BYTES - fixed + 1), Version("1"), **TAGS)


@pytest.mark.parametrize(("kernel", "version"), [
    ("a" * 300, "1"),  # found by fuzzing: a long metadata.json name or --dist-name (ENAMETOOLONG)
    ("img2gray", "1." + ".".join(["0"] * 150)),  # a long version
    ("img2gray", "1" * 4000),
])
def test_a_name_too_long_for_the_file_system_is_refused_before_writing(kernel: str, version: str) -> None:
    with pytest.raises(InvalidWheelName, match="shorten the kernel name") as info:
        wheel_name_for(CPU, kernel, Version(version), **TAGS)
    assert len(str(info.value)) < 400


@pytest.mark.parametrize(("value", "message"), [
    ("1" * 5000, "is not a PEP 440 version"),  # int() digit limit: a ValueError, not InvalidVersion
    (True, "True is not a PEP 440 version"),
    ([1], r"\[1\] is not a PEP 440 version"),
    ("１.０", "is not a PEP 440 version"),  # fullwidth digits
])
def test_parse_version_refuses_in_one_line(value: object, message: str) -> None:
    with pytest.raises(InvalidWheelName, match=message) as info:
        parse_version(value, "kernel version")
    assert len(str(info.value)) < 200
    assert parse_version(3, "v") == Version("3") and parse_version("0.1.0", "v") == Version("0.1.0")


def test_non_ascii_and_bad_kernel_names_are_refused() -> None:
    for kernel in ("fóo", "img2gray\n", "-img2gray", "img gray", "ｉｍｇ"):
        with pytest.raises(InvalidWheelName, match="is not a valid distribution name"):
            distribution_name(kernel, "cpu")
