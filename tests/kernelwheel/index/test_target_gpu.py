"""kernelwheel.index.target_gpu: --gpu-arch, and nvidia-smi's answers (a stand-in nvidia-smi on PATH) or its
absence."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kernelwheel.index.target_gpu import Gpu, GpuCheck, from_argument, parse_capability, probe
from kernelwheel.io.errors import ToolError


def _nvidia_smi(folder: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    tool = folder / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\n{script}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}/usr/bin:/bin")


@pytest.mark.parametrize(("text", "capability"), [("9.0", (9, 0)), (" 12.0 ", (12, 0)), ("8.6", (8, 6))])
def test_capabilities(text: str, capability: tuple[int, int]) -> None:
    assert parse_capability(text) == capability


@pytest.mark.parametrize("text", ["sm_90", "90", "9", "9.0a", "", "1234.5"])
def test_not_capabilities(text: str) -> None:
    with pytest.raises(ToolError, match=r"expected a CUDA compute capability such as 9\.0"):
        parse_capability(text)


def test_gpu_arch_argument() -> None:
    check = from_argument("9.0")
    assert check.gpus == (Gpu("the GPU named by --gpu-arch", (9, 0)),) and check.source == "--gpu-arch"
    assert check.to_json()["checked"] is True


def test_nvidia_smi_lists_each_gpu_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _nvidia_smi(tmp_path, monkeypatch, 'echo "NVIDIA H100 80GB HBM3, 9.0"; echo "NVIDIA H100 80GB HBM3, 9.0"; '
                                      'echo "NVIDIA GeForce RTX 5090, 12.0"')
    check = probe()
    assert check == GpuCheck((Gpu("NVIDIA H100 80GB HBM3", (9, 0)), Gpu("NVIDIA GeForce RTX 5090", (12, 0))),
                             "nvidia-smi")
    assert check.describe() == ("GPU NVIDIA H100 80GB HBM3 (CUDA capability 9.0), NVIDIA GeForce RTX 5090 (CUDA "
                                "capability 12.0), from nvidia-smi")


@pytest.mark.parametrize(("script", "reason"), [
    ('echo "Field \\"compute_cap\\" is not a valid field to query."; exit 2', "nvidia-smi exited with 2"),
    ('echo "NVIDIA H100, [N/A]"', "not a name and a compute capability"),
    ("true", "nvidia-smi lists no GPU"),
])
def test_nvidia_smi_failing_means_no_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str,
                                           reason: str) -> None:
    _nvidia_smi(tmp_path, monkeypatch, script)
    check = probe()
    assert not check.gpus and reason in check.reason and "\n" not in check.reason


def test_no_nvidia_smi_means_no_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    check = probe()
    assert check.to_json() == {"checked": False, "source": None, "gpus": [],
                               "reason": "nvidia-smi is not on PATH (pass --gpu-arch X.Y to check anyway)"}
    assert check.describe() == "GPU not checked: nvidia-smi is not on PATH (pass --gpu-arch X.Y to check anyway)"
