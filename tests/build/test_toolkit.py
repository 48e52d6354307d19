"""tools.build.toolkit: every tool names a CUDA build after the compiler that built it (no torch 2.15 needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from tools.build import toolkit
from tools.build.variants import TorchEnv


@pytest.mark.parametrize(("nvcc", "torch_cuda", "tag"), [
    ("13.0", "13.2", "cu130"),  # torch 2.15 (CUDA 13.2) compiled by nvcc 13.0: loads under CUDA >= 13.0
    ("12.8", "12.9", "cu128"),
    (None, "13.2", "cu132"),  # no compiler to ask: torch's CUDA
    ("13.0", None, "cpu"),  # a CPU-only torch builds for the CPU whatever nvcc is installed
    (None, None, "cpu"),
])
def test_backend_tag_is_the_compilers(nvcc: str | None, torch_cuda: str | None, tag: str) -> None:
    assert toolkit.backend_tag(nvcc, torch_cuda) == tag


def test_build_variants_names_variants_after_the_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tools.build.variants.nvcc_version", lambda: "13.0")
    assert TorchEnv(Path("/py"), Version("2.15.0"), "13.2").backend.tag == "cu130"
    assert TorchEnv(Path("/py"), Version("2.15.0"), None).backend.tag == "cpu"


def test_nvcc_version_reads_the_release_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.9, V12.9.41'\n")
    nvcc.chmod(0o755)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert toolkit.nvcc_version() == "12.9"
