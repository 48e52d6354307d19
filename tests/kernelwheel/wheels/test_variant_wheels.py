"""kernelwheel.wheels.variant_wheels: a build's variant (label, properties, variant.json) from its CUDA version, the
GPU code its binaries hold and its torch ABI; the variant wheel hub2wheel --variant-wheels writes beside each
backend-named wheel, and the same from a finished wheel (img2gray's `make wheel VARIANT_WHEELS=1`)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from packaging.version import Version
from rich.console import Console

from kernelwheel.format.variant_pieces import Backend
from kernelwheel.hub.sources import local_source
from kernelwheel.io.errors import InvalidWheel
from kernelwheel.wheels.convert import Options, convert
from kernelwheel.wheels.gpu_targets import GpuTargets
from kernelwheel.wheels.naming import WheelName
from kernelwheel.wheels.selection import VariantFilter
from kernelwheel.wheels.variant_wheels import (
    PROVIDERS,
    SCHEMA,
    NoVariant,
    plan_of,
    plan_variant,
    sm_arch_values,
    write_variant_wheel,
)
from kernelwheel.wheels.wheel_contents import WheelContents

CU130 = Backend("cuda", Version("13.0"))
CPU = Backend("cpu")
TARGETS = GpuTargets.of(["8.0", "9.0", "9.0a"], ["9.0"])


def test_sm_arch_values_are_cmakes_spelling() -> None:
    assert sm_arch_values(TARGETS) == ["80_real", "90_real", "90a_real", "90_virtual"]
    assert sm_arch_values(GpuTargets.of(["10.0f", "12.0"], [])) == ["100f_real", "120_real"]
    assert sm_arch_values(GpuTargets()) == []


def test_a_stable_cuda_build() -> None:
    plan = plan_variant("img2gray", CU130, None, TARGETS)
    assert (plan.label, plan.properties) == (
        "cu130", {"nvidia": {"cuda_version_lower_bound": ["13.0"],
                             "sm_arch": ["80_real", "90_real", "90a_real", "90_virtual"]}})


def test_a_classic_cuda_build_carries_its_torch_abi() -> None:
    plan = plan_variant("img2gray", CU130, Version("2.14"), GpuTargets.of(["9.0"]))
    assert plan.label == "cu130_torch214"
    assert plan.properties == {"nvidia": {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["90_real"]},
                               "abi_dependency": {"torch": ["2.14"]}}


def test_cpu_builds() -> None:
    stable = plan_variant("img2gray", CPU, None, GpuTargets())
    assert (stable.label, stable.properties) == ("null", {})
    classic = plan_variant("img2gray", CPU, Version("2.13"), GpuTargets())
    assert (classic.label, classic.properties) == ("cpu_torch213", {"abi_dependency": {"torch": ["2.13"]}})


def test_cuda_without_gpu_code_read_states_no_sm_arch() -> None:
    assert plan_variant("k", CU130, None, GpuTargets()).properties == {"nvidia": {"cuda_version_lower_bound": ["13.0"]}}


def test_other_backends_have_no_variant() -> None:
    with pytest.raises(NoVariant, match="a rocm71 build has no variant wheel"):
        plan_variant("k", Backend("rocm", Version("7.1")), None, GpuTargets.of(rocm=["gfx942"]))


def test_the_document_is_what_uv_accepts() -> None:
    document = json.loads(plan_variant("img2gray", CU130, Version("2.14"), TARGETS).json_bytes())
    assert document["$schema"] == SCHEMA == "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json"
    assert document["default-priorities"] == {"namespace": ["nvidia", "abi_dependency"]}
    assert set(document["providers"]) == set(document["default-priorities"]["namespace"])  # uv refuses it otherwise
    assert document["providers"] == PROVIDERS
    assert document["providers"]["nvidia"]["plugin-api"] == "nvidia_variant_provider.plugin:NvidiaVariantPlugin"
    assert list(document["variants"]) == ["cu130_torch214"]  # only the wheel's own label


def _contents(filename: str, requires: list[str]) -> WheelContents[bytes]:
    name = WheelName.parse(filename)
    return WheelContents(name, {"name": name.distribution, "version": str(name.version), "requires_dist": requires})


@pytest.mark.parametrize(("filename", "requires", "message"), [
    ("img2gray-1-py3-none-any.whl", ["torch"], "its name ends in no backend (img2gray): a noarch"),
    ("img2gray_tvm_ffi_cu130-1+tvmffi2.13-cp39-abi3-linux_x86_64.whl", ["apache-tvm-ffi==2.13.*"],
     "requires no torch"),
    ("img2gray_cu130-1+local-cp39-abi3-linux_x86_64.whl", ["torch"], "version label 'local' is not a torch one"),
    ("img2gray_cu130-1-cp39-abi3-linux_x86_64.whl", ["torch >>> 2"], "Requires-Dist 'torch >>> 2' is invalid (Expected"),
])
def test_wheels_without_a_variant_say_why_in_one_line(filename: str, requires: list[str], message: str) -> None:
    with pytest.raises(NoVariant) as info:
        plan_of(_contents(filename, requires))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_hub2wheel_writes_variant_wheels_beside_the_backend_named_ones(flat_repo: Path, tmp_path: Path) -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=False, highlight=False, soft_wrap=True)
    plain = convert(local_source(flat_repo), Options(out_dir=tmp_path / "plain"), console)
    report = convert(local_source(flat_repo), Options(out_dir=tmp_path / "out", variant_wheels=True), console)
    # The backend-named wheels are unchanged, byte for byte.
    assert {p.name: p.read_bytes() for _, p in report.converted} == {p.name: p.read_bytes() for _, p in plain.converted}
    variants = {variant: path.name for variant, path in report.variant_wheels}
    assert variants == {
        "torch213-cxx11-cpu-x86_64-linux": "img2gray-1-cp39-abi3-manylinux_2_17_x86_64-cpu_torch213.whl",
        "torch213-cxx11-cu130-x86_64-linux": "img2gray-1-cp39-abi3-manylinux_2_17_x86_64-cu130_torch213.whl",
        "torch-stable-abi210-cu130-x86_64-linux": "img2gray-1-cp39-abi3-manylinux_2_17_x86_64-cu130.whl",
    }
    assert "torch212-cxx11-rocm71-x86_64-linux: no variant wheel (" in buffer.getvalue()
    with zipfile.ZipFile(tmp_path / "out" / variants["torch-stable-abi210-cu130-x86_64-linux"]) as archive:
        names = archive.namelist()
        document = json.loads(archive.read("img2gray-1.dist-info/variant.json"))
        metadata = archive.read("img2gray-1.dist-info/METADATA").decode()
    assert document["variants"] == {"cu130": {"nvidia": {"cuda_version_lower_bound": ["13.0"]}}}
    assert "Name: img2gray\n" in metadata and "Version: 1\n" in metadata and "Requires-Dist: torch>=2.10" in metadata
    with zipfile.ZipFile(tmp_path / "out" / "img2gray_cu130-1-cp39-abi3-manylinux_2_17_x86_64.whl") as archive:
        backend_named = archive.namelist()
    assert [n.replace("img2gray_cu130-1.dist-info", "img2gray-1.dist-info") for n in backend_named
            if not n.endswith("RECORD")] == [n for n in names if not n.endswith(("RECORD", "variant.json"))]
    # The same variant wheel from the finished backend-named wheel (img2gray's own build does this), byte for byte.
    again = write_variant_wheel(tmp_path / "plain" / "img2gray_cu130-1-cp39-abi3-manylinux_2_17_x86_64.whl",
                                tmp_path / "again")
    assert again.path.read_bytes() == (tmp_path / "out" / again.path.name).read_bytes()
    rerun = convert(local_source(flat_repo), Options(out_dir=tmp_path / "out", variant_wheels=True), console)
    assert sorted(rerun.variant_wheels) == sorted(report.variant_wheels) and len(rerun.unchanged) == len(plain.converted)


def test_a_variant_wheel_that_cannot_be_written_is_one_line(flat_repo: Path, tmp_path: Path) -> None:
    report = convert(local_source(flat_repo), Options(out_dir=tmp_path, variants=VariantFilter(
        patterns=("torch-stable-abi210-cu130-x86_64-linux",))), Console(file=io.StringIO()))
    ((_, wheel),) = report.converted
    (tmp_path / "a-file").write_text("")
    with pytest.raises(InvalidWheel) as info:
        write_variant_wheel(wheel, tmp_path / "a-file")
    assert str(info.value).startswith("img2gray-1-cp39-abi3-manylinux_2_17_x86_64-cu130.whl: cannot be written to ")
    assert "\n" not in str(info.value)


def test_a_finished_wheel_without_a_variant_is_one_line(flat_repo: Path, tmp_path: Path) -> None:
    report = convert(local_source(flat_repo), Options(out_dir=tmp_path, variants=VariantFilter(patterns=("torch-cuda",))),
                     Console(file=io.StringIO()))
    ((_, noarch),) = report.converted
    with pytest.raises(NoVariant, match="ends in no backend"):
        write_variant_wheel(noarch, tmp_path / "variants")
    assert not (tmp_path / "variants").exists() or not any((tmp_path / "variants").iterdir())
