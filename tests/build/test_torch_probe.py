"""tools/build/torch_probe.py: torch's location and build facts, read without importing torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch

from tests.helpers.repo import REPO_ROOT
from tools.build.torch_probe import probe

SCRIPT = REPO_ROOT / "tools" / "build" / "torch_probe.py"


def test_probe_matches_the_imported_torch() -> None:
    facts = probe()
    assert facts.root == Path(torch.__file__).parent
    assert facts.version == torch.__version__
    assert facts.cuda == (torch.version.cuda or "")


def test_script_prints_key_value_lines_for_cmake() -> None:
    out = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [f"ROOT={Path(torch.__file__).parent}", f"VERSION={torch.__version__}",
                                f"CUDA={torch.version.cuda or ''}"]


def test_script_without_torch_says_so(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    result = subprocess.run([str(tmp_path / "venv" / "bin" / "python"), str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.startswith("error: torch is not installed for ")
