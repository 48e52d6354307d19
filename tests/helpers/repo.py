"""Where the repository under test is: the root that tools/, python/ and samples/ hang from."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
