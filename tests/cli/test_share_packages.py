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


def test_links_the_closure_and_keeps_a_distribution_the_target_has(tmp_path: Path) -> None:
    """``build`` requires packaging and pyproject_hooks; a target that already holds another packaging keeps its own
    code and its own .dist-info (the two are never mixed), and gets pyproject_hooks and build linked."""
    site = tmp_path / "site"
    theirs = site / "packaging-1.0.dist-info"
    theirs.mkdir(parents=True)
    (theirs / "METADATA").write_text("Metadata-Version: 2.1\nName: packaging\nVersion: 1.0\n")
    (theirs / "RECORD").write_text("packaging/__init__.py,,\n")
    (site / "packaging").mkdir()
    (site / "packaging" / "__init__.py").write_text("")

    linked = share_packages.link_closure("build", site)

    names = _names(site)
    assert names["packaging"] == "1.0"  # still the target's own, with no second packaging .dist-info beside it
    assert sum(p.name.startswith("packaging-") for p in site.iterdir()) == 1
    assert not (site / "packaging").is_symlink()
    assert names["build"] == importlib.metadata.version("build")
    assert names["pyproject-hooks"] == importlib.metadata.version("pyproject_hooks")
    assert linked == sum(p.is_symlink() for p in site.iterdir()) >= 4  # two packages, two .dist-info folders


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
