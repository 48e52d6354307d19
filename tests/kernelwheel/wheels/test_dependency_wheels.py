"""kernelwheel.wheels.dependency_wheels: the Requires-Dist lines a build's kernel-depends become."""

from __future__ import annotations

import json

import pytest

from kernelwheel.format.dependency import Dependency
from kernelwheel.format.kernel_depends import parse_kernel_info
from kernelwheel.format.variants import Variant
from kernelwheel.io.errors import KernelDependencyError
from kernelwheel.wheels.dependency_wheels import ConvertedKernel, ConvertedWheel, dependency_requirements
from kernelwheel.wheels.naming import WheelName

BASE = {"name": "relu-plus", "id": "_relu_plus_cuda_abc1234", "version": 1, "license": "MIT",
        "python-depends": [], "backend": {"type": "cuda"}}
CUDA = Variant.parse("torch-stable-abi210-cu130-x86_64-linux")


def _info(**extra: object) -> bytes:
    return json.dumps({**BASE, **extra}).encode()


def _converted(dep: Dependency, *wheels: tuple[str, str]) -> dict[str, ConvertedKernel]:
    return {dep.repo_id: ConvertedKernel(dep, tuple(ConvertedWheel(v, WheelName.parse(f), "relu") for v, f in wheels))}


def test_requirement_per_backend_and_bound() -> None:
    info = parse_kernel_info(_info(**{"kernel-depends": [{"repo-id": "org/relu", "version": 1}]}), "w")
    dep = info.dependencies[0]
    wheels = _converted(dep, ("torch-stable-abi210-cu130-x86_64-linux",
                              "relu_cu130-1.20260101.0-cp39-abi3-manylinux_2_17_x86_64.whl"),
                        ("torch-cpu", "relu-1.20260101.0-py3-none-any.whl"))
    requirements, packages = dependency_requirements(CUDA, info, wheels, "w")
    assert [str(r) for r in requirements] == ["relu-cu130<2,>=1"] and packages == {"org/relu": "relu"}
    cpu = Variant.parse("torch-stable-abi210-cpu-x86_64-linux")  # no cpu build of relu: its noarch wheel
    assert [str(r) for r in dependency_requirements(cpu, info, wheels, "w")[0]] == ["relu<2,>=1"]
    by_revision = parse_kernel_info(_info(**{"kernel-depends": [{"repo-id": "org/relu", "revision": "abc"}]}), "w")
    revision_wheels = _converted(by_revision.dependencies[0], ("torch-cpu", "relu-1.2.3-py3-none-any.whl"))
    assert [str(r) for r in dependency_requirements(CUDA, by_revision, revision_wheels, "w")[0]] == ["relu==1.2.3"]


def test_unusable_dependency_is_a_clear_error() -> None:
    info = parse_kernel_info(_info(**{"kernel-depends": [{"repo-id": "org/relu", "version": 1}]}), "build/v")
    dep = info.dependencies[0]
    only_rocm = _converted(dep, ("torch-stable-abi210-rocm71-x86_64-linux",
                                 "relu_rocm71-1-cp39-abi3-manylinux_2_17_x86_64.whl"))
    with pytest.raises(KernelDependencyError, match=r"build/v: kernel-depends org/relu \(version 1\) has no wheel "
                                                    r"for this variant's backend \(cu130; converted: relu-rocm71\)"):
        dependency_requirements(CUDA, info, only_rocm, "build/v")
    failed = {dep.repo_id: ConvertedKernel(dep, failure="org/relu: no such kernel")}
    with pytest.raises(KernelDependencyError, match=r"kernel-depends org/relu \(version 1\): org/relu: no such kernel"):
        dependency_requirements(CUDA, info, failed, "build/v")
