""".github/workflows/upstream-canary.yml, checked offline: GitHub's schema and actionlint, a weekly schedule, the
newest kernels added to the differential tests (which exist and carry the marker it selects), and the op tests
run under the newest torch."""

from __future__ import annotations

import re
import subprocess
import sys

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
