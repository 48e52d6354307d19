"""README.md's Install line, as written, against the walkthrough's index, for torch 2.11, 2.13 and 2.14.

The index is the walkthrough's: one stable-ABI build (``Requires-Dist: torch>=2.10``) in the Hub layout, turned into a
wheel by ``kernelwheel convert``, indexed by ``kernelwheel index`` without ``--torch``, and served by Python's
http.server on 127.0.0.1. Each torch gets a fresh venv with a stand-in torch wheel of that version
(``standin_wheels.write_standin_torch``: PyPI's version and ``torch/version.py``, not 4 GB). There the README's line,
with HOST (and, for 2.11 and 2.13, the torch minor and version it shows) substituted, is run by bash with the venv's
``pip`` first on PATH: pip installs the stable wheel through that minor's sub-index and leaves torch as it was. First,
``kernelwheel install-command`` (walkthrough step 7) prints the same sub-index and pin for that venv.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.version import Version

from kernelwheel.index.torch_minors import released_torch_minors
from kernelwheel.wheels.naming import torch_label, torch_minor
from tests.helpers import kernel_repos
from tests.helpers.repo import REPO_ROOT
from tests.helpers.servers import free_port, serving
from tests.helpers.standin_wheels import write_standin_torch

pytestmark = pytest.mark.slow

README = REPO_ROOT / "README.md"
PROJECT = "img2gray-cu130"
VARIANT = "torch-stable-abi210-cu130-x86_64-linux"  # the walkthrough's build (step 1)
TORCHES = ["2.11.0", "2.13.0", "2.14.1"]
_TIMEOUT_S = 300


def _env(**extra: str) -> dict[str, str]:
    """Nothing of this machine's pip configuration (its local indexes, find-links, a constraint capping torch)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "KERNELWHEEL_")) and k != "VIRTUAL_ENV"}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", **extra)
    return env


def _run(argv: list[str], **extra: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, env=_env(**extra), capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
    assert result.returncode == 0, f"{shlex.join(argv)} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def readme_install_line() -> str:
    """The one ``pip install`` line of README.md's Install section, as written."""
    section = README.read_text(encoding="utf-8").split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```bash\n(.*?)^```$", section, flags=re.M | re.S)
    (line,) = [line for block in blocks for line in block.splitlines() if line.startswith("pip install ")]
    return line


def for_torch(line: str, host: str, torch: str) -> str:
    """``line`` with HOST replaced by ``host`` and the torch it shows (sub-index and pin) by ``torch``."""
    shown = re.fullmatch(r'pip install --index-url http://HOST/simple/torch(\d+\.\d+)/ \S+ "torch==(\S+)"', line)
    assert shown, f"README's Install line changed form: {line}"
    return (line.replace("HOST", host, 1)
            .replace(f"/simple/torch{shown[1]}/", f"/simple/{torch_label(torch_minor(torch))}/")
            .replace(f'"torch=={shown[2]}"', f'"torch=={torch}"'))


def test_the_line_is_readmes_own_for_torch_2_14() -> None:
    line = readme_install_line()
    assert line == 'pip install --index-url http://HOST/simple/torch2.14/ img2gray-cu130 "torch==2.14.1"'
    assert for_torch(line, "127.0.0.1:8080", "2.14.1") == line.replace("HOST", "127.0.0.1:8080")
    assert for_torch(line, "h", "2.11.0") == 'pip install --index-url http://h/simple/torch2.11/ img2gray-cu130 "torch==2.11.0"'


@pytest.fixture(scope="module")
def index_host(tmp_path_factory: pytest.TempPathFactory, so_cache: Path) -> Iterator[str]:
    """``127.0.0.1:<port>`` serving the walkthrough's index: its one stable wheel, indexed without ``--torch``."""
    root = tmp_path_factory.mktemp("walkthrough")
    repo = kernel_repos.make_flat_repo(root / "img2gray", so_cache, [VARIANT])
    house = root / "wheelhouse"
    _run([sys.executable, "-m", "kernelwheel", "convert", str(repo), "--out", str(house)])
    (wheel,) = house.glob("*.whl")
    assert wheel.name.startswith("img2gray_cu130-1-cp39-abi3-")
    indexed = json.loads(_run([sys.executable, "-m", "kernelwheel", "index", str(house), "--json"]).stdout)
    # Every released minor from the wheel's torch>=2.10 on, the newest released (2.15 at least) included.
    assert indexed["torch_indexes"] == [torch_label(m) for m in released_torch_minors() if m >= Version("2.10")]
    assert "torch2.15" in indexed["torch_indexes"]
    port = free_port()
    with serving([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(house)],
                 f"http://127.0.0.1:{port}/simple/", log=root / "http.log"):
        yield f"127.0.0.1:{port}"


_TORCH_STATE = """
import hashlib, importlib.metadata, json
dist = importlib.metadata.distribution("torch")
print(json.dumps({"version": dist.version, "record": hashlib.sha256((dist.read_text("RECORD") or "").encode()).hexdigest(),
                  "version_py": open(dist.locate_file("torch/version.py"), encoding="utf-8").read()}))
"""


def _torch_state(python: Path) -> dict[str, str]:
    state: dict[str, str] = json.loads(_run([str(python), "-c", _TORCH_STATE]).stdout)
    return state


@pytest.mark.parametrize("torch", TORCHES)
def test_readmes_install_line_installs_the_stable_wheel_and_keeps_torch(index_host: str, torch: str,
                                                                         tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", "--no-index", "--no-deps",
          str(write_standin_torch(tmp_path / "torch", torch))])
    before = _torch_state(python)
    assert before["version"] == torch
    sub_index = f"http://{index_host}/simple/{torch_label(torch_minor(torch))}/"

    planned = _run([sys.executable, "-m", "kernelwheel", "install-command", "--python", str(python),
                    "--index-url", f"http://{index_host}/simple/", PROJECT])
    assert shlex.split(planned.stdout.strip().splitlines()[-1]) == [
        str(python), "-m", "pip", "install", "--index-url", sub_index, PROJECT, f"torch=={torch}"]

    line = for_torch(readme_install_line(), index_host, torch)
    assert sub_index in line
    installed = _run(["bash", "-c", line], PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert f"Successfully installed {PROJECT}-1" in installed.stdout, installed.stdout

    packages = {p["name"]: p["version"] for p in json.loads(_run([str(python), "-m", "pip", "list", "--format",
                                                                   "json"]).stdout)}
    assert packages[PROJECT] == "1" and packages["torch"] == torch
    assert _torch_state(python) == before  # version, RECORD and torch/version.py, byte for byte
