"""tools/kernelwheel/naming.py: names, versions, requirements and tags."""

from __future__ import annotations

import pytest
from packaging.version import Version

from tools.kernelwheel.errors import InvalidWheelName
from tools.kernelwheel.naming import (
    WheelName,
    cuda_backend_tag,
    distribution_name,
    kernel_version,
    labelled_torch,
    manylinux_tag,
    torch_label,
    torch_minor,
    torch_requirement,
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
