"""kernelwheel.wheels.gpu_targets: the recorded forms (JSON, description line) read back, CUDA's rule, and the
warning when metadata.json's declared architectures and the binaries differ."""

from __future__ import annotations

import json

import pytest

from kernelwheel.io.errors import InvalidWheel
from kernelwheel.wheels.gpu_targets import (
    GpuTargets,
    declared_mismatch,
    description_line,
    read_recorded,
)

HOPPER = GpuTargets.of(["9.0", "8.0"], ["9.0"])


def test_sorted_by_capability_and_united() -> None:
    targets = GpuTargets.of(["10.0", "9.0a"]).union(GpuTargets.of(["7.5", "12.0"], ["8.0"], ["gfx942"]))
    assert targets == GpuTargets(("7.5", "9.0a", "10.0", "12.0"), ("8.0",), ("gfx942",))
    assert not GpuTargets() and bool(targets)


def test_json_round_trip_and_description_line() -> None:
    assert GpuTargets.from_json(json.loads(HOPPER.json_bytes()), "x") == HOPPER
    assert description_line(HOPPER).endswith("CUDA SASS 8.0, 9.0; CUDA PTX 9.0; ROCm none")


@pytest.mark.parametrize("value", [[], {"cuda_sass": []}, {"cuda_sass": ["sm_90"], "cuda_ptx": [], "rocm": []},
                                   {"cuda_sass": [], "cuda_ptx": [], "rocm": ["<script>"]},
                                   {"cuda_sass": ["9.0"] * 300, "cuda_ptx": [], "rocm": []}])
def test_recorded_json_is_checked(value: object) -> None:
    with pytest.raises(InvalidWheel, match=r"gpu_targets\.json: ") as caught:
        read_recorded(json.dumps(value).encode(), "k-1.dist-info/gpu_targets.json")
    assert "\n" not in str(caught.value)
    assert read_recorded(None, "k-1.dist-info/gpu_targets.json") is None
    with pytest.raises(InvalidWheel, match="not JSON"):
        read_recorded(b"{", "k-1.dist-info/gpu_targets.json")


def test_declared_and_binary_differ() -> None:
    assert declared_mismatch(["8.0", "9.0+PTX"], HOPPER, "cuda", "build/v") is None
    line = declared_mismatch(["8.0", "9.0", "10.0"], HOPPER, "cuda", "build/v")
    assert line is not None and "\n" not in line
    assert "declared but not in the binaries: SASS 10.0;" in line and "not declared: PTX 9.0)" in line
    assert declared_mismatch([], HOPPER, "cuda", "w") is None and declared_mismatch(["9.0"], GpuTargets(), "cuda", "w") is None
    rocm = GpuTargets.of(rocm=["gfx942"])
    assert "declared but not in the binaries: ROCm gfx90a" in (declared_mismatch(["gfx90a", "gfx942"], rocm, "rocm",
                                                                                  "w") or "")


def test_runtime_archs() -> None:
    assert HOPPER.runtime_archs("cuda") == ("8.0", "9.0", "9.0+PTX")
    assert GpuTargets.of(rocm=["gfx90a"]).runtime_archs("rocm") == ("gfx90a",)
    assert HOPPER.runtime_archs("cpu") == ()
