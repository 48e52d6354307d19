"""kernelwheel.wheels.selection: select_variants() keeps a reason for every variant it does not accept."""

from __future__ import annotations

from kernelwheel.wheels.selection import VariantFilter, select_variants
from tests.kernelwheel.format.test_variants import NAMES  # one name of every family the grammar parses


def test_select_keeps_every_decision() -> None:
    sel = select_variants([*NAMES, "garbage"])
    accepted = {str(v) for v in sel.accepted}
    rejected = {r.name: r.reason for r in sel.rejected}
    assert accepted | set(rejected) == set(NAMES) | {"garbage"}
    assert "tvm-ffi213-cu130-x86_64-linux" in accepted  # a wheel of its own (naming.wheel_name_for)
    assert "darwin" in rejected["torch213-metal-aarch64-darwin"]
    assert "windows" in rejected["torch210-cu128-x86_64-windows"]
    assert "expected torch" in rejected["garbage"]
    # every noarch directory: whether they are one build is decided on their files (kernelwheel.wheels.noarch)
    assert {"torch-cuda", "torch-cpu", "torch-universal"} <= accepted


def test_select_cxx_twins_follow_pypi_torch_abi() -> None:
    sel = select_variants(["torch28-cxx11-cu128-x86_64-linux", "torch28-cxx98-cu128-x86_64-linux",
                  "torch26-cxx11-cu124-x86_64-linux", "torch26-cxx98-cu124-x86_64-linux"])
    assert {str(v) for v in sel.accepted} == {"torch28-cxx11-cu128-x86_64-linux", "torch26-cxx98-cu124-x86_64-linux"}
    assert all("same wheel as" in r.reason for r in sel.rejected)


def test_select_patterns() -> None:
    sel = select_variants(NAMES, VariantFilter(patterns=("*-cu130-*",)))
    assert {str(v) for v in sel.accepted} == {"torch210-cxx11-cu130-x86_64-linux",
                                              "torch-stable-abi211-cu130-x86_64-linux",
                                              "tvm-ffi213-cu130-x86_64-linux"}
    assert any("not matched by --variant" in r.reason for r in sel.rejected)


def test_unparseable_names_are_invalid_rejections_and_printable() -> None:
    fullwidth = "torch２１３-cxx11-cpu-x86_64-linux"
    undecodable = "torch213-cxx11-cpu-x86_64-\udcfflinux"  # os.listdir's spelling of invalid UTF-8
    sel = select_variants([fullwidth, undecodable, "torch213-cxx11-cpu-x86_64-linux", "torch213-metal-aarch64-darwin"])
    assert [str(v) for v in sel.accepted] == ["torch213-cxx11-cpu-x86_64-linux"]
    rejected = {r.name: r for r in sel.rejected}
    assert rejected[fullwidth].invalid and "ASCII" in rejected[fullwidth].reason
    shown = ascii(undecodable)
    assert rejected[shown].invalid and shown.encode("utf-8")
    assert not rejected["torch213-metal-aarch64-darwin"].invalid  # only not for this run
