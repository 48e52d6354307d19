"""kernelwheel.format.kernel_depends: kernel-depends read by kernels' own parser, and the kernels requirement."""

from __future__ import annotations

import json

import pytest

from kernelwheel.format.kernel_depends import (
    Dependency,
    imports_kernels,
    kernels_requirement,
    parse_kernel_info,
)
from kernelwheel.format.variants import Variant
from kernelwheel.io.errors import InvalidVariant

BASE = {"name": "relu-plus", "id": "_relu_plus_cuda_abc1234", "version": 1, "license": "MIT",
        "python-depends": [], "backend": {"type": "cuda"}}
CUDA = Variant.parse("torch-stable-abi210-cu130-x86_64-linux")


def _info(**extra: object) -> bytes:
    return json.dumps({**BASE, **extra}).encode()


def test_parsed_by_kernels() -> None:
    info = parse_kernel_info(_info(**{"kernel-depends": [{"repo-id": "org/relu", "version": 2},
                                                         {"repo-id": "org/act", "revision": "v0.3.1"}],
                                      "kernels-minver": "0.16.0"}), "build/x")
    assert info.build_id == "_relu_plus_cuda_abc1234" and info.kernels_minver == "0.16.0"
    assert info.dependencies == (Dependency("org/relu", version=2), Dependency("org/act", revision="v0.3.1"))
    with pytest.raises(InvalidVariant) as bad:  # refused as kernels refuses it: one line, naming file and field
        parse_kernel_info(_info(**{"kernel-depends": [{"repo_id": "org/relu", "version": 1}]}), "build/x")
    assert str(bad.value) == ("build/x/metadata.json: kernel-depends[0]: unknown field 'repo_id' (expected repo-id, "
                              "version or revision)")


def test_kernels_requirement() -> None:
    assert imports_kernels([b"import torch\nfrom kernels import get_kernel\n"])
    assert imports_kernels([b"import kernels.layer\n"]) and not imports_kernels([b"import kernels_extra\n"])
    assert not imports_kernels([b"# from kernels import x is only a comment here\nimport torch\n"])
    # With dependencies the entry calls kernels: the tested releases' range, raised to a newer kernels-minver.
    assert str(kernels_requirement("0.16.0", has_dependencies=True)) == "kernels<0.20,>=0.17.2"
    assert str(kernels_requirement(None, has_dependencies=True)) == "kernels<0.20,>=0.17.2"
    assert str(kernels_requirement("0.19.0", has_dependencies=True)) == "kernels<0.20,>=0.19.0"
    with pytest.raises(InvalidVariant, match=r"^build/x/metadata.json: kernels-minver 0.21.0 is outside"):
        kernels_requirement("0.21.0", has_dependencies=True, where="build/x/metadata.json")
    assert str(kernels_requirement("0.16.0", has_dependencies=False)) == "kernels>=0.16.0"
    assert str(kernels_requirement(None, has_dependencies=False)) == "kernels"
