"""kernelwheel.wheels.noarch: noarch builds that are the same stay one wheel; ones that differ get one per backend."""

from __future__ import annotations

import json
from pathlib import Path

from kernelwheel.format.variants import Variant
from kernelwheel.hub.sources import local_source
from kernelwheel.wheels.convert import Options, convert
from kernelwheel.wheels.noarch import plan_noarch
from kernelwheel.wheels.wheel_reader import read_wheel
from tests.helpers import kernel_repos

NOARCH = ["torch-cpu", "torch-cuda", "torch-xpu"]


def _repo(tmp_path: Path, so_cache: Path) -> Path:
    repo = tmp_path / "img2gray"
    for name in NOARCH:
        kernel_repos.flat_variant(repo / "build", name, so_cache)
    return repo


def _rewrite(variant_dir: Path, **metadata: object) -> None:
    meta = json.loads((variant_dir / "metadata.json").read_text())
    meta.update(metadata)
    meta["digest"] = kernel_repos.kernel_builder_digest(variant_dir)
    (variant_dir / "metadata.json").write_text(json.dumps(meta))


def test_same_files_give_one_wheel(tmp_path: Path, so_cache: Path) -> None:
    repo = _repo(tmp_path, so_cache)
    variants = [Variant.parse(n) for n in NOARCH]
    plan = plan_noarch(repo / "build", variants)
    assert not plan.per_backend and {str(v): str(k) for v, k in plan.same_as.items()} == {
        "torch-cpu": "torch-cuda", "torch-xpu": "torch-cuda"}
    report = convert(local_source(repo), Options(out_dir=tmp_path / "out"))
    assert [p.name for _, p in report.converted] == ["img2gray-1-py3-none-any.whl"]
    assert dict(report.skipped)["torch-xpu"].startswith("the same build as torch-cuda")


def test_differing_builds_become_one_project_per_backend(tmp_path: Path, so_cache: Path) -> None:
    repo = _repo(tmp_path, so_cache)
    cpu = repo / "build" / "torch-cpu"
    (cpu / "__init__.py").write_text('"""img2gray (noarch, CPU path)."""\nBACKEND = "cpu"\n')
    _rewrite(cpu)
    _rewrite(repo / "build" / "torch-cuda", **{"python-depends": ["nvidia-cutlass-dsl"]})
    report = convert(local_source(repo), Options(out_dir=tmp_path / "out"))
    assert not report.skipped, report.skipped
    names = {variant: path.name for variant, path in report.converted}
    assert names == {"torch-cpu": "img2gray_cpu-1-py3-none-any.whl", "torch-cuda": "img2gray_cuda-1-py3-none-any.whl",
                     "torch-xpu": "img2gray_xpu-1-py3-none-any.whl"}
    cuda = read_wheel(tmp_path / "out" / names["torch-cuda"])
    assert cuda.metadata["requires_dist"] == ["torch", "nvidia-cutlass-dsl"]  # mapped for the cuda backend only
    cpu_wheel = read_wheel(tmp_path / "out" / names["torch-cpu"])
    assert cpu_wheel.metadata["requires_dist"] == ["torch"]
    assert b'BACKEND = "cpu"' in cpu_wheel.files["img2gray/__init__.py"]


def test_unreadable_sibling_fails_alone(tmp_path: Path, so_cache: Path) -> None:
    repo = _repo(tmp_path, so_cache)
    (repo / "build" / "torch-xpu" / "metadata.json").write_text("{not json")  # conversion reports it, not the plan
    plan = plan_noarch(repo / "build", [Variant.parse(n) for n in NOARCH])
    assert not plan.per_backend and plan.same_as == {Variant.parse("torch-cpu"): Variant.parse("torch-cuda")}
    report = convert(local_source(repo), Options(out_dir=tmp_path / "out"))
    assert [p.name for _, p in report.converted] == ["img2gray-1-py3-none-any.whl"]
    assert "metadata.json" in dict(report.skipped)["torch-xpu"]
