"""The kernelwheel distribution (tools/pyproject.toml) as a user gets it: its wheel built as the release workflow
builds it (``python -m build --wheel tools/``), installed into a fresh venv without torch with its dependencies
resolved by pip, and its console scripts run from outside the checkout, down to a real conversion of a local kernel
repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.repo import REPO_ROOT

pytestmark = pytest.mark.slow


def _env() -> dict[str, str]:
    # Nothing of the checkout or of the test venv leaks in: no PYTHONPATH, and commands run outside REPO_ROOT.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["HF_HUB_OFFLINE"] = "1"
    return env


def _run(argv: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The ``bin/`` folder of a fresh venv with the kernelwheel wheel installed (its dependencies from the indexes)."""
    root = tmp_path_factory.mktemp("kernelwheel-dist")
    # Built from a copy of what the sdist would hold: setuptools writes its egg-info and scratch folder into the
    # source tree, which `make test` may be installing editable into .venv at the same moment.
    source = root / "tools"
    shutil.copytree(REPO_ROOT / "tools" / "kernelwheel", source / "kernelwheel",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(REPO_ROOT / "tools" / name, source / name)
    built = _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(root / "dist"), str(source)],
                 cwd=root, timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = (root / "dist").glob("kernelwheel-*-py3-none-any.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=_env())
    install = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], cwd=root, timeout=900)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    yield venv / "bin"


def test_the_wheel_holds_the_package_its_data_and_no_checkout_code(installed: Path, tmp_path: Path) -> None:
    code = ("import importlib.metadata as m, kernelwheel, kernelwheel.format.python_depends as p, "
            "kernelwheel.index.torch_minors as t; p.dependency_data(); t.released_torch_minors(); "
            "print(kernelwheel.__file__); "
            "print(' '.join(sorted({f.parts[0] for f in m.files('kernelwheel') if f.parts[0] != '..'})))")
    result = _run([str(installed / "python"), "-c", code], cwd=tmp_path)
    assert result.returncode == 0, result.stderr  # python_depends.json and torch_minors.json, package data, were read
    where, tops = result.stdout.splitlines()
    assert Path(where).is_relative_to(installed.parent)
    assert tops.split() == ["kernelwheel", "kernelwheel-0.1.0.dist-info"]  # not tools, cli or build


def test_torch_is_not_installed(installed: Path, tmp_path: Path) -> None:
    result = _run([str(installed / "python"), "-c", "import torch"], cwd=tmp_path)
    assert result.returncode == 1 and "No module named 'torch'" in result.stderr


def test_console_scripts_answer_help(installed: Path, tmp_path: Path) -> None:
    hub2wheel = _run([str(installed / "hub2wheel"), "--help"], cwd=tmp_path)
    assert hub2wheel.returncode == 0 and hub2wheel.stdout.startswith("usage: hub2wheel "), hub2wheel.stderr
    listed = _run([str(installed / "kernelwheel"), "--help"], cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    for command in ("convert", "index", "install-command", "upload", "verify", "publish"):
        assert f"\n  {command} " in listed.stdout
    index = _run([str(installed / "kernelwheel"), "index", "--help"], cwd=tmp_path)
    assert index.returncode == 0 and index.stdout.startswith("usage: kernelwheel index "), index.stderr
    unknown = _run([str(installed / "kernelwheel"), "nope"], cwd=tmp_path)
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1 and unknown.stdout == ""


def test_hub2wheel_converts_a_local_repository(installed: Path, flat_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "wheelhouse"
    result = _run([str(installed / "hub2wheel"), str(flat_repo), "--out", str(out), "--variant", "*-cpu-*"],
                  cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    written = [Path(line) for line in result.stdout.splitlines() if line]
    assert [p.name for p in written] == ["img2gray_cpu-1+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl"]
    assert all(p.is_file() and p.parent == out for p in written)
    assert sorted(p.name for p in out.iterdir()) == [p.name for p in written]
