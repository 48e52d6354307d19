"""kernelwheel.wheels.dependency_tree (through ``python -m tools.hub2wheel``): a kernel with ``kernel-depends`` is
converted with its dependencies from the same Hub (olah), and the installed pair works by name, as kernels loads it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelwheel.cli.hub2wheel import main
from kernelwheel.wheels.wheel_reader import read_wheel
from tests.helpers.hub_fixtures import HubRepos, pip_install_by_name
from tests.helpers.venvs import fresh_venv, package_farm

TRUST = ["--trust-remote-code"]  # olah serves no organisation overviews (see test_trust)
# The entry package stands for the build: one module object for the package and for each submodule.
RUN_PAIR = ("import sys, torch, relu_plus, relu_plus.layers as layers\n"
            "print(relu_plus.relu_plus(torch.tensor([-2.0, 3.0]), 0.5).tolist())\n"
            "print(layers.ReluPlus(1.0)(torch.tensor([-1.0, 1.0])).tolist())\n"
            "print(relu_plus is sys.modules['_relu_plus_abc1234'], layers is sys.modules['_relu_plus_abc1234.layers'])")


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, [Path(line).name for line in out.splitlines() if line], err


@pytest.mark.needs_torch
def test_dependency_converted_and_required(hf_env: Path, hub_repos: HubRepos, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    wheelhouse = tmp_path / "wh"
    rc, names, err = _run([*TRUST, "testorg/relu-plus", "--version", "1", "--out", str(wheelhouse)], capsys)
    assert rc == 0, err
    assert "needs testorg/relu (version 1): converting it first" in err
    plus = next(n for n in names if n.startswith("relu_plus-"))
    relu = next(n for n in names if n.startswith("relu-"))
    assert len(names) == 2 and relu.endswith("-py3-none-any.whl")
    wheel = read_wheel(wheelhouse / plus)
    assert wheel.metadata["requires_dist"] == ["torch", "relu<2,>=1", "kernels<0.20,>=0.17.2"]  # tested
    build = "_relu_plus_abc1234"  # the build's unique id, as kernels imports it
    assert f"{build}/__init__.py" in wheel.files and f"{build}/metadata.json" in wheel.files
    entry = wheel.files["relu_plus/__init__.py"].decode()
    assert "kernels.get_local_kernel(" in entry and "dependencies={'testorg/relu': 'relu'}" in entry

    # Installed by name from --find-links into a fresh venv that has torch and kernels, the pair runs.
    farm = package_farm(tmp_path / "farm", "kernels")
    for dist in ("torch",):
        for path in package_farm(tmp_path / f"farm-{dist}", dist).iterdir():
            if not (farm / path.name).exists():
                (farm / path.name).symlink_to(os.path.realpath(path))
    venv = fresh_venv(tmp_path / "venv", share_site_packages_of=farm)
    installed = pip_install_by_name(venv, wheelhouse, "relu-plus")
    assert installed.returncode == 0, installed.stderr[-2000:]
    assert "Successfully installed relu-" in installed.stdout and "relu-plus-" in installed.stdout
    done = subprocess.run([str(venv / "bin" / "python"), "-c", RUN_PAIR], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["[0.5, 3.5]", "[1.0, 2.0]", "True True"]

    # kernels 0.17.2 itself, on the same two builds (LOCAL_KERNELS: olah serves no kernel repo type), agrees.
    mirrors = hub_repos.mirrors / "models" / "testorg"
    env = {**os.environ, "LOCAL_KERNELS": f"testorg/relu-plus={mirrors / 'relu-plus'}:testorg/relu={mirrors / 'relu'}"}
    by_kernels = subprocess.run(
        [sys.executable, "-c", "import torch; from kernels import get_kernel; k = get_kernel('testorg/relu-plus', "
         "version=1); print(k.relu_plus(torch.tensor([-2.0, 3.0]), 0.5).tolist())"],
        capture_output=True, text=True, env=env)
    assert by_kernels.returncode == 0, by_kernels.stderr[-2000:]
    assert by_kernels.stdout.splitlines()[-1] == "[0.5, 3.5]"


def test_cycle_and_missing_dependency(hf_env: Path, hub_repos: HubRepos, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    rc, names, err = _run([*TRUST, "testorg/cyc-a", "--version", "1", "--out", str(tmp_path / "a")], capsys)
    assert rc == 1 and not names
    assert "cyclic kernel-depends (testorg/cyc-a → testorg/cyc-b → testorg/cyc-a)" in err
    assert not (tmp_path / "a").exists() or not list((tmp_path / "a").iterdir())
    rc, names, err = _run([*TRUST, "testorg/needs-missing", "--version", "1", "--out", str(tmp_path / "m")], capsys)
    assert rc == 1 and not names
    assert "kernel-depends testorg/nope (version 1): testorg/nope: no such kernel or model repository" in err
