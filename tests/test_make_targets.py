"""`make test` runs every test exactly once, split between two venvs: the toolkit's tests without torch
(`make test-toolkit`) and the rest with torch and the op. The pytest selections are read from the Makefile's
recipes and collected here, so a test left out of both, or run by both, fails this check."""

from __future__ import annotations

import shlex
import subprocess
import sys

from tests.helpers.repo import REPO_ROOT

MAKEFILE = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")


_WORKER_OPTIONS = {"-n", "--dist"}  # how the tests are spread over workers: nothing to do with which run


def _pytest_runs(target: str) -> list[list[str]]:
    """The arguments of each ``-m pytest`` line in ``target``'s recipe (``-n N`` and ``--dist MODE`` dropped:
    collection only)."""
    recipe = MAKEFILE.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]
    runs = []
    for line in recipe.splitlines()[1:]:
        if " -m pytest" in line:
            words = shlex.split(line.split(" -m pytest", 1)[1])
            runs.append([w for i, w in enumerate(words)
                         if w not in _WORKER_OPTIONS and (i == 0 or words[i - 1] not in _WORKER_OPTIONS)])
    return runs


def _collected(*selections: list[str]) -> list[list[str]]:
    """The test ids each selection collects; the collections run side by side (each is a whole pytest start-up)."""
    processes = [subprocess.Popen([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", *args],
                                  cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for args in selections]
    collected = []
    for process in processes:
        out, err = process.communicate()
        assert process.returncode == 0, out[-3000:] + err[-3000:]
        collected.append([line for line in out.splitlines() if "::" in line])
    return collected


def test_make_test_runs_every_test_once_across_its_two_venvs() -> None:
    toolkit = _pytest_runs("test-toolkit")
    venv = [run for run in _pytest_runs("test") if "--img2gray-site" not in run]
    assert len(toolkit) == 1 and len(venv) == 1, (toolkit, venv)
    *runs, everything = _collected(toolkit[0], venv[0], [])
    chosen = [test for run in runs for test in run]
    assert sorted(chosen) == sorted(everything)  # none left out, none twice
    assert len(runs[0]) > 800  # the toolkit's tests really run in the venv without torch
