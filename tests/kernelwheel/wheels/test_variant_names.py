"""kernelwheel.wheels.variant_names: the label rules and the variant wheel file-name parser packaging lacks."""

from __future__ import annotations

import pytest
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from kernelwheel.io.errors import InvalidWheelName
from kernelwheel.wheels.naming import WheelName
from kernelwheel.wheels.variant_names import (
    VariantWheelName,
    check_label,
    is_variant_filename,
    parse_any_wheel_filename,
    parse_variant_filename,
)

CUDA = "img2gray-0.1.0-cp39-abi3-manylinux_2_28_x86_64-cu130.whl"


def test_a_variant_name_round_trips() -> None:
    name = parse_variant_filename(CUDA)
    assert name == VariantWheelName("img2gray", Version("0.1.0"), "cp39", "abi3", "manylinux_2_28_x86_64", "cu130")
    assert name.filename == CUDA and name.dist_info == "img2gray-0.1.0.dist-info"
    assert name.tag == "cp39-abi3-manylinux_2_28_x86_64"


def test_packaging_refuses_what_this_parser_reads() -> None:
    with pytest.raises(InvalidWheelFilename):
        parse_wheel_filename(CUDA)  # why the index owns a parser


@pytest.mark.parametrize("filename", [
    "img2gray-0.1.0-cp39-abi3-manylinux_2_28_x86_64.whl",  # plain
    "img2gray-0.1.0-1-cp39-abi3-manylinux_2_28_x86_64.whl",  # a build tag: six parts, the third starts with a digit
    "img2gray-0.1.0-cp39-abi3-any.zip",
])
def test_plain_names_are_not_variants(filename: str) -> None:
    assert not is_variant_filename(filename)


def test_parse_any_gives_each_kind() -> None:
    assert type(parse_any_wheel_filename("img2gray_cu130-0.1.0-cp39-abi3-linux_x86_64.whl")) is WheelName
    assert parse_any_wheel_filename("img2gray-0.1.0-cp39-abi3-linux_x86_64-null.whl").label == "null"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("filename", "message"), [
    ("img2gray-0.1.0-cp39-abi3-linux_x86_64-CU130.whl", "variant label 'CU130': expected 1 to 64 characters of a-z"),
    ("img2gray-0.1.0-1-cp39-abi3-linux_x86_64-cu130.whl", "a variant wheel with a build tag; expected none"),
    ("img2gray-0.1.0-cp39-abi3.whl", "expected a variant wheel name"),
    ("img2gray-0..1-cp39-abi3-linux_x86_64-cu130.whl", "without its label it is no wheel name"),
])
def test_bad_names_are_one_line(filename: str, message: str) -> None:
    with pytest.raises(InvalidWheelName) as info:
        parse_variant_filename(filename)
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("label", ["null", "cu130", "cu130_torch214", "a.b", "x" * 64])
def test_labels_that_are_accepted(label: str) -> None:
    assert check_label(label) == label


@pytest.mark.parametrize("label", ["", "Cu130", "cu-130", "cu130+", "x" * 65])
def test_labels_that_are_refused(label: str) -> None:
    with pytest.raises(InvalidWheelName, match="expected 1 to 64 characters"):
        check_label(label)


def test_a_name_too_long_for_the_file_system_is_refused() -> None:
    name = VariantWheelName("k" * 150, Version("1"), "cp39", "abi3", "manylinux_2_28_x86_64", "x" * 60)
    with pytest.raises(InvalidWheelName, match="over the"):
        name.filename  # noqa: B018
