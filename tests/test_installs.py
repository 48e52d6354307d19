"""Two img2gray builds installed into one folder: the import refuses, naming both and the repair."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kernelwheel.wheels.naming import WheelName
from kernelwheel.wheels.wheel_reader import read_wheel
from kernelwheel.wheels.wheel_writer import rename_wheel, write_wheel
from tests.conftest import stable_wheels


def _pip_target(target: Path, wheel: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--upgrade", "--target", str(target), str(wheel)],
                   check=True, env={"PIP_CONFIG_FILE": "/dev/null", "PATH": "/usr/bin:/bin"})


def _import(target: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import img2gray; print(img2gray.build_info().backend)"],
                          capture_output=True, text=True, env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"})


def test_one_build_imports_and_a_second_backend_in_the_same_folder_is_refused(tmp_path: Path) -> None:
    (wheel,) = stable_wheels("cu130")[:1]
    target = tmp_path / "site"
    _pip_target(target, wheel)
    alone = _import(target)
    assert alone.returncode == 0 and alone.stdout.strip() == "cu130", alone.stderr

    # The same files under the name of another backend's project, as a second `pip install img2gray-cpu` would be.
    contents = read_wheel(wheel)
    other = WheelName("img2gray-cpu", contents.name.version, contents.name.python_tag, contents.name.abi_tag,
                      contents.name.platform_tag)
    second = write_wheel(rename_wheel(contents, other), tmp_path / "other")
    _pip_target(target, second)
    both = _import(target)
    assert both.returncode != 0
    last = both.stderr.strip().splitlines()[-1]
    assert "ImportError: img2gray-cpu and img2gray-cu130 are all installed into" in last
    assert "pip uninstall -y img2gray-cpu img2gray-cu130" in last
