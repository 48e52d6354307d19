"""kernelwheel.wheels.convert through the library (not the command): convert() reports every variant, plan_variant()
(the steps convert runs for each variant) checks one and writes nothing, a bad variant never stops the others."""

from __future__ import annotations

import io
import json
import shutil
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from packaging.version import Version
from rich.console import Console

from kernelwheel.format.variants import Variant
from kernelwheel.hub.sources import Source, local_source
from kernelwheel.io.errors import HubError, ToolError
from kernelwheel.wheels.convert import Options, convert, plan_variant
from kernelwheel.wheels.selection import VariantFilter
from tests.helpers import kernel_repos
from tests.kernelwheel.format.test_variant_folder import METADATA

CPU_VARIANT = "torch213-cxx11-cpu-x86_64-linux"


def _console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=False, highlight=False, soft_wrap=True), buffer


def test_convert_reports_every_variant(flat_repo: Path, tmp_path: Path) -> None:
    console, buffer = _console()
    report = convert(local_source(flat_repo), Options(out_dir=tmp_path / "out"), console)
    assert {path.name for _, path in report.converted} == kernel_repos.FLAT_WHEELS
    assert all(path.parent == tmp_path / "out" and path.is_file() for _, path in report.converted)
    skipped = dict(report.skipped)
    every = {variant for variant, _ in report.converted} | set(skipped)
    assert every == set(kernel_repos.FLAT_VARIANTS) and len(report.converted) + len(skipped) == len(every)
    assert "OS 'darwin'" in skipped["torch213-metal-aarch64-darwin"]
    assert "the same build as torch-cuda" in skipped["torch-cpu"]  # same files: torch-cuda gives the one wheel
    # progress goes to the console it was given (plain: not a terminal), one line per wheel
    lines = buffer.getvalue().splitlines()
    assert f"✓ {CPU_VARIANT} → img2gray_cpu-1+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl" in lines
    assert len(lines) == len(report.converted)


def test_convert_with_a_variant_filter(flat_repo: Path, tmp_path: Path) -> None:
    options = Options(out_dir=tmp_path, variants=VariantFilter(patterns=("*-cpu-*",)))
    report = convert(local_source(flat_repo), options, _console()[0])
    assert [variant for variant, _ in report.converted] == [CPU_VARIANT]
    assert [p.name for p in tmp_path.iterdir()] == ["img2gray_cpu-1+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl"]


def test_convert_without_build_dir_reports_it(tmp_path: Path) -> None:
    report = convert(local_source(tmp_path), Options(out_dir=tmp_path / "out"), _console()[0])
    assert report.converted == [] and report.skipped == [("build/", f"{tmp_path} has no build/ directory")]
    assert not (tmp_path / "out").exists()


def test_plan_variant_writes_nothing(flat_repo: Path, tmp_path: Path) -> None:
    source = local_source(flat_repo)
    options = Options(out_dir=tmp_path / "out", kernel_version=Version("0.3.0"))
    contents = plan_variant(Variant.parse(CPU_VARIANT), source, options).contents
    assert contents.name.filename == "img2gray_cpu-0.3.0+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl"
    assert sorted(contents.files) == ["img2gray/__init__.py", "img2gray/_img2gray_cpu_abc1234.abi3.so",
                                      "img2gray/_ops.py", "img2gray/metadata.json",
                                      "img2gray_cpu-0.3.0+torch2.13.dist-info/gpu_targets.json"]
    # a CPU build's binaries hold no GPU code, and the wheel says so (wheels/gpu_targets)
    assert json.loads(contents.files["img2gray_cpu-0.3.0+torch2.13.dist-info/gpu_targets.json"]) == \
        {"cuda_sass": [], "cuda_ptx": [], "rocm": []}
    # files are streamed from the variant when the wheel is written, not read into memory here
    assert contents.files["img2gray/_ops.py"] == source.build_dir / CPU_VARIANT / "_ops.py"
    assert not contents.root_is_purelib
    assert [str(r) for r in contents.metadata["requires_dist"]] == ["torch==2.13.*"]
    assert contents.metadata["license"] == "Apache-2.0"
    assert not (tmp_path / "out").exists()


