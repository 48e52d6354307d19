"""tools/build/backend.py + tools/build/wheel.py: the classic wheel's name, metadata, tags and binary."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from kernelwheel.format.variant_pieces import Backend
from kernelwheel.io.errors import InvalidWheel
from kernelwheel.wheels.gpu_targets import GpuTargets, from_description
from kernelwheel.wheels.naming import WheelName, torch_minor
from kernelwheel.wheels.wheel_contents import WheelContents
from kernelwheel.wheels.wheel_reader import read_wheel
from tests.helpers import fatbins
from tests.helpers.elf import LIBRARY, dynamic_symbols, extracted_library, needed_libraries
from tools.build.backend import built_backend, retag_built_wheel
from tools.build.toolkit import backend_tag, nvcc_version
from tools.build.wheel import BuildFailed, build, selected_abi


def test_classic_wheel_name_metadata_and_tags(classic_wheel: Path) -> None:
    name = WheelName.parse(classic_wheel.name)
    minor = torch_minor(torch.__version__)
    backend = backend_tag(nvcc_version(), torch.version.cuda)  # the compiler names the build (tools.build.toolkit)
    assert name.distribution == f"img2gray-{backend}"
    assert str(name.version) == f"0.1.0+torch{minor}"
    assert (name.python_tag, name.abi_tag, name.platform_tag) == ("cp39", "abi3", "manylinux_2_28_x86_64")
    contents = read_wheel(classic_wheel)  # checks every RECORD hash
    assert contents.metadata["version"] == str(name.version)
    assert contents.metadata["name"] == name.distribution
    assert sorted(contents.metadata["requires_dist"]) == ['pillow; extra == "cli"', f"torch=={minor}.*"]
    assert contents.metadata["provides_extra"] == ["cli"]  # Pillow, for `python -m img2gray IMAGE OUTPUT`
    info = json.loads(contents.files["img2gray/_build_info.json"])
    assert info["torch"] == torch.__version__ and info["backend"]["tag"] == backend


def test_installed_build_info_has_the_structured_backend_named_in_the_distribution() -> None:
    """cmake/build_info.json.in: ``"backend": {"type", "version", "tag"}``; tools/build/backend.py names the
    distribution img2gray-<tag> from it, and img2gray.build_info() reads it back."""
    (distribution,) = importlib.metadata.packages_distributions()["img2gray"]
    installed = importlib.metadata.distribution(distribution)
    assert "img2gray/_build_info.json" in [str(f) for f in installed.files or []]
    record = json.loads(Path(str(installed.locate_file("img2gray/_build_info.json"))).read_text())["backend"]
    assert sorted(record) == ["tag", "type", "version"]
    parsed = Backend.parse(record["tag"])
    assert (parsed.kind, None if parsed.version is None else str(parsed.version)) == (record["type"], record["version"])
    if torch.version.cuda:
        assert record["tag"] == backend_tag(nvcc_version(), torch.version.cuda)
    else:
        assert record == {"type": "cpu", "version": None, "tag": "cpu"}
    assert distribution.lower() == f"img2gray-{record['tag']}"
    import img2gray

    info = img2gray.build_info()
    assert (info.backend, info.backend_type, info.backend_version) == (record["tag"], record["type"], record["version"])


def test_build_info_backend_record_must_agree_with_its_tag() -> None:
    assert built_backend({"type": "cuda", "version": "13.0", "tag": "cu130"}, where="w") == Backend.parse("cu130")
    assert built_backend({"type": "cpu", "version": None, "tag": "cpu"}, where="w") == Backend("cpu")
    with pytest.raises(InvalidWheel, match="must be an object with type, version and tag"):
        built_backend("cu130", where="w")
    with pytest.raises(InvalidWheel, match=r"backend tag 'cu128' is cuda 12\.8, but the record says cuda 13\.0"):
        built_backend({"type": "cuda", "version": "13.0", "tag": "cu128"}, where="w")


def test_extension_uses_only_the_limited_api_stub(classic_wheel: Path, tmp_path: Path) -> None:
    so = extracted_library(classic_wheel, tmp_path)
    undefined, _ = dynamic_symbols(so)
    assert {name for name in undefined if name.startswith("Py")} == {"PyModule_Create2"}
    needed = needed_libraries(so)
    assert not any(lib.startswith("libpython") for lib in needed)
    # torch and CUDA runtime come from the user's torch install, never grafted into the wheel
    assert not [n for n in zipfile.ZipFile(classic_wheel).namelist() if n.startswith("img2gray_cu130.libs/")]


def test_auditwheel_agrees_with_the_platform_tag(classic_wheel: Path) -> None:
    shown = subprocess.run([sys.executable, "-m", "auditwheel", "show", str(classic_wheel)],
                           capture_output=True, text=True, check=True).stdout
    shown = " ".join(shown.split())  # auditwheel wraps its lines
    assert 'is consistent with the following platform tag:' in shown
    constrained = shown.split('constrains the platform tag to "')[1].split('"')[0]
    glibc = tuple(int(x) for x in constrained.split("_")[1:3])
    assert glibc <= (2, 28), shown


@pytest.mark.slow
def test_cpu_only_switch_builds_img2gray_cpu(tmp_path: Path) -> None:
    """IMG2GRAY_BACKEND=cpu (classic ABI here; tests/test_stable_abi.py builds the stable one): no CUDA code,
    linked without libtorch_cuda, named img2gray-cpu."""
    os.environ["IMG2GRAY_BACKEND"] = "cpu"
    try:
        wheel = build(tmp_path / "out", abi="classic")
    finally:
        del os.environ["IMG2GRAY_BACKEND"]
    name = WheelName.parse(wheel.name)
    assert name.distribution == "img2gray-cpu" and name.platform_tag == "manylinux_2_28_x86_64"
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    needed = needed_libraries(site / LIBRARY)
    assert not [lib for lib in needed if "cuda" in lib or "cudart" in lib], needed
    probe = (
        "import torch, img2gray;"
        "assert img2gray.build_info().backend == 'cpu';"
        "assert not torch._C._dispatch_has_kernel_for_dispatch_key('img2gray::img2gray', 'CUDA');"
        "x = torch.tensor([[[255, 0, 0]]], dtype=torch.uint8); print(img2gray.img2gray(x).item())"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                            env=dict(os.environ, PYTHONPATH=str(site)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "76"


def test_abi_switch_is_checked_before_building(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IMG2GRAY_ABI", raising=False)
    assert selected_abi(None) == "auto"  # CMake then picks stable for torch >= build.toml's [torch] stable-abi
    monkeypatch.setenv("IMG2GRAY_ABI", "Stable")
    assert selected_abi(None) == "stable" and selected_abi("classic") == "classic"
    with pytest.raises(BuildFailed, match="the ABI must be one of auto, stable, classic; got 'bogus'"):
        selected_abi("bogus")


def test_retag_records_the_gpu_code_of_the_binaries(tmp_path_factory: pytest.TempPathFactory) -> None:
    """img2gray's own wheel records what its library holds, as hub2wheel records a converted one's."""
    library = fatbins.built(tmp_path_factory)["sass80_90_ptx90"].read_bytes()
    info = {"kernel": "img2gray", "version": "0.1.0", "abi": "stable", "requires_torch": "2.10",
            "backend": {"type": "cuda", "version": "13.0", "tag": "cu130"}}
    built = WheelContents(WheelName.parse("img2gray-0.1.0-cp39-abi3-linux_x86_64.whl"),
                          {"name": "img2gray", "version": "0.1.0", "description": "# img2gray\n"},
                          {"img2gray/_build_info.json": json.dumps(info).encode(), "img2gray/_C.abi3.so": library})
    final = retag_built_wheel(built)
    recorded = json.loads(final.files[f"{final.name.dist_info}/gpu_targets.json"])
    assert recorded == {"cuda_sass": ["8.0", "9.0"], "cuda_ptx": ["9.0"], "rocm": []}
    assert from_description(str(final.metadata["description"])) == GpuTargets.of(["8.0", "9.0"], ["9.0"])
