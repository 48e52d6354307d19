"""tools/kernelwheel/index/install_command_line.py: what ``--run`` starts (an index URL with a password goes to the
installer's environment, never its command line), and the printed command, which names a variable where a password
goes and works as printed in a shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelwheel.index.install_command_line import runnable_command
from kernelwheel.index.install_plan import plan_install
from tests.helpers.index_servers import AuthHandler, serve
from tests.kernelwheel.index.test_install_plan import T214, _command, target


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_run_moves_index_urls_with_passwords_into_the_installers_environment(served: str, installer: str) -> None:
    """What --run starts: no password on the command line (other local users can read it), each password-bearing
    index in the variable the installer reads instead; the extras move together, in their order."""
    extras = ["https://pypi.org/simple", "http://mirror:s3cret@127.0.0.1:9/simple/"]
    plan = plan_install(f"http://reader:pw@{served}/simple/", "img2gray-cu130", target(), installer=installer,
                        extra_index_urls=extras)  # fmt: skip
    command, env = runnable_command(plan)
    prefix = ["/env/bin/python", "-m", "pip"] if installer == "pip" else ["uv", "pip"]
    head = ["install"] if installer == "pip" else ["install", "--python", "/env/bin/python"]
    assert command == [*prefix, *head, "img2gray-cu130", "torch==2.14.1"]
    variable = "PIP" if installer == "pip" else "UV"
    assert env == {f"{variable}_INDEX_URL": f"http://reader:pw@{served}/simple/torch2.14/",
                   f"{variable}_EXTRA_INDEX_URL": " ".join(extras)}  # fmt: skip


def test_run_leaves_index_urls_without_passwords_on_the_command_line(served: str, simple: Path) -> None:
    extras = ["https://pypi.org/simple"]
    plan = plan_install(f"http://reader:pw@{served}/simple/", "img2gray-cu130", target(), extra_index_urls=extras)
    command, env = runnable_command(plan)
    assert command == [*plan.argv[:4], "--extra-index-url", extras[0], "img2gray-cu130", "torch==2.14.1"]
    assert env == {"PIP_INDEX_URL": f"http://reader:pw@{served}/simple/torch2.14/"}

    plan = plan_install(simple.as_uri() + "/", "img2gray-cu130", target())  # an index without a password
    assert runnable_command(plan) == (plan.argv, {})


@pytest.mark.needs_torch  # plans for this interpreter, whose torch decides the wheel
def test_the_password_is_never_printed_and_the_printed_command_works_with_the_variable(
    simple: Path, tmp_path: Path
) -> None:
    with serve(simple.parent, AuthHandler) as host:
        result = _command("--index-url", f"http://reader:pw@{host}/simple/", "img2gray-cu130")
        assert result.returncode == 0, result.stderr
        assert ":pw@" not in result.stdout + result.stderr
        index = f'http://reader:"${{KERNELWHEEL_INDEX_PASSWORD}}"@{host}/simple/torch2.14/'
        assert result.stdout == f"{sys.executable} -m pip install --index-url {index} img2gray-cu130 torch==2.14.1\n"
        assert "set KERNELWHEEL_INDEX_PASSWORD before running the command" in result.stderr

        as_json = _command("--index-url", f"http://reader:pw@{host}/simple/", "img2gray-cu130", "--json")
        plan = json.loads(as_json.stdout)
        assert ":pw@" not in as_json.stdout + as_json.stderr
        assert plan["index_url"] == f"http://reader:***@{host}/simple/torch2.14/"
        assert plan["password_env"] == ["KERNELWHEEL_INDEX_PASSWORD"]
        assert f"http://reader:${{KERNELWHEEL_INDEX_PASSWORD}}@{host}/simple/torch2.14/" in plan["argv"]

        # The password kept off the command line: from the variable, with a user-only URL.
        from_env = _command("--index-url", f"http://reader@{host}/simple/", "img2gray-cu130",
                            env={"KERNELWHEEL_INDEX_PASSWORD": "pw"})  # fmt: skip
        assert from_env.stdout == result.stdout and ":pw@" not in from_env.stdout + from_env.stderr

        # The printed command, run by a shell with the variable set, reaches the index (pip download, no install).
        printed = result.stdout.strip().replace(" -m pip install ", f" -m pip download --no-deps -d {tmp_path} ")
        printed = printed.removesuffix(" torch==2.14.1")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", KERNELWHEEL_INDEX_PASSWORD="pw")
        subprocess.run(["bash", "-c", printed], check=True, env=env, timeout=120, capture_output=True)
    assert [p.name for p in tmp_path.glob("*.whl")] == [T214]
