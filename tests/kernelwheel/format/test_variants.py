"""kernelwheel.format.variants (and the grammars it reads, variant_grammars): parse/str round trip for every family,
precise reasons for bad names."""

from __future__ import annotations

import pytest
from packaging.version import Version

from kernelwheel.format.variant_pieces import Backend, Noarch, Torch, TorchStableAbi, TvmFfi
from kernelwheel.format.variants import Variant
from kernelwheel.io.errors import InvalidVariantName

NAMES = [
    "torch29-cxx11-cu128-x86_64-linux",
    "torch210-cxx11-cu130-x86_64-linux",
    "torch26-cxx98-cu124-aarch64-linux",
    "torch213-cxx11-rocm71-x86_64-linux",
    "torch213-xpu20253-x86_64-linux",
    "torch212-cxx11-cpu-aarch64-linux",
    "torch213-metal-aarch64-darwin",
    "torch210-cu128-x86_64-windows",
    "torch-stable-abi211-cu130-x86_64-linux",
    "tvm-ffi213-cu130-x86_64-linux",
    "torch213-cxx11-cann81-aarch64-linux",
    "torch-cuda",
    "torch-cpu",
    "torch-universal",
]


@pytest.mark.parametrize("name", NAMES)
def test_round_trip(name: str) -> None:
    assert str(Variant.parse(name)) == name


def test_torch210_is_2_10_not_21_0() -> None:
    v = Variant.parse("torch210-cxx11-cu128-x86_64-linux")
    assert v.framework == Torch(Version("2.10"), "cxx11")
    assert v.torch == Version("2.10")
    assert v.backend_tag == "cu128"
    assert v.arch is not None and v.arch.backend == Backend("cuda", Version("12.8"))


def test_families() -> None:
    assert Variant.parse("torch-stable-abi211-cu130-x86_64-linux").framework == TorchStableAbi(Version("2.11"))
    assert Variant.parse("tvm-ffi213-cu130-x86_64-linux").framework == TvmFfi(Version("2.13"))
    assert Variant.parse("torch-cuda") == Variant(Noarch("cuda"))
    assert Variant.parse("torch-universal").backend_tag is None
    assert Variant.parse("torch212-cxx11-rocm71-x86_64-linux").backend_tag == "rocm71"
    assert Variant.parse("torch213-xpu20253-x86_64-linux").arch.backend.version == Version("2025.3")  # type: ignore[union-attr]
    assert Variant.parse("torch212-cxx11-cpu-aarch64-linux").backend_tag == "cpu"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("jax04-cu128-x86_64-linux", "expected torch<XY>"),
        ("torch2-cxx11-cu128-x86_64-linux", "needs a major digit and a minor"),
        ("torch28-cxx17-cu128-x86_64-linux", "neither 'cxx11' nor 'cxx98'"),
        ("torch28-cxx11-cuda128-x86_64-linux", "unknown backend 'cuda128'"),
        ("torch28-cxx11-cu128-riscv64-linux", "unknown CPU 'riscv64'"),
        ("torch28-cxx11-cu128-x86_64-freebsd", "unknown OS 'freebsd'"),
        ("torch28-cxx11-cu128-linux", "3 parts"),
        ("torch-quantum", "unknown noarch backend 'quantum'"),
        ("torch28-cxx11-cu0128-x86_64-linux", "canonical"),
        ("torch-2.14-cuda-13.0-cpython-3.12-abi3t-x86_64-linux", "abi3t needs Python 3.15 or later, not 3.12"),
        ("torch-2.14-cuda-13.0-x86_64-linux", "needs cpython-<X.Y>-abi3"),
        ("torch-2.14-cu130-cpython-3.9-abi3-x86_64-linux", "unknown backend 'cu130': expected cuda-X.Y"),
        ("torch-2.14-cuda-13.00-cpython-3.9-abi3-x86_64-linux", "canonical"),
        ("torch-2.14-cuda-13.0-cpython-3.9-abi4-x86_64-linux", "neither 'abi3' nor 'abi3t'"),
        ("sdk-cuda-12.8", "expected sdk, sdk-<backend>"),
        ("torch214-npu-x86_64-linux", "unknown backend 'npu'"),
    ],
)
def test_rejections_are_precise(name: str, reason: str) -> None:
    with pytest.raises(InvalidVariantName, match=reason) as info:
        Variant.parse(name)
    assert name in str(info.value)


@pytest.mark.parametrize(
    "name",
    [
        "torch２１３-cxx11-cpu-x86_64-linux",  # fullwidth digits (hostile-input review: InvalidVersion traceback)
        "torch2١٣-cxx11-cpu-x86_64-linux",  # Arabic-Indic digits
        "torch213-cxx11-cu１３０-x86_64-linux",  # in the backend
        "torch-stable-abi２１０-cu130-x86_64-linux",
        "torch213-cxx11-cpu-x86_64-linux\n",
        "torch213-cxx11-cpu-x86_64-lin\udcffux",  # a folder name with invalid UTF-8 (surrogateescape)
        "torch-cpü",
    ],
)
def test_non_ascii_or_unprintable_names_are_refused_in_one_line(name: str) -> None:
    with pytest.raises(InvalidVariantName) as info:
        Variant.parse(name)
    message = str(info.value)
    assert "variant names are ASCII" in message and "\n" not in message
    message.encode("utf-8")  # printable: no lone surrogate reaches the console


def test_the_0_19_grammar_reads_as_its_legacy_twin() -> None:
    new = Variant.parse("torch-2.14-cxx11-cuda-13.0-cpython-3.9-abi3-x86_64-linux")
    legacy = Variant.parse("torch214-cxx11-cu130-x86_64-linux")
    assert (new.framework, new.arch, new.python_floor) == (legacy.framework, legacy.arch, legacy.python_floor)
    assert new != legacy and not new.legacy and legacy.legacy and new.backend_tag == "cu130"
    assert Variant.parse("torch214-rocm714-x86_64-linux").backend_tag == "rocm714"  # ROCm 7.14, as kernels 0.19
    assert Variant.parse("torch214-rocm714-x86_64-linux").arch.backend.version == Version("7.14")  # type: ignore[union-attr]
