"""argparse helpers shared by the commands (which import libraries, never each other)."""

from __future__ import annotations

import argparse
from pathlib import Path


def path_argument(text: str) -> Path:
    """``type=`` for a file or folder argument: ``Path(text)``, refusing the empty string, which ``Path`` would
    quietly turn into the current folder (``index ''`` indexed it)."""
    if not text:
        raise argparse.ArgumentTypeError("expected a path, got '' (an empty string, not the current folder '.')")
    return Path(text)
