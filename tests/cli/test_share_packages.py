"""tools/cli/share_packages.py: a distribution's closure linked into another site-packages, whole distributions only."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from tools.cli import share_packages


def _names(folder: Path) -> dict[str, str]:
    return {canonicalize_name(d.metadata["Name"]): d.version
            for d in importlib.metadata.distributions(path=[str(folder)])}


def _fake_distribution(site: Path, name: str, version: str) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text(f"{name}/__init__.py,,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")
    (site / name).mkdir()
    (site / name / "__init__.py").write_text("")


def test_links_whole_distributions_keeping_the_same_version_and_replacing_another(tmp_path: Path) -> None:
    """``build`` requires packaging and pyproject_hooks. A target holding this packaging release keeps its own; one
    holding another pyproject_hooks release gets ours whole: never one release's .dist-info over another's code."""
    site = tmp_path / "site"
    _fake_distribution(site, "packaging", importlib.metadata.version("packaging"))
    _fake_distribution(site, "pyproject_hooks", "0.1")

    linked = share_packages.link_closure("build", site)

    names = _names(site)
    assert not (site / "packaging").is_symlink()  # the same release: the target's own, untouched
    assert names["pyproject-hooks"] == importlib.metadata.version("pyproject_hooks")
    assert (site / "pyproject_hooks").is_symlink() and not (site / "pyproject_hooks-0.1.dist-info").exists()
    assert names["build"] == importlib.metadata.version("build")
    for prefix in ("packaging-", "pyproject_hooks-", "build-"):
        assert sum(p.name.startswith(prefix) for p in site.iterdir()) == 1, prefix  # one .dist-info each
    assert linked == sum(p.is_symlink() for p in site.iterdir()) == 4  # two packages, two .dist-info folders


def test_refuses_what_is_not_installed_and_a_folder_that_is_no_venv(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    venv = tmp_path / "venv"
    (venv / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert share_packages.main(["build", "no-such-distribution-xyz", "--into", str(venv)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: no-such-distribution-xyz: expected a distribution installed in ") and err.count("\n") == 1
    assert not any((venv / "lib" / "python3.11" / "site-packages").iterdir())  # checked before anything is linked
    assert share_packages.main(["build", "--into", str(tmp_path)]) == 1
    assert "expected a venv with one lib/python3.*/site-packages" in capsys.readouterr().err
