"""The README's examples against a wheel that hub2wheel made from this kernel's own Hub build.

A Hub build registers its op under a namespace unique to the build (``torch.ops._img2gray_cuda_<id>``, so that two
builds load side by side), not ``torch.ops.img2gray``; the README documents the spelling that reaches either. The
wheel installs behind an entry package (the build declares CUDA archs), so ``python -m img2gray`` must reach the
build's own ``__main__`` through that entry.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from tests.helpers.repo import REPO_ROOT
from tests.helpers.venvs import fresh_venv, package_farm

pytestmark = pytest.mark.slow
PHOTO = REPO_ROOT / "samples" / "chelsea.png"

# The README's "Use" block, with the inputs it leaves to the reader, checked against Pillow's fixed point.
README_EXAMPLES = r"""
import torch, img2gray

image = torch.randint(0, 256, (2, 5, 7, 3), dtype=torch.uint8)
buffer = torch.empty(2, 5, 7, dtype=torch.uint8)
v = image.to(torch.int64)
expected = ((v[..., 0] * 19595 + v[..., 1] * 38470 + v[..., 2] * 7471 + 32768) >> 16).to(torch.uint8)

gray = img2gray.img2gray(image)
img2gray.img2gray(image, out=buffer)
assert torch.equal(gray, expected) and torch.equal(buffer, expected)
ops = getattr(torch.ops, img2gray.build_info().ops_namespace)
assert torch.equal(ops.img2gray(image), expected)
buffer.zero_()
ops.img2gray.out(image, out=buffer)
assert torch.equal(buffer, expected)
print(img2gray.build_info().ops_namespace)
"""


def run(*argv: str | Path, cwd: Path = REPO_ROOT, env: dict[str, str] | None = None) -> str:
    result = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, env=env)
    assert result.returncode == 0, f"{argv}: {(result.stdout + result.stderr)[-3000:]}"
    return result.stdout


@pytest.fixture(scope="module")
def converted_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """build_variants (stable ABI, this venv's torch, sm_90 only as tests/build/test_variants.py builds it, so the
    CMake folder is shared and the rebuild incremental) → hub2wheel on the local build → a fresh venv with torch."""
    base = tmp_path_factory.mktemp("converted")
    run(sys.executable, "-m", "tools.cli.build_variants", "--abi", "stable", "--out", base / "kernel" / "build",
        env={**os.environ, "TORCH_CUDA_ARCH_LIST": "9.0"})
    run(sys.executable, "-m", "tools.hub2wheel", base / "kernel", "--kernel-version", "0.1.0", "--out", base / "wheels")
    (wheel,) = (base / "wheels").glob("img2gray_*.whl")
    venv = fresh_venv(base / "venv", share_site_packages_of=package_farm(base / "torch-farm", "torch"))
    run(venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", wheel)
    return venv


def test_readme_examples_run_on_the_converted_wheel(converted_venv: Path, tmp_path: Path) -> None:
    namespace = run(converted_venv / "bin" / "python", "-c", README_EXAMPLES, cwd=tmp_path).strip().splitlines()[-1]
    assert namespace.startswith("_img2gray_") and namespace != "img2gray"  # the build's own, documented as such


def test_python_m_runs_the_builds_main_through_the_entry(converted_venv: Path, tmp_path: Path) -> None:
    report = run(converted_venv / "bin" / "python", "-m", "img2gray", cwd=tmp_path)
    assert report.startswith("img2gray 0.1.0 (stable ABI"), report
    assert "::img2gray: kernels for CPU" in report and "cpu: [76, 150, 29, 255] ok" in report, report


def test_python_m_converts_a_file_without_numpy_once_pillow_is_there(converted_venv: Path, tmp_path: Path) -> None:
    """The converted wheel has no `cli` extra: without Pillow the refusal names Pillow itself; with it (linked from
    this venv, numpy still absent) the build's own __main__ converts the file."""
    from tools.cli.share_packages import link_closure

    python, target = converted_venv / "bin" / "python", tmp_path / "gray.png"
    assert run(python, "-c", "import importlib.util as u; print(u.find_spec('numpy'))", cwd=tmp_path) == "None\n"
    refused = subprocess.run([str(python), "-m", "img2gray", str(PHOTO), str(target)], cwd=tmp_path,
                             capture_output=True, text=True)
    assert refused.returncode == 2 and not target.exists()
    assert refused.stderr.endswith("python -m img2gray: error: converting an image file needs Pillow, which is not "
                                   "installed: pip install pillow\n"), refused.stderr
    assert "Traceback" not in refused.stderr
    shared = tmp_path / "pillow"  # this test's alone: the module's venv stays without Pillow
    shared.mkdir()
    link_closure("pillow", shared)
    env = {**os.environ, "PYTHONPATH": str(shared)}
    report = run(python, "-m", "img2gray", PHOTO, target, cwd=tmp_path, env=env)
    assert ": identical to Pillow's convert('L')" in report, report
    with Image.open(PHOTO) as photo, Image.open(target) as written:
        assert written.tobytes() == photo.convert("RGB").convert("L").tobytes()
