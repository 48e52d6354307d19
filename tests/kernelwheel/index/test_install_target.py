"""``tools.cli.install_command`` against what the target and the index say: torch pins behind markers, and a PEP 658
``.metadata`` whose hash matches but which is not the wheel's METADATA. Every one is a plan that follows the
installer's rules or one ``error:`` line. A target whose torch version (or whole answer) is not a version:
test_target_environment.py."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from kernelwheel.index.writer import write_index
from kernelwheel.wheels.naming import WheelName
from kernelwheel.wheels.wheel_contents import WheelContents
from kernelwheel.wheels.wheel_writer import build_metadata, write_wheel
from tests.helpers.repo import REPO_ROOT

PYTHON = sys.executable  # the suite's venv: torch 2.14.1


def _command(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "KERNELWHEEL_"))}
    full_env.update(PIP_CONFIG_FILE=os.devnull, **(env or {}))
    return subprocess.run([sys.executable, "-m", "tools.cli.install_command", *args], capture_output=True, text=True,
                          cwd=REPO_ROOT, env=full_env, timeout=180)  # fmt: skip


def _one_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr and result.stdout == "", result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    return result.stderr[result.stderr.index("error: ") :].strip()


def _wheel(out: Path, *requires: str, version: str = "0.1.0") -> Path:
    name = WheelName("marked", Version(version), "py3", "none", "any")
    metadata = build_metadata(name, requires_dist=[Requirement(r) for r in requires])
    return write_wheel(WheelContents(name, metadata, {"marked/__init__.py": b"X = 1\n"}), out)


# ------------------------------------------------------------------------------------------------------- markers


@pytest.mark.needs_torch  # plans for this interpreter, whose torch decides the wheel
@pytest.mark.parametrize(("marker", "planned"), [("python_version >= '3'", False), ("python_version < '3'", True)])
def test_a_torch_pin_behind_a_marker_is_planned_as_the_target_evaluates_it(
    tmp_path: Path, marker: str, planned: bool
) -> None:
    house = tmp_path / "wheelhouse"
    _wheel(house, f"torch==2.13.*; {marker}")
    write_index(house)
    result = _command("marked", "--index-url", (house / "simple").as_uri() + "/", "--python", PYTHON)
    if planned:  # the pin does not apply to this interpreter: the wheel fits torch 2.14.1
        assert result.returncode == 0, result.stderr
        return
    error = _one_error(result)
    assert "marked-0.1.0-py3-none-any.whl: needs torch==2.13.*, not 2.14.1" in error


# ----------------------------------------------------------------------------------------------- lying .metadata


@pytest.mark.needs_torch  # plans for this interpreter, whose torch decides the wheel
def test_a_metadata_file_whose_hash_matches_but_contradicts_the_wheel_is_refused(tmp_path: Path) -> None:
    house = tmp_path / "wheelhouse"
    wheel = _wheel(house, "torch==2.13.*")
    write_index(house)
    metadata = wheel.with_name(wheel.name + ".metadata")
    good = metadata.read_bytes()
    lie = good.replace(b"torch==2.13.*", b"torch>=2.10")
    metadata.write_bytes(lie)
    page = house / "simple" / "marked" / "index.html"
    old, new = hashlib.sha256(good).hexdigest(), hashlib.sha256(lie).hexdigest()
    page.write_text(page.read_text().replace(old, new))  # a self-consistent page: the hash is the lie's
    error = _one_error(_command("marked", "--index-url", (house / "simple").as_uri() + "/", "--python", PYTHON))
    assert f"{wheel.name}.metadata: differs from the METADATA inside {wheel.name}" in error
    assert "['torch>=2.10'] vs ['torch==2.13.*']" in error
