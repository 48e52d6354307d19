"""kernelwheel.wheels.entry_package: a build with GPU archs to check is installed behind an entry package (pip, fresh venv)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kernelwheel.hub.sources import local_source
from kernelwheel.wheels.convert import Options, convert
from kernelwheel.wheels.wheel_reader import read_wheel
from tests.helpers import kernel_repos
from tests.helpers.venvs import fresh_venv, package_farm

CUDA_VARIANT = "torch-stable-abi210-cu130-x86_64-linux"


def _archs_repo(tmp_path: Path, so_cache: Path, archs: list[str]) -> Path:
    repo = tmp_path / "img2gray"
    vdir = kernel_repos.flat_variant(repo / "build", CUDA_VARIANT, so_cache)
    meta = json.loads((vdir / "metadata.json").read_text())
    meta["backend"]["archs"] = archs
    (vdir / "metadata.json").write_text(json.dumps(meta))
    return repo


def meta_id(repo: Path) -> str:
    metadata = json.loads((repo / "build" / CUDA_VARIANT / "metadata.json").read_text())
    return str(metadata["id"])


@pytest.mark.needs_torch
def test_wheel_with_archs_installs_behind_an_entry(tmp_path: Path, so_cache: Path) -> None:
    repo = _archs_repo(tmp_path, so_cache, ["8.0", "9.0"])
    report = convert(local_source(repo), Options(out_dir=tmp_path / "out"))
    assert not report.skipped, report.skipped
    ((variant, path),) = report.converted
    assert variant == CUDA_VARIANT
    wheel = read_wheel(path)
    build = meta_id(repo)  # metadata.json's id: the module the build is installed and imported as
    assert f"{build}/_ops.py" in wheel.files and f"{build}/metadata.json" in wheel.files
    entry = wheel.files["img2gray/__init__.py"].decode()
    assert "archs=['8.0', '9.0']" in entry and f"build={build!r}" in entry and "dependencies={}" in entry
    assert "ImportError that says so" in str(wheel.metadata.get("description"))

    # Installed by pip and imported: no GPU here, so the check has nothing to compare and the build loads by name.
    venv = fresh_venv(tmp_path / "venv", share_site_packages_of=package_farm(tmp_path / "farm", "torch"))
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--no-deps", str(path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    script = ("import sys, torch, img2gray, img2gray._ops as ops\n"
              "print(img2gray.img2gray(torch.ones(1, 3, 1, 1)).flatten().tolist())\n"
              f"print(img2gray is sys.modules[{build!r}], ops is sys.modules[{build!r} + '._ops'])")
    ran = subprocess.run([str(venv / "bin" / "python"), "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.splitlines()[-1] == "True True"
    assert abs(float(ran.stdout.splitlines()[0].strip("[]")) - 1.0) < 1e-6


@pytest.mark.needs_torch
def test_two_backends_behind_one_entry_refuse_to_import(tmp_path: Path, so_cache: Path) -> None:
    repo = _archs_repo(tmp_path, so_cache, ["9.0"])
    rocm = kernel_repos.flat_variant(repo / "build", "torch212-cxx11-rocm71-x86_64-linux", so_cache)
    meta = json.loads((rocm / "metadata.json").read_text())
    meta["backend"]["archs"] = ["gfx942"]
    (rocm / "metadata.json").write_text(json.dumps(meta))
    report = convert(local_source(repo), Options(out_dir=tmp_path / "out"))
    assert len(report.converted) == 2, report.skipped
    venv = fresh_venv(tmp_path / "venv", share_site_packages_of=package_farm(tmp_path / "farm", "torch"))
    for _, path in report.converted:
        done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--no-deps",
                               str(path)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
    ran = subprocess.run([str(venv / "bin" / "python"), "-c", "import img2gray"], capture_output=True, text=True,
                         cwd=tmp_path)
    assert ran.returncode == 1
    assert ran.stderr.strip().splitlines()[-1] == (
        "ImportError: img2gray-cu130 and img2gray-rocm71 are all installed, and each is a build of img2gray with the "
        "package img2gray: the one imported would be whichever was installed last. Repair with: pip uninstall -y "
        "img2gray-cu130 img2gray-rocm71 && pip install <the one you want>")
