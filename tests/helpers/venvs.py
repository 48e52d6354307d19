"""Virtual environments for tests that install wheels: helper venvs reused across runs, and fresh ones.

Helper venvs (``.venv-olah``, ``.venv-kernels``, ...) are created here on first use from PyPI and reused across
runs (they are git-ignored); nothing has to be installed by hand.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.helpers.repo import REPO_ROOT


def helper_venv(name: str, *requirements: str) -> Path:
    """``REPO_ROOT/<name>`` with ``requirements`` installed (created once; a marker file records the set)."""
    venv = REPO_ROOT / name
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


def requirement_closure(root: str) -> list[importlib.metadata.Distribution]:
    """``root`` and every distribution it needs (markers evaluated), from the running environment."""
    seen: dict[str, importlib.metadata.Distribution] = {}
    done: set[tuple[str, str]] = set()
    todo: list[tuple[str, str]] = [(root, "")]
    while todo:
        raw_name, extra = todo.pop()
        name = canonicalize_name(raw_name)
        if (name, extra) in done:
            continue
        done.add((name, extra))
        try:
            dist = seen.get(name) or importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        seen[name] = dist
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": extra}):
                todo.extend((req.name, e) for e in ("", *req.extras))
    return list(seen.values())


def package_farm(path: Path, root: str) -> Path:
    """A directory of symlinks to ``root`` (e.g. torch) and its dependencies only: no other project package."""
    path.mkdir(parents=True)
    for dist in requirement_closure(root):
        base = Path(str(dist.locate_file("")))
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            if not (path / top).exists() and (base / top).exists() and top != "__pycache__":
                (path / top).symlink_to(base / top)
    return path
