"""docs/walkthrough.md, run as written: every command of its ``bash`` blocks, in order, in one bash, from the checkout.

``DEMO`` (everything the walkthrough writes), the Hub's and the index's ports, ``HF_HOME`` and the pip configuration
are the test's own; the commands are the page's, byte for byte. ``make demo`` is not rerun: it is what made the venv
this test runs in (README: ``make test`` does the same set-up). A command that fails stops the run and is named; the
servers the walkthrough started are stopped by its own last commands, or by the trap when it fails before them.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest

from kernelwheel.wheels.naming import torch_label, torch_minor
from tests.helpers.repo import REPO_ROOT
from tests.helpers.servers import free_ports

pytestmark = pytest.mark.slow

WALKTHROUGH = REPO_ROOT / "docs" / "walkthrough.md"
PRECONDITIONS = {"make demo"}  # the set-up of this test's own venv
CLEANUP = 'trap \'kill "${INDEX_PID:-}" 2>/dev/null; make -s hub-stop HUB_DIR="$DEMO/hub" >/dev/null 2>&1\' EXIT'


def bash_commands(markdown: str) -> list[str]:
    """The commands of every ```bash block, in order: continuation lines joined, blank and comment lines dropped."""
    commands: list[str] = []
    for block in re.findall(r"^```bash\n(.*?)^```$", markdown, flags=re.M | re.S):
        pending = ""
        for line in block.splitlines():
            if line.endswith("\\"):
                pending += line[:-1]
                continue
            command, pending = (pending + line).strip(), ""
            if command and not command.startswith("#"):
                commands.append(command)
    return commands


def script(commands: list[str]) -> str:
    """One bash script that echoes each command, runs it, and stops at the first that fails, naming it."""
    lines = ["set -u", CLEANUP]
    for command in commands:
        if command.split("#", 1)[0].strip() in PRECONDITIONS:
            continue
        lines.append(f"printf '+ %s\\n' {shlex.quote(command)}")
        if command.split("  #", 1)[0].rstrip().endswith("&"):  # a background job: its own status comes later
            lines.append(command)
        else:
            lines.append(f"{command} || {{ echo {shlex.quote('walkthrough command failed: ' + command)} >&2; exit 1; }}")
    return "\n".join(lines) + "\n"


def test_the_page_has_the_steps_it_promises() -> None:
    commands = bash_commands(WALKTHROUGH.read_text(encoding="utf-8"))
    assert commands[0].startswith("make demo")
    for step in ("tools.cli.build_variants", "make -s hub ", "tools.cli.publish", "tools.hub2wheel", "tools.cli.index",
                 "tools.cli.mirror", "tools.cli.install_command", "-m img2gray", "hub-stop"):
        assert any(step in c for c in commands), step
    assert all("--trust-repo demo/img2gray" in c for c in commands if "tools.hub2wheel demo/" in c)


def test_walkthrough_runs_as_written(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_", "PIP_"))}
    index_port, hub_port = free_ports(2)  # two ports at once: asked one by one, the system may give the same twice
    env.update(DEMO=str(demo), INDEX_PORT=str(index_port), HUB_PORT=str(hub_port), HF_HOME=str(tmp_path / "hf"),
               PIP_CONFIG_FILE="/dev/null", PIP_DISABLE_PIP_VERSION_CHECK="1")
    text = script(bash_commands(WALKTHROUGH.read_text(encoding="utf-8")))
    result = subprocess.run(["bash", "-c", text], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1200)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert "1 wheel(s) written, 0 variant(s) skipped" in output
    # The mirror's first run records v0.1.0; after the second release, the next converts 0.1.1 alone.
    assert re.search(r"^demo/img2gray +0\.1\.0 +0 +0 +0$", output, flags=re.M), output[-3000:]
    assert re.search(r"^demo/img2gray +0\.1\.1 +1 +0 +0$", output, flags=re.M), output[-3000:]
    assert "Failed to initialize NumPy" not in output  # step 6 shares numpy too: torch warns at import without it
    # The entry package stands for the build, so __file__ is the build's, installed in the fresh venv.
    assert re.search(rf"{re.escape(str(demo))}/venv/lib/python3\.\d+/site-packages/_img2gray_cuda_\w+/__init__\.py "
                     r"torch\.Size\(\[480, 640\]\)", output), output[-3000:]
    assert re.search(r"^_img2gray_cuda_\w+\.img2gray$", output, flags=re.M), output[-3000:]  # the op, by its namespace
    assert "cpu: [76, 150, 29, 255] ok" in output
    assert "a CUDA 13.0 build runs on torch's CUDA 13.0 (same version)" in output  # install_command's "why:"
    # Step 7: install_command picks the sub-index of the venv's torch minor, which kernelwheel index wrote for the
    # stable wheel (torch>=2.10) though no wheel names that minor.
    sub_index = f"http://127.0.0.1:{index_port}/simple/{torch_label(torch_minor(version('torch')))}/"
    assert f"--index-url {sub_index} img2gray-cu130 torch==" in output, output[-3000:]
    assert not (demo / "hub" / "olah.pid").exists()  # make hub-stop ran
