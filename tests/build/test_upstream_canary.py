""".github/workflows/upstream-canary.yml, checked offline: GitHub's schema and actionlint, a weekly schedule, the
newest kernels added to the differential tests (which exist and carry the marker it selects), the op tests
run under the newest torch, the build under the newest build tools with the lock left alone, and the list of released
torch minors compared with PyPI's (its commands run here on a recorded answer of PyPI's)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from kernelwheel.index.torch_minors import released_torch_minors
from tests.helpers import workflows
from tests.helpers.kernels_releases import SUPPORTED_KERNELS
from tests.helpers.repo import REPO_ROOT
from tests.helpers.workflows import load_workflow, step_running

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "upstream-canary.yml"


def test_workflow_validates_against_githubs_schema_offline() -> None:
    workflows.assert_matches_githubs_schema(WORKFLOW)


def test_actionlint_and_shellcheck_find_nothing() -> None:
    workflows.assert_actionlint_finds_nothing(WORKFLOW)


def test_runs_weekly_and_on_demand_with_read_only_rights() -> None:
    workflow = load_workflow(WORKFLOW)
    (schedule,) = workflow["on"]["schedule"]
    _minute, _hour, day, month, weekday = schedule["cron"].split()
    assert (day, month) == ("*", "*") and weekday.isdigit(), "once a week"
    assert "workflow_dispatch" in workflow["on"]
    assert workflow["permissions"] == {"contents": "read"}


def test_kernels_job_adds_the_newest_release_to_the_differential_tests() -> None:
    job = load_workflow(WORKFLOW)["jobs"]["kernels"]
    assert step_running(job, "make install")
    script = step_running(job, "LATEST_KERNELS=")["run"]
    assert re.search(r'LATEST_KERNELS="\$\{newest\}" \.venv/bin/python -m pytest -m kernels_release$', script, re.M)
    assert "pip install --dry-run --no-deps --ignore-installed --quiet --report - kernels" in script


def test_the_marker_selects_a_comparison_with_every_supported_release() -> None:
    """What ``-m kernels_release`` collects: tests parametrized over each supported release, in more than one area
    of the format."""
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "kernels_release",
                             "-p", "no:cacheprovider", "tests/kernelwheel"],
                            cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    selected = [line for line in result.stdout.splitlines() if "::" in line]
    modules = {line.split("::")[0] for line in selected}
    assert len(modules) >= 2, modules
    for release in SUPPORTED_KERNELS:
        assert any(release in line for line in selected), f"no test compares with kernels {release}"


def test_torch_job_runs_the_op_tests_under_an_unpinned_newest_torch() -> None:
    job = load_workflow(WORKFLOW)["jobs"]["torch"]
    command = step_running(job, "make test-torch")["run"].strip()
    assert command == 'make test-torch TORCH_SPEC=torch TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu"'
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile[makefile.index("\ntest-torch:"):].split("\n\n")[0]
    assert '--no-deps "$$(cat dist/.wheel-path)"' in recipe, "the stable wheel make wheel built, torch left alone"
    assert recipe.rstrip().endswith("-m pytest tests/test_ops.py")


def _canary_pytest(args: list[str], releases: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TORCH_RELEASES": releases}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False)


def test_torch_minors_job_compares_the_released_minors_with_pypis() -> None:
    """The job's two commands, run here: its extraction on a PEP 691 answer of PyPI's for torch (``versions``, PEP
    700), then its pytest selection with that list, which passes; with a minor the file lacks, it fails naming it."""
    job = load_workflow(WORKFLOW)["jobs"]["torch-minors"]
    assert step_running(job, "make .venv-toolkit/.installed")
    script = step_running(job, "TORCH_RELEASES=")["run"]
    assert "curl -fsSL --retry 3 -H 'Accept: application/vnd.pypi.simple.v1+json' https://pypi.org/simple/torch/" in script
    extract = re.search(r"\| python -c '([^']+)'\)\"$", script, re.M)
    run = re.search(r'^TORCH_RELEASES="\$\{released\}" \.venv-toolkit/bin/python -m pytest (.+)$', script, re.M)
    assert extract and run, script
    listed = [f"{minor}.0" for minor in released_torch_minors()]
    answer = {"meta": {"api-version": "1.1"}, "name": "torch", "files": [], "versions": ["1.13.1", *listed]}
    released = subprocess.run([sys.executable, "-c", extract[1]], input=json.dumps(answer), capture_output=True,
                              text=True, check=True).stdout.strip()
    assert released.split() == answer["versions"]

    args = run[1].split()
    assert args[:2] == ["-m", "torch_release"]
    passed = _canary_pytest(args, released)
    assert passed.returncode == 0 and "1 passed" in passed.stdout, passed.stdout[-3000:] + passed.stderr[-3000:]
    newest = released_torch_minors()[-1]
    following = f"{newest.major}.{newest.minor + 1}"
    failed = _canary_pytest(args, f"{released} {following}.0")
    assert failed.returncode == 1, failed.stdout[-3000:]
    assert (f'torch {following} is released on PyPI: add "{following}" to tools/kernelwheel/index/torch_minors.json '
            "so that kernelwheel index writes its sub-index") in failed.stdout


def test_build_tools_job_builds_with_the_newest_tools_and_leaves_the_lock_alone() -> None:
    """The ranges of requirements/build.txt resolved to their newest (uv's --upgrade, into a file of the runner's),
    installed over the locked venv; the lock files unchanged; then both wheels, the op tests and the double build."""
    job = load_workflow(WORKFLOW)["jobs"]["build-tools"]
    assert step_running(job, "make venv")
    script = step_running(job, "uv pip compile")["run"]
    compile_command = " ".join(script.split("\n")[0:3]).replace("\\", " ")
    argv = compile_command.split()
    assert argv[:3] == [".venv/bin/uv", "pip", "compile"] and "--upgrade" in argv and argv[-1] == "requirements/build.txt"
    output = argv[argv.index("--output-file") + 1]
    assert output.startswith('"${RUNNER_TEMP}/') and "requirements/" not in output
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    for option in ("--python-version 3.11", "--python-platform x86_64-manylinux_2_28", "--index-url https://pypi.org/simple"):
        assert option in makefile and option in compile_command, option  # what `make lock` resolves for
    assert f".venv/bin/python -m pip install -r {output}" in script
    assert script.rstrip().endswith("git diff --exit-code -- requirements/")
    check = step_running(job, "make install")["run"]
    assert "tests/test_ops.py" in check
    assert "tests/build/test_reproducible.py::test_a_commit_rebuilt_in_another_folder_is_the_same_bytes" in check
