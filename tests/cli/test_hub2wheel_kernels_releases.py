"""``python -m tools.hub2wheel`` with each supported kernels release installed (tests/helpers/kernels_releases.py):
the paths that once reached into kernels' internals (python-depends, a signed variant, ``--lock``) convert under
0.19.1, and a kernel-depends wheel pair installed by name works with every release."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from kernelwheel.wheels.wheel_reader import read_wheel
from tests.helpers import kernel_repos
from tests.helpers.hub_fixtures import HubRepos, pip_install_by_name
from tests.helpers.kernels_releases import RELEASES, installed_kernels, toolkit_python
from tests.helpers.repo import REPO_ROOT
from tests.helpers.sigstore_fixtures import SigstoreInstance
from tests.helpers.venvs import fresh_venv

pytest_plugins = ["tests.helpers.sigstore_plugin"]
NEWEST = RELEASES[-1]
TRUST = ["--trust-remote-code"]  # olah serves no organisation overviews (see test_trust)


def _hub2wheel(release: str, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([str(toolkit_python(release)), "-m", "tools.hub2wheel", *argv], capture_output=True,
                          text=True, cwd=REPO_ROOT, env=env, timeout=300)


def test_python_depends_and_a_signed_variant_convert_under_the_newest_release(
        tmp_path: Path, trusted_root: Path, sigstore: SigstoreInstance) -> None:
    assert installed_kernels(toolkit_python(NEWEST)) == NEWEST
    repo = tmp_path / "relu"
    variant = kernel_repos.python_kernel_variant(repo / "build", "torch-cpu", name="relu", init=kernel_repos.RELU_INIT)
    meta = json.loads((variant / "metadata.json").read_text())
    meta["python-depends"] = ["einops", "tvm-ffi"]  # metadata.json is outside its own digest
    (variant / "metadata.json").write_text(json.dumps(meta))
    sigstore.sign_variant(variant)
    done = _hub2wheel(NEWEST, str(repo), "--out", str(tmp_path / "wh"), "--require-signature",
                      "--sigstore-trusted-root", str(trusted_root))
    assert done.returncode == 0, done.stderr
    (wheel_path,) = (tmp_path / "wh").glob("*.whl")
    wheel = read_wheel(wheel_path)
    assert {"einops", "apache-tvm-ffi"} <= set(wheel.metadata["requires_dist"])
    assert "relu/metadata.json.sigstore" in wheel.files


def test_lock_converts_under_the_newest_release(hf_env: Path, hub_repos: HubRepos, tmp_path: Path) -> None:
    sha = hub_repos.commits["v1.0.0"]
    lock = tmp_path / "kernels.lock"
    lock.write_text(json.dumps([{"dependency": {"repo-id": "testorg/img2gray", "version": 1},
                                 "lock": {"commit": sha.upper()}}]))  # kernels reads any case: ours too
    done = _hub2wheel(NEWEST, *TRUST, "--lock", str(lock), "--out", str(tmp_path / "wh"), "--variant", "torch-cpu")
    assert done.returncode == 0, done.stderr
    assert f"locked commit {sha}" in done.stderr
    assert [p.name for p in (tmp_path / "wh").glob("*.whl")] == ["img2gray-1.0.0-py3-none-any.whl"]


RUN_PAIR = ("import os, sys, torch, relu_plus, relu_plus.layers as layers\n"
            "print(relu_plus.relu_plus(torch.tensor([-2.0, 3.0]), 0.5).tolist())\n"
            "print(layers.ReluPlus(1.0)(torch.tensor([-1.0, 1.0])).tolist())\n"
            "print(relu_plus is sys.modules['_relu_plus_abc1234'], 'LOCAL_KERNELS' in os.environ)")


@pytest.fixture(scope="module")
def relu_plus_wheels(hub_repos: HubRepos, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """relu-plus and its kernel-depends relu, converted from olah by this environment's hub2wheel."""
    wheelhouse = tmp_path_factory.mktemp("relu-plus-wheels")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HF_HUB_OFFLINE", "HF_TOKEN")}
    env.update(HF_ENDPOINT=hub_repos.endpoint, HF_HOME=str(wheelhouse.parent / "hf-home"))
    done = subprocess.run([sys.executable, "-m", "tools.hub2wheel", *TRUST, "testorg/relu-plus", "--version", "1",
                           "--out", str(wheelhouse)], capture_output=True, text=True, cwd=REPO_ROOT, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return wheelhouse


@pytest.mark.needs_torch
@pytest.mark.parametrize("release", RELEASES)
def test_a_kernel_depends_pair_installs_and_imports_with_each_release(release: str, relu_plus_wheels: Path,
                                                                     tmp_path: Path) -> None:
    (plus,) = relu_plus_wheels.glob("relu_plus-*.whl")
    assert "kernels<0.20,>=0.17.2" in read_wheel(plus).metadata["requires_dist"]
    # A venv that sees kernels==release first, then this environment's torch (and kernels' own dependencies).
    release_site = next((toolkit_python(release).parent.parent / "lib").glob("python3.*/site-packages"))
    venv = fresh_venv(tmp_path / "venv", share_site_packages_of=release_site)
    pth = next((venv / "lib").glob("python3.*/site-packages")) / "zz-shared-torch.pth"
    pth.write_text(f"{release_site}\n{sysconfig.get_paths()['purelib']}\n")
    assert installed_kernels(venv / "bin" / "python") == release
    installed = pip_install_by_name(venv, relu_plus_wheels, "relu-plus")
    assert installed.returncode == 0, installed.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LOCAL_KERNELS")}
    done = subprocess.run([str(venv / "bin" / "python"), "-c", RUN_PAIR], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    # get_kernel_dep answered (relu from its installed wheel), one module object, the variable restored (unset).
    assert done.stdout.splitlines() == ["[0.5, 3.5]", "[1.0, 2.0]", "True False"]
