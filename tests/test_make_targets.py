"""`make test` runs every test exactly once, split between two venvs: the toolkit's tests without torch
(`make test-toolkit`) and the rest with torch and the op. The pytest selections are read from the Makefile's
recipes and collected here, so a test left out of both, or run by both, fails this check."""

from __future__ import annotations

import shlex
import subprocess
import sys

from tests.helpers.repo import REPO_ROOT

MAKEFILE = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")


def _pytest_runs(target: str) -> list[list[str]]:
    """The arguments of each ``-m pytest`` line in ``target``'s recipe (``-n N`` dropped: collection only)."""
    recipe = MAKEFILE.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]
    runs = []
    for line in recipe.splitlines()[1:]:
        if " -m pytest" in line:
            words = shlex.split(line.split(" -m pytest", 1)[1])
            runs.append([w for i, w in enumerate(words) if w != "-n" and (i == 0 or words[i - 1] != "-n")])
    return runs


def _collected(args: list[str]) -> list[str]:
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", *args],
                            cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return [line for line in result.stdout.splitlines() if "::" in line]


def test_make_test_runs_every_test_once_across_its_two_venvs() -> None:
    toolkit = _pytest_runs("test-toolkit")
    stable, *rest = [run for run in _pytest_runs("test") if "--img2gray-site" not in run]
    assert len(toolkit) == 1 and len(rest) == 1, (toolkit, rest)
    runs = [_collected(toolkit[0]), _collected(stable), _collected(rest[0])]
    everything = _collected([])
    chosen = [test for run in runs for test in run]
    assert sorted(chosen) == sorted(everything)  # none left out, none twice
    assert len(runs[0]) > 800  # the toolkit's tests really run in the venv without torch
