"""kernelwheel.wheels.wheel_plan: the wheel a checked variant becomes; here, where its version comes from."""

from __future__ import annotations

from pathlib import Path

from packaging.version import Version

from kernelwheel.format.signatures import SignatureOptions
from kernelwheel.format.variants import Variant
from kernelwheel.hub.sources import Source, local_source
from kernelwheel.wheels.checked_variant import check_variant_dir
from kernelwheel.wheels.wheel_plan import plan_wheel

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
