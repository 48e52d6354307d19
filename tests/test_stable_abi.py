"""The stable-ABI build (IMG2GRAY_ABI=stable): its wheel, its binary, and the CPU-only torch path.

The op itself is tested by tests/test_ops.py: `make test` installs this build (the default) and runs the suite,
then runs the op tests again on the classic build. Here are the properties only this build has: one file for
every torch >= 2.10, no ATen/c10 symbol in the binary, and a CPU-only wheel that a CPU-only torch can load.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import kernel_abi_check
import pytest
import torch

from kernelwheel.wheels.naming import WheelName
from kernelwheel.wheels.wheel_reader import read_wheel
from tests.conftest import WHEELHOUSE, stable_wheels
from tests.helpers.elf import demangled, dynamic_symbols, extracted_library
from tests.helpers.repo import REPO_ROOT
from tools.build.toolkit import backend_tag, nvcc_version
from tools.build.wheel import build

BACKEND = backend_tag(nvcc_version(), torch.version.cuda)  # the compiler names the build (tools.build.toolkit)


@pytest.fixture(scope="session")
def stable_wheel() -> Path:
    """The repaired stable-ABI wheel `make wheel` writes into wheelhouse/."""
    wheels = stable_wheels(BACKEND)
    if len(wheels) != 1:
        pytest.fail(f"expected one stable-ABI img2gray-{BACKEND} wheel in {WHEELHOUSE}, found "
                    f"{[p.name for p in wheels]}: run `make wheel`")
    return wheels[0]


@pytest.fixture(scope="session")
def cpu_stable_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`IMG2GRAY_BACKEND=cpu python -m tools.cli.build_wheel --abi stable`: the wheel for CPU-only torch users."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("IMG2GRAY_BACKEND", "cpu")
        return build(tmp_path_factory.mktemp("cpu-stable"), abi="stable")


def test_stable_wheel_name_metadata_and_tags(stable_wheel: Path) -> None:
    name = WheelName.parse(stable_wheel.name)
    assert name.distribution == f"img2gray-{BACKEND}"
    assert str(name.version) == "0.1.0"  # no +torchX.Y label: one file for every torch >= 2.10
    assert (name.python_tag, name.abi_tag, name.platform_tag) == ("cp39", "abi3", "manylinux_2_28_x86_64")
    contents = read_wheel(stable_wheel)  # checks every RECORD hash
    assert contents.metadata["version"] == "0.1.0"
    assert sorted(contents.metadata["requires_dist"]) == ['pillow; extra == "cli"', "torch>=2.10"]
    assert contents.metadata["provides_extra"] == ["cli"]  # Pillow, for `python -m img2gray IMAGE OUTPUT`
    info = json.loads(contents.files["img2gray/_build_info.json"])
    assert (info["abi"], info["requires_torch"], info["torch"]) == ("stable", "2.10", torch.__version__)


def test_stable_binary_imports_no_aten_c10_or_torch_cpp_symbol(stable_wheel: Path, tmp_path: Path) -> None:
    undefined, defined = dynamic_symbols(extracted_library(stable_wheel, tmp_path))
    cpp = [name for name in demangled(undefined) if name.startswith(("at::", "c10::", "torch::", "caffe2::"))]
    assert cpp == []
    # What it takes from torch is the versioned C shim layer only.
    shims = {name for name in undefined if name.startswith(("aoti_torch_", "torch_"))}
    assert {"torch_call_dispatcher", "torch_library_impl", "torch_parallel_for"} <= shims
    assert defined == ["PyInit__C"]  # exports.map: the Python entry point only


def test_classic_binary_does_use_aten(classic_wheel: Path, tmp_path: Path) -> None:
    """The contrast that makes the stable check above meaningful."""
    undefined, _ = dynamic_symbols(extracted_library(classic_wheel, tmp_path))
    assert any(name.startswith(("at::", "c10::")) for name in demangled(undefined))


@pytest.mark.parametrize("which", ["classic", "stable"])
def test_binaries_pass_kernel_abi_check(which: str, classic_wheel: Path, stable_wheel: Path, tmp_path: Path) -> None:
    """kernel-abi-check (kernel-builder's validator): abi3 for CPython 3.9 and manylinux_2_28 symbol versions."""
    so = extracted_library(classic_wheel if which == "classic" else stable_wheel, tmp_path)
    binary = kernel_abi_check.ObjectFile(str(so))
    assert binary.check_python_abi("3.9") == []
    assert binary.check_manylinux("manylinux_2_28") == []


def test_cpu_only_wheel_runs_the_op_tests_under_cpu_torch_2_13(cpu_stable_wheel: Path, torch213_venv: Path,
                                                                tmp_path: Path) -> None:
    """CPU-only users: `img2gray-cpu` (stable ABI, links libtorch_cpu only), built here against torch 2.14.1,
    installed by name next to the CPU-only torch 2.13.0 and put through the whole op test suite there."""
    name = WheelName.parse(cpu_stable_wheel.name)
    assert (name.distribution, str(name.version)) == ("img2gray-cpu", "0.1.0")
    python = str(torch213_venv / "bin" / "python")
    install = subprocess.run([python, "-m", "pip", "install", "--find-links", str(cpu_stable_wheel.parent),
                              "img2gray-cpu"], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr
    tests = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_ops.py"],
                           cwd=REPO_ROOT, capture_output=True, text=True)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert " failed" not in tests.stdout and " passed" in tests.stdout
    header = subprocess.run([python, "-c", "import img2gray, torch; i = img2gray.build_info(); "
                             "print(torch.__version__, i.abi, i.backend, img2gray.__file__)"],
                            cwd=tmp_path, capture_output=True, text=True, check=True).stdout.split()
    assert header[:3] == ["2.13.0+cpu", "stable", "cpu"] and str(torch213_venv) in header[3]


def test_cuda_wheel_under_cpu_only_torch_says_what_to_install(stable_wheel: Path, torch213_base: Path,
                                                              tmp_path: Path) -> None:
    subprocess.run([str(torch213_base / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(tmp_path / "site"), str(stable_wheel)], check=True)
    result = subprocess.run([str(torch213_base / "bin" / "python"), "-c", "import img2gray"], cwd=tmp_path / "site",
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert "needs a CUDA build of torch, but torch 2.13.0+cpu is CPU-only: install img2gray-cpu instead" in result.stderr
