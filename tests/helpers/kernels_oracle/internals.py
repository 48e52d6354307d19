"""A kernels release's internal modules by their name in that release: ``kernels.X`` up to 0.17, then
``kernels._internals.X`` (0.19 moved them)."""

from __future__ import annotations

import importlib
import importlib.metadata
from types import ModuleType

from packaging.version import Version


def release() -> Version:
    return Version(importlib.metadata.version("kernels"))


def internal(name: str) -> ModuleType:
    """``kernels.<name>`` as the installed release spells it."""
    try:
        return importlib.import_module(f"kernels._internals.{name}")
    except ModuleNotFoundError:
        return importlib.import_module(f"kernels.{name}")
