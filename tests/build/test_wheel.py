"""tools/build/wheel.py: what is refused before anything compiles (the build itself runs in tests/test_installs.py
and every CI job's `make wheel`)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.repo import REPO_ROOT
from tools.build.errors import BuildFailed
from tools.build.wheel import DEFAULT_PLATFORM, check_platform


@pytest.mark.parametrize("platform", [DEFAULT_PLATFORM, "manylinux2014_x86_64", "manylinux_2_34_x86_64"])
def test_auditwheels_platform_tags_are_accepted(platform: str) -> None:
    check_platform(platform)


@pytest.mark.parametrize("platform", ["bogus", "manylinux_2_28_aarch64", "musllinux_1_2_x86_64", "win_amd64"])
def test_other_platform_tags_are_refused_in_one_line(platform: str) -> None:
    with pytest.raises(BuildFailed) as info:
        check_platform(platform)
    assert str(info.value) == (f"--plat {platform!r}: expected a manylinux platform tag auditwheel knows for x86_64, "
                               f"e.g. {DEFAULT_PLATFORM}")


@pytest.mark.parametrize(("argv", "error"), [
    (["--plat", "bogus"], "error: --plat 'bogus': expected a manylinux platform tag auditwheel knows for x86_64"),
    (["--out", "/dev/null/wheelhouse"], "error: --out /dev/null/wheelhouse: /dev/null above it is a file, not a folder"),
])
def test_the_command_refuses_before_compiling(argv: list[str], error: str, tmp_path: Path) -> None:
    """Both used to surface only after the compile: a traceback for --out, auditwheel's usage error for --plat."""
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "tools.cli.build_wheel", "--out", str(tmp_path / "wh"), *argv],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and result.stdout == "", result
    assert result.stderr.startswith(error) and result.stderr.count("\n") == 1, result.stderr
    assert "pip" not in result.stderr and time.monotonic() - started < 30  # nothing was started, let alone built
    assert not (tmp_path / "wh").exists()


def test_variant_wheel_of_a_built_wheel(tmp_path: Path) -> None:
    """`make wheel VARIANT_WHEELS=1`: the variant wheel of each wheel already built, written next to it."""
    from tests.helpers import standin_wheels

    built = standin_wheels.write_standin(tmp_path, torch=None, stable_abi_floor="2.10")  # img2gray-cu130 0.1.0
    noarch = standin_wheels.write_standin(tmp_path / "noarch", torch=None, distribution="img2gray")
    command = [sys.executable, "-m", "tools.cli.build_wheel", "--variant-wheel-of"]
    result = subprocess.run([*command, str(built)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    variant = tmp_path / "img2gray-0.1.0-cp39-abi3-manylinux_2_28_x86_64-cu130.whl"
    assert result.stdout == f"{variant}\n" and variant.is_file()
    refused = subprocess.run([*command, str(noarch)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert "its name ends in no backend (img2gray): a noarch, SDK or dependency build has no variant wheel" in (
        refused.stderr)
    usage = subprocess.run([*command, str(built), "--abi", "stable"], cwd=REPO_ROOT, capture_output=True, text=True,
                           timeout=120)
    assert usage.returncode == 2 and "--variant-wheel-of builds nothing" in usage.stderr
