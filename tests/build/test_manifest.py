"""tools/build/manifest.py: build.toml is the single source of name, version and CUDA capabilities."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.repo import REPO_ROOT
from tools.build.errors import InvalidManifest
from tools.build.manifest import BuildManifest, main


def test_project_manifest() -> None:
    manifest = BuildManifest.load(REPO_ROOT / "build.toml")
    assert manifest.name == "img2gray" and manifest.python_package == "img2gray"
    assert manifest.cuda_capabilities[-1] == "12.0+PTX" and "9.0" in manifest.cuda_capabilities


def test_cmake_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(REPO_ROOT / "build.toml")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "NAME=img2gray" and lines[2].startswith("CUDA_CAPABILITIES=7.5;8.0;")


def test_integer_major_version_is_refused_with_expected_and_given(tmp_path: Path) -> None:
    (tmp_path / "build.toml").write_text('[general]\nname = "k"\nversion = 1\n')
    with pytest.raises(InvalidManifest, match=r"needs string fields .* got name='k', version=1"):
        BuildManifest.load(tmp_path / "build.toml")
