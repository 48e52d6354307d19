"""hub2wheel on kernels 0.19 variant names: a new name converts as its legacy twin, ``cpython-X.Y`` becomes the
wheel's Python tag and Requires-Python, SDKs need no torch, ``torch-cann`` converts, MLX kernels get a project of
their own and never fail the run."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from kernelwheel.format.variants import Variant
from kernelwheel.hub.sources import local_source
from kernelwheel.wheels.convert import Options, convert, plan_variant
from kernelwheel.wheels.selection import select_variants
from tests.helpers import kernel_repos

LEGACY = "torch214-cxx11-cu130-x86_64-linux"
NEW = "torch-2.14-cxx11-cuda-13.0-cpython-3.9-abi3-x86_64-linux"
NEW_312 = "torch-2.14-cxx11-cuda-13.0-cpython-3.12-abi3-x86_64-linux"
STABLE_LEGACY = "torch-stable-abi211-cu130-x86_64-linux"
STABLE_NEW = "torch-stable-abi-2.11-cuda-13.0-cpython-3.9-abi3-x86_64-linux"


def _repo(root: Path, so_cache: Path, *variants: str) -> Path:
    for variant in variants:
        kernel_repos.flat_variant(root / "build", variant, so_cache)
    return root


def _built(repo: Path, name: str) -> tuple[str, list[str], str | None]:
    """(wheel filename, Requires-Dist, Requires-Python) of one variant, nothing written."""
    source = local_source(repo)
    contents = plan_variant(Variant.parse(name), source, Options(kernel_version=Version("0.1.0"))).contents
    metadata = contents.metadata
    return contents.name.filename, [str(r) for r in metadata.get("requires_dist", [])], metadata.get("requires_python")


@pytest.mark.parametrize(("legacy", "new"), [(LEGACY, NEW), (STABLE_LEGACY, STABLE_NEW)])
def test_a_new_name_is_the_same_wheel_as_its_legacy_twin(legacy: str, new: str, tmp_path: Path,
                                                         so_cache: Path) -> None:
    repo = _repo(tmp_path / "k", so_cache, legacy, new)
    assert _built(repo, new) == _built(repo, legacy)
    name, requires, _ = _built(repo, new)
    if new == STABLE_NEW:
        assert name.startswith("img2gray_cu130-0.1.0-cp39-abi3-") and requires == ["torch>=2.11"]
    else:
        assert name.startswith("img2gray_cu130-0.1.0+torch2.14-cp39-abi3-") and requires == ["torch==2.14.*"]


def test_both_names_in_one_repo_give_one_wheel_and_the_legacy_name_is_kept() -> None:
    selection = select_variants([NEW, LEGACY, NEW_312])
    assert sorted(str(v) for v in selection.accepted) == sorted([LEGACY, NEW_312])  # 3.12 is another wheel
    (rejected,) = selection.rejected
    assert rejected.name == NEW and rejected.reason.startswith(f"same wheel as {LEGACY}") and not rejected.invalid


def test_cpython_3_12_gives_a_cp312_abi3_wheel_requiring_python_3_12(tmp_path: Path, so_cache: Path) -> None:
    repo = _repo(tmp_path / "k", so_cache, NEW_312)
    name, requires, requires_python = _built(repo, NEW_312)
    assert name.startswith("img2gray_cu130-0.1.0+torch2.14-cp312-abi3-manylinux_")
    assert requires == ["torch==2.14.*"] and requires_python == ">=3.12"


@pytest.mark.parametrize(("variant", "wheel"), [
    ("sdk", "img2gray_sdk-0.1.0-py3-none-any.whl"),
    ("sdk-cuda", "img2gray_sdk_cuda-0.1.0-py3-none-any.whl"),
    ("sdk-cuda-12.8-cpython-3.12-abi3-x86_64-linux", "img2gray_sdk_cu128-0.1.0-cp312-abi3-manylinux_"),
])
def test_an_sdk_has_no_torch_requirement(variant: str, wheel: str, tmp_path: Path, so_cache: Path) -> None:
    repo = _repo(tmp_path / "k", so_cache, variant)
    name, requires, _ = _built(repo, variant)
    assert name.startswith(wheel)
    assert not any(r.startswith("torch") for r in requires)


def test_torch_cann_converts(tmp_path: Path, so_cache: Path) -> None:
    repo = _repo(tmp_path / "k", so_cache, "torch-cann")
    name, requires, _ = _built(repo, "torch-cann")
    assert name == "img2gray-0.1.0-py3-none-any.whl" and requires == ["torch"]


def test_mlx_metal_beside_torch_cuda_does_not_fail_the_run(tmp_path: Path, so_cache: Path) -> None:
    repo = _repo(tmp_path / "k", so_cache, "torch-cuda", "mlx-metal")
    report = convert(local_source(repo), Options(out_dir=tmp_path / "out"))
    assert report.failed == []
    assert sorted(p.name for _, p in report.converted) == ["img2gray-1-py3-none-any.whl",
                                                           "img2gray_mlx_metal-1-py3-none-any.whl"]
    _, requires, _ = _built(repo, "mlx-metal")
    assert requires == ["mlx"]
