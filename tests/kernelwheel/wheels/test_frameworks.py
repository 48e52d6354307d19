"""Adding a framework is one class: a made-up framework, registered here and nowhere else, parses in both name
grammars, is selected, named, planned and converted like the real ones (``format/frameworks``)."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from packaging.requirements import Requirement
from packaging.version import Version
from rich.console import Console

from kernelwheel.format.frameworks import FRAMEWORKS, VersionedFramework, dotted_str, register
from kernelwheel.format.variant_pieces import Arch, Backend, Python
from kernelwheel.format.variants import Variant
from kernelwheel.hub.sources import local_source
from kernelwheel.wheels.convert import Options, convert, plan_variant
from kernelwheel.wheels.naming import framework_requirements, wheel_name_for
from kernelwheel.wheels.selection import select_variants
from tests.helpers import kernel_repos

LEGACY = "jax05-cu130-x86_64-linux"
NEW = "jax-0.5-cuda-13.0-cpython-3.9-abi3-x86_64-linux"
CPU = "jax05-cpu-x86_64-linux"


@dataclass(frozen=True)
class Jax(VersionedFramework):
    """``jax<M><m>``: a made-up framework with a project of its own, ``<kernel>-jax-<backend>``, labelled
    ``+jaxX.Y``, needing ``jax==X.Y.*``."""

    PREFIX: ClassVar[str] = "jax"
    WHAT: ClassVar[str] = "jax"

    @property
    def project_suffix(self) -> str:
        return "jax"

    @property
    def version_label(self) -> tuple[str, Version]:
        return "jax", self.version

    def requirement(self) -> Requirement:
        return Requirement(f"jax=={dotted_str(self.version)}.*")


@pytest.fixture
def jax() -> Iterator[None]:
    register(Jax)
    try:
        yield
    finally:
        FRAMEWORKS.remove(Jax)


@pytest.mark.usefixtures("jax")
def test_a_registered_framework_parses_in_both_grammars_and_twins_as_the_others() -> None:
    legacy, new = Variant.parse(LEGACY), Variant.parse(NEW)
    assert legacy == Variant(Jax(Version("0.5")), Arch(Backend("cuda", Version("13.0")), "x86_64", "linux"))
    assert (str(legacy), str(new)) == (LEGACY, NEW)
    assert new.framework == legacy.framework and new.python == Python() and legacy.torch is None
    selection = select_variants([NEW, LEGACY])
    assert [str(v) for v in selection.accepted] == [LEGACY]
    (rejected,) = selection.rejected
    assert rejected.name == NEW and rejected.reason.startswith(f"same wheel as {LEGACY} (the same build")


@pytest.mark.usefixtures("jax")
def test_a_registered_framework_names_its_wheel_and_requirement() -> None:
    variant = Variant.parse(LEGACY)
    name = wheel_name_for(variant, "img2gray", Version("0.1.0"), python_tag="cp39", abi_tag="abi3",
                          platform_tag="manylinux_2_17_x86_64")
    assert (name.distribution, str(name.version)) == ("img2gray-jax-cu130", "0.1.0+jax0.5")
    assert [str(r) for r in framework_requirements(variant)] == ["jax==0.5.*"]


def test_a_framework_not_registered_is_no_variant() -> None:
    assert select_variants([CPU]).rejected[0].invalid


@pytest.mark.usefixtures("jax")
def test_a_registered_framework_converts(tmp_path: Path, so_cache: Path) -> None:
    kernel_repos.flat_variant(tmp_path / "repo" / "build", CPU, so_cache)
    source = local_source(tmp_path / "repo")
    options = Options(out_dir=tmp_path / "out", kernel_version=Version("0.1.0"))
    planned = plan_variant(Variant.parse(CPU), source, options)
    assert [str(r) for r in planned.contents.metadata["requires_dist"]] == ["jax==0.5.*"]
    report = convert(source, options, Console(file=None, quiet=True))
    ((variant, wheel),) = report.converted
    assert variant == CPU and wheel.name == planned.contents.name.filename
    assert wheel.name.startswith("img2gray_jax_cpu-0.1.0+jax0.5-cp39-abi3-manylinux_")
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read("img2gray_jax_cpu-0.1.0+jax0.5.dist-info/METADATA").decode()
    assert "Requires-Dist: jax==0.5.*" in metadata.splitlines()
