"""docs/mirror-workflow.yml, the CI-matrix recipe of docs/mirror.md, checked offline as release.yml is: GitHub's
schema, actionlint with shellcheck; the page shows the file as it is, and its commands are the mirror's own."""

from __future__ import annotations

import re
import shlex

from kernelwheel.cli import mirror as mirror_cli
from tests.helpers import workflows
from tests.helpers.repo import REPO_ROOT

WORKFLOW = REPO_ROOT / "docs" / "mirror-workflow.yml"
PAGE = REPO_ROOT / "docs" / "mirror.md"


def test_workflow_validates_against_githubs_schema_offline() -> None:
    workflows.assert_matches_githubs_schema(WORKFLOW)


def test_actionlint_and_shellcheck_find_nothing() -> None:
    workflows.assert_actionlint_finds_nothing(WORKFLOW)


def test_the_page_shows_the_workflow_file_as_it_is() -> None:
    blocks = re.findall(r"^```yaml\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), flags=re.M | re.S)
    assert blocks == [WORKFLOW.read_text(encoding="utf-8")]


def test_each_shard_converts_without_the_index_and_one_last_job_writes_it() -> None:
    jobs = workflows.load_workflow(WORKFLOW)["jobs"]
    convert, index = jobs["convert"], jobs["index"]
    shards = convert["strategy"]["matrix"]["shard"]
    assert shards == ["1", "2", "3", "4"] and convert["strategy"]["fail-fast"] == "false"
    run = workflows.step_running(convert, "kernelwheel mirror")["run"]
    argv = shlex.split(run.replace("${{ matrix.shard }}", "2").replace("${{ strategy.job-total }}", str(len(shards))))
    assert argv[:2] == ["kernelwheel", "mirror"]
    args = mirror_cli.build_parser().parse_args(argv[2:])  # the command line the job runs parses as the mirror's own
    assert (args.shard.index, args.shard.count, args.no_index) == (2, 4, True)
    assert index["needs"] == "convert" and index["if"] == "${{ !cancelled() }}"
    assert workflows.step_running(index, "kernelwheel index")["run"] == "kernelwheel index wheelhouse"
    merge = [s for s in index["steps"] if s.get("uses", "").startswith("actions/download-artifact@")]
    assert merge[0]["with"]["merge-multiple"] == "true" and merge[0]["with"]["pattern"] == "wheelhouse-*"
