"""Every command's path arguments, given a name the file system cannot even look up (over NAME_MAX: ENAMETOOLONG):
one line saying what was expected, never an OSError traceback from a ``Path.is_dir()`` on the way in."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.helpers.repo import REPO_ROOT

TOO_LONG = "/tmp/" + "x" * 5000  # one component of 5000 bytes
PHOTO = str(REPO_ROOT / "samples" / "chelsea.png")

CASES = {
    "hub2wheel SOURCE": (["tools.hub2wheel", TOO_LONG], 1, f"error: {TOO_LONG}: no such directory"),
    "index WHEELHOUSE": (["tools.cli.index", TOO_LONG], 1, f"error: {TOO_LONG} is not a folder"),
    "verify_wheel TARGET": (["tools.cli.verify_wheel", TOO_LONG], 1, f"error: {TOO_LONG!r} is neither a .whl file"),
    "publish --build-dir": (["tools.cli.publish", "org/x", "--version", "1.0.0", "--dry-run", "--git-remote", "/tmp",
                             "--build-dir", TOO_LONG], 1, f"error: {TOO_LONG}: no such folder"),
    "publish --git-remote": (["tools.cli.publish", "org/x", "--version", "1.0.0", "--dry-run", "--build-dir",
                              "/nonexistent-build", "--git-remote", TOO_LONG], 1,  # not a path: taken as a URL
                             "error: /nonexistent-build: no such folder"),
    "img2gray IMAGE": (["img2gray", TOO_LONG + ".png", "/tmp/gray.png"], 2,
                       f"python -m img2gray: error: cannot read {TOO_LONG}.png: no such file"),
    "img2gray OUTPUT": (["img2gray", PHOTO, TOO_LONG + ".png"], 2,
                        f"python -m img2gray: error: cannot write {TOO_LONG}.png: the file name is over 245 bytes"),
}


def _cases(cases: Mapping[str, object]) -> list[object]:
    """The case names; the op's own command (``python -m img2gray``) needs the compiled op."""
    return [pytest.param(case, marks=pytest.mark.needs_img2gray) if case.startswith("img2gray") else case
            for case in sorted(cases)]


EMPTY = {  # Path("") is ".", the current folder: `index ''` used to index it
    "hub2wheel --out": ["tools.hub2wheel", "org/x", "--out", ""],
    "index WHEELHOUSE": ["tools.cli.index", ""],
    "upload WHEELS": ["tools.cli.upload", "--check-only", ""],
    "publish --build-dir": ["tools.cli.publish", "org/x", "--version", "1.0.0", "--dry-run", "--build-dir", ""],
    "build_wheel --out": ["tools.cli.build_wheel", "--out", ""],
    "build_variants --out": ["tools.cli.build_variants", "--out", ""],
    "verify_wheel --sigstore-trusted-root": ["tools.cli.verify_wheel", "x.whl", "--sigstore-trusted-root", ""],
    "img2gray OUTPUT": ["img2gray", PHOTO, ""],
}


@pytest.mark.parametrize("case", _cases(EMPTY))
def test_an_empty_path_is_a_usage_error_not_the_current_folder(case: str, tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", *EMPTY[case]], cwd=tmp_path, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.stderr.splitlines()[-1].endswith(("expected a path, got '' (an empty string, not the current "
                                                    "folder '.')", "expected a file name, got ''")), result.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written where it ran


@pytest.mark.parametrize("case", _cases(CASES))
def test_a_path_too_long_to_look_up_is_one_line(case: str) -> None:
    argv, returncode, start = CASES[case]
    env = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-m", *argv], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == returncode, result.stderr[-2000:]
    error = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(error) == 1 and error[0].startswith(start), result.stderr[-2000:]
