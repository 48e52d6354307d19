"""kernelwheel.wheels.wheel_plan: the wheel a checked variant becomes; here, where its version comes from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from kernelwheel.format.signatures import SignatureOptions
from kernelwheel.format.variants import Variant
from kernelwheel.hub.sources import Source, local_source
from kernelwheel.io.errors import InvalidVariant
from kernelwheel.wheels.checked_variant import check_variant_dir
from kernelwheel.wheels.gpu_targets import GpuTargets, from_description
from kernelwheel.wheels.wheel_plan import plan_wheel
from tests.helpers import fatbins

CPU_VARIANT = "torch213-cxx11-cpu-x86_64-linux"


def test_plan_wheel_version_comes_from_the_option_then_the_ref_then_metadata(flat_repo: Path) -> None:
    variant = Variant.parse(CPU_VARIANT)
    source = local_source(flat_repo)
    folder = source.build_dir / CPU_VARIANT
    checked = check_variant_dir(variant, folder, source, SignatureOptions())
    assert plan_wheel(checked, source).name.version == Version("1+torch2.13")  # metadata.json
    tagged = Source(source.build_dir, source.label, source.kernel_name, version=Version("1.4.0"))
    assert plan_wheel(checked, tagged).name.version == Version("1.4.0+torch2.13")
    forced = Version("2.0")
    assert plan_wheel(checked, tagged, kernel_version=forced).name.version == Version("2.0+torch2.13")


def test_gpu_code_of_the_binaries_is_recorded(tmp_path: Path, so_cache: Path,
                                              tmp_path_factory: pytest.TempPathFactory) -> None:
    """A CUDA variant whose library nvcc built for SASS 8.0, 9.0 and PTX 9.0, declaring 8.0, 9.0, 10.0: one warning
    line, ``gpu_targets.json`` in .dist-info, the description's line, and the entry checks the binaries' targets."""
    objects = fatbins.built(tmp_path_factory)
    repo = fatbins.cuda_variant_repo(tmp_path, so_cache, objects["sass80_90_ptx90"], ["8.0", "9.0", "10.0"])
    source = local_source(repo)
    warnings: list[str] = []
    variant = Variant.parse(fatbins.CUDA_VARIANT)
    checked = check_variant_dir(variant, source.build_dir / fatbins.CUDA_VARIANT, source,
                                SignatureOptions(warn=warnings.append))
    (warning,) = [w for w in warnings if "architectures" in w]
    assert warning.startswith(f"build/{fatbins.CUDA_VARIANT}: metadata.json declares architectures 8.0, 9.0, 10.0, "
                              "the binaries hold CUDA SASS 8.0, 9.0; CUDA PTX 9.0; ROCm none")
    contents = plan_wheel(checked, source)
    recorded = json.loads(contents.files[f"{contents.name.dist_info}/gpu_targets.json"])
    assert recorded == {"cuda_sass": ["8.0", "9.0"], "cuda_ptx": ["9.0"], "rocm": []}
    assert from_description(str(contents.metadata.get("description"))) == GpuTargets.of(["8.0", "9.0"], ["9.0"])
    entry = contents.files["gpukernel/__init__.py"]
    assert isinstance(entry, bytes) and "archs=['8.0', '9.0', '9.0+PTX']" in entry.decode()


def test_a_damaged_fat_binary_refuses_the_variant(tmp_path: Path, so_cache: Path,
                                                  tmp_path_factory: pytest.TempPathFactory) -> None:
    from elftools.elf.elffile import ELFFile

    good = fatbins.built(tmp_path_factory)["sass80_90_ptx90"]
    with good.open("rb") as fh:
        offset = ELFFile(fh).get_section_by_name(".nv_fatbin")["sh_offset"]
    data = bytearray(good.read_bytes())
    data[offset:offset + 4] = b"\0\0\0\1"  # no longer the container's magic
    damaged = tmp_path / "damaged.so"
    damaged.write_bytes(bytes(data))
    repo = fatbins.cuda_variant_repo(tmp_path, so_cache, damaged, ["8.0"])
    source = local_source(repo)
    with pytest.raises(InvalidVariant, match=r"^build/\S+/_gpu\.so \(\.nv_fatbin\): unreadable GPU code at offset 0: "
                                            r"magic 0x01000000, expected 0xba55ed50$"):
        check_variant_dir(Variant.parse(fatbins.CUDA_VARIANT), source.build_dir / fatbins.CUDA_VARIANT, source,
                          SignatureOptions())