def test_one_bad_variant_does_not_stop_the_others(flat_repo: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(flat_repo / "build" / CPU_VARIANT, repo / "build" / CPU_VARIANT)
    shutil.copytree(flat_repo / "build" / "torch-cpu", repo / "build" / "torch-cpu")
    (repo / "build" / CPU_VARIANT / "_ops.py").write_text("import os  # tampered\n")
    (repo / "build" / "torch212-cxx11-cpu-x86_64-linux").symlink_to(repo / "build" / "torch-cpu")
    report = convert(local_source(repo), Options(out_dir=tmp_path / "out"), _console()[0])
    assert [variant for variant, _ in report.converted] == ["torch-cpu"]
    skipped = dict(report.skipped)
    assert "_ops.py does not match its sha256 digest" in skipped[CPU_VARIANT]
    assert "the variant directory itself is a symlink" in skipped["torch212-cxx11-cpu-x86_64-linux"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["img2gray-1-py3-none-any.whl"]


def _wheel_facts(folder: Path) -> dict[str, tuple[bytes, int, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_ino, p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def test_wheels_are_byte_identical_whatever_the_jobs_and_a_rerun_rewrites_nothing(flat_repo: Path,
                                                                                    tmp_path: Path) -> None:
    source = local_source(flat_repo)
    one = convert(source, Options(out_dir=tmp_path / "one", jobs=1), _console()[0])
    four = convert(source, Options(out_dir=tmp_path / "four", jobs=4), _console()[0])
    assert one.converted and [v for v, _ in one.converted] == [v for v, _ in four.converted]  # same order too
    assert one.skipped == four.skipped and one.unchanged == four.unchanged == []
    first = _wheel_facts(tmp_path / "one")
    assert {n: data for n, (data, _, _) in first.items()} == {n: d for n, (d, _, _) in _wheel_facts(tmp_path / "four").items()}
    console, buffer = _console()
    again = convert(source, Options(out_dir=tmp_path / "one", jobs=2), console)
    assert again.converted == one.converted
    assert sorted(again.unchanged) == sorted(v for v, _ in one.converted)
    assert _wheel_facts(tmp_path / "one") == first  # same bytes, same inodes, same mtimes: nothing rewritten
    assert all(line.endswith("(up to date)") for line in buffer.getvalue().splitlines())


def test_a_changed_variant_is_rewritten_and_only_that_one(flat_repo: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(flat_repo, repo, symlinks=True)
    options = Options(out_dir=tmp_path / "out", variants=VariantFilter(patterns=("*-cpu-*", "*-cu130-*")))
    first = convert(local_source(repo), options, _console()[0])
    before = _wheel_facts(tmp_path / "out")
    init = repo / "build" / CPU_VARIANT / "__init__.py"
    init.write_text(init.read_text() + "# changed\n")
    meta_path = repo / "build" / CPU_VARIANT / "metadata.json"
    meta = json.loads(meta_path.read_text())
    meta_path.unlink()
    meta["digest"] = kernel_repos.kernel_builder_digest(repo / "build" / CPU_VARIANT)
    meta_path.write_text(json.dumps(meta, indent=2))
    again = convert(local_source(repo), options, _console()[0])
    assert [v for v, _ in again.converted] == [v for v, _ in first.converted]
    assert CPU_VARIANT not in again.unchanged and len(again.unchanged) == len(first.converted) - 1
    after = _wheel_facts(tmp_path / "out")
    changed = {name for name in after if after[name] != before[name]}
    assert changed == {"img2gray_cpu-1+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl"}


@settings(max_examples=100, deadline=5000, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(document=METADATA)
def test_plan_variant_with_fuzzed_metadata_converts_or_refuses_in_one_line(flat_repo: Path, tmp_path: Path,
                                                                           document: dict[str, object]) -> None:
    """Every field convert reads (name, version, license, python-depends, backend, digest, provenance, ...) with
    values of every JSON type: a wheel, or one ToolError line; never a TypeError/AttributeError."""
    folder = tmp_path / "build" / CPU_VARIANT
    if not folder.exists():
        shutil.copytree(flat_repo / "build" / CPU_VARIANT, folder)
    (folder / "metadata.json").write_text(json.dumps(document))  # rewritten by every example
    source = Source(tmp_path / "build", "fuzz", "img2gray")
    try:
        contents = plan_variant(Variant.parse(CPU_VARIANT), source, Options(kernel_version=Version("1"))).contents
    except ToolError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 600, str(exc)
        return
    assert contents.name.filename.endswith(".whl")


def test_an_out_folder_that_cannot_be_written_skips_with_one_line(flat_repo: Path, tmp_path: Path) -> None:
    not_a_folder = tmp_path / "wheelhouse"
    not_a_folder.write_text("a file where --out should be a folder\n")
    options = Options(out_dir=not_a_folder, variants=VariantFilter(patterns=("*-cpu-*",)))
    report = convert(local_source(flat_repo), options, _console()[0])
    assert report.converted == []
    reason = dict(report.skipped)[CPU_VARIANT]
    assert reason.startswith("img2gray_cpu-1+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl: cannot be written to ")
    assert "\n" not in reason and not_a_folder.read_text().startswith("a file")


def test_a_different_build_of_the_same_name_is_never_replaced_silently(tmp_path: Path, so_cache: Path) -> None:
    repo = tmp_path / "img2gray"
    vdir = kernel_repos.flat_variant(repo / "build", "torch-cpu", so_cache)
    out = tmp_path / "out"
    convert(local_source(repo), Options(out_dir=out))
    (first,) = out.glob("*.whl")
    old = first.read_bytes()
    (vdir / "__init__.py").write_text('"""rebuilt, same version"""\n')
    meta = json.loads((vdir / "metadata.json").read_text())
    meta["digest"] = kernel_repos.kernel_builder_digest(vdir)
    (vdir / "metadata.json").write_text(json.dumps(meta))
    console, buffer = _console()
    report = convert(local_source(repo), Options(out_dir=out), console)
    assert [p for _, p in report.converted] == [first] and first.read_bytes() != old
    assert f"warning: {first} held a different build with the same name and version; replaced" in buffer.getvalue()
    console, buffer = _console()
    convert(local_source(repo), Options(out_dir=out), console)  # the same build again: left alone, no warning
    assert "warning" not in buffer.getvalue()


class _Arriving:
    """A build/ tree whose variants arrive one by one (as background_fetch delivers them), one of them never."""

    def __init__(self, build_dir: Path, failing: str) -> None:
        self.variants = tuple(sorted(p.name for p in build_dir.iterdir()))
        self._failing = failing
        self.waited: list[str] = []
        self.closed = 0

    def wait_metadata(self) -> None:
        pass

    def wait(self, variant: str) -> None:
        self.waited.append(variant)
        if variant == self._failing:
            raise HubError(f"testorg/img2gray@abc: build/{variant}/metadata.json: download failed: 503")

    def close(self) -> None:
        self.closed += 1

    def cancel(self) -> None:
        pass


def test_arriving_variants_convert_each_when_complete_and_a_failed_one_is_reported(flat_repo: Path,
                                                                                   tmp_path: Path) -> None:
    source = local_source(flat_repo)
    arriving = _Arriving(source.build_dir, failing=CPU_VARIANT)
    report = convert(replace(source, arrivals=arriving), Options(out_dir=tmp_path / "out", jobs=2), _console()[0])
    expected = convert(source, Options(out_dir=tmp_path / "whole"), _console()[0])
    # the same wheels as from the whole tree, less the variant that did not come, which fails with the fetch's reason
    assert sorted(p.name for _, p in report.converted) == \
        sorted(p.name for v, p in expected.converted if v != CPU_VARIANT)
    assert report.failed == [CPU_VARIANT]
    assert "download failed: 503" in dict(report.skipped)[CPU_VARIANT]
    assert set(arriving.waited) >= {v for v, _ in expected.converted} and arriving.closed == 1
