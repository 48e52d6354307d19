"""kernelwheel.wheels.gpu_targets: the recorded forms (JSON, description line) read back, CUDA's rule, and the
warning when metadata.json's declared architectures and the binaries differ."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernelwheel.io.errors import InvalidWheel
from kernelwheel.wheels.gpu_targets import (
    GpuTargets,
    cuda_problem,
    cuda_runs_on,
    declared_mismatch,
    description_line,
    from_description,
    read_recorded,
)

HOPPER = GpuTargets.of(["9.0", "8.0"], ["9.0"])


def test_sorted_by_capability_and_united() -> None:
    targets = GpuTargets.of(["10.0", "9.0a"]).union(GpuTargets.of(["7.5", "12.0"], ["8.0"], ["gfx942"]))
    assert targets == GpuTargets(("7.5", "9.0a", "10.0", "12.0"), ("8.0",), ("gfx942",))
    assert not GpuTargets() and bool(targets)


def test_json_and_description_round_trip() -> None:
    assert GpuTargets.from_json(json.loads(HOPPER.json_bytes()), "x") == HOPPER
    description = f"# relu\n\n## Build\n\n{description_line(HOPPER)}\n- Upstream: somewhere\n"
    assert from_description(description) == HOPPER
    assert description_line(HOPPER).endswith("CUDA SASS 8.0, 9.0; CUDA PTX 9.0; ROCm none")
    assert from_description("# no line here") is None
    assert from_description(description + description_line(HOPPER)) is None  # two lines: not ours
    assert from_description(description_line(HOPPER).replace("8.0", "8.0; rm -rf")) is None


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


@given(st.text(max_size=300))
def test_any_description_reads_or_is_none(text: str) -> None:
    result = from_description(text)
    assert result is None or isinstance(result, GpuTargets)


@pytest.mark.parametrize(("targets", "capability", "runs"), [
    (GpuTargets.of(["8.0", "9.0"]), (12, 0), False),  # Blackwell: no SASS of major 12, no PTX
    (GpuTargets.of(["8.0", "9.0"]), (8, 9), True),  # Ada runs Ampere's 8.0 SASS
    (GpuTargets.of(["8.6"]), (8, 0), False),  # a newer minor's SASS does not run on an older one
    (GpuTargets.of(["8.0"], ["9.0"]), (12, 0), True),  # PTX 9.0 is compiled for 12.0 by the driver
    (GpuTargets.of([], ["9.0"]), (8, 9), False),  # PTX newer than the GPU
    (GpuTargets.of(["9.0a"]), (9, 0), True),
    (GpuTargets.of(["9.0a"]), (9, 1), False),  # arch-specific: that capability only
    (GpuTargets.of(["10.0a"], ["10.0a"]), (12, 0), False),  # arch-specific PTX too
    (GpuTargets.of(["10.0f"]), (10, 3), True),
])
def test_cuda_rule(targets: GpuTargets, capability: tuple[int, int], runs: bool) -> None:
    assert cuda_runs_on(targets, capability) is runs
    problem = cuda_problem(targets, capability, "NVIDIA H100")
    assert (problem is None) is runs
    if problem is not None:
        assert problem.startswith(f"NVIDIA H100 (CUDA capability {capability[0]}.{capability[1]}) runs none of its")
        assert targets.describe() in problem and "\n" not in problem


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
