"""Virtual environments for tests that install wheels: helper venvs reused across runs, and fresh ones.

Helper venvs (``.venv-olah``, ``.venv-kernels``, ...) are created here on first use from PyPI and reused across
runs (they are git-ignored); nothing has to be installed by hand.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers.repo import REPO_ROOT


def helper_venv(name: str, *requirements: str) -> Path:
    """``REPO_ROOT/<name>`` with ``requirements`` installed (created once; a marker file records the set). A lock
    beside it makes pytest's workers (``-n 2``) wait for the one that creates it instead of creating it twice."""
    from filelock import FileLock  # here: conftest imports this module in venvs that may lack it

    with FileLock(str(REPO_ROOT / f"{name}.lock")):
        return _helper_venv(REPO_ROOT / name, requirements)


def _helper_venv(venv: Path, requirements: tuple[str, ...]) -> Path:
    marker = venv / ".requirements"
    wanted = "\n".join(requirements)
    if marker.exists() and marker.read_text() == wanted:
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # Without the caller's PYTHONPATH: packages on it would count as installed, and the venv would lack them.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *requirements], check=True, env=env)
    marker.write_text(wanted)
    return venv


def fresh_venv(path: Path, *, share_site_packages_of: Path | None = None) -> Path:
    """A new venv; optionally sees another environment's packages (e.g. its torch) through a ``.pth`` file."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    if share_site_packages_of is not None:
        site = next((path / "lib").glob("python3.*/site-packages"))
        # venv's own (old) setuptools would shadow the shared one that torch requires.
        subprocess.run([str(path / "bin" / "python"), "-m", "pip", "uninstall", "-q", "-y", "setuptools"], check=False)
        (site / "zz-shared-torch.pth").write_text(str(share_site_packages_of) + "\n")
        # The shared environment's editable installs (kernelwheel, from this checkout's tools/) are import hooks that
        # its own .pth files start; Python reads no .pth file of a folder that is merely on sys.path, so the venv
        # starts them itself, after the line above (zz- sorts before zzz-) made their modules importable.
        hooks = [line for pth in sorted(Path(share_site_packages_of).glob("__editable__*.pth"))
                 for line in pth.read_text(encoding="utf-8").splitlines() if line.strip()]
        if hooks:
            (site / "zzz-shared-editables.pth").write_text("\n".join(hooks) + "\n", encoding="utf-8")
    return path


def package_farm(path: Path, root: str) -> Path:
    """A directory of symlinks to ``root`` (e.g. torch) and its dependencies only: no other project package."""
    from tools.cli.share_packages import link_closure  # here: conftest imports this module in venvs without rich

    path.mkdir(parents=True)
    link_closure(root, path)
    return path
