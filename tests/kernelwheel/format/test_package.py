"""The format package's docstring names every module in it, so a newcomer's map of the layer cannot drift."""

from __future__ import annotations

import re
from pathlib import Path

import kernelwheel.format as package


def test_docstring_names_every_module() -> None:
    folder = Path(package.__file__).parent
    modules = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    named = set(re.findall(r"\b([a-z_]+)\s+\(", package.__doc__ or ""))
    assert modules <= named, f"not in tools/kernelwheel/format/__init__.py's docstring: {sorted(modules - named)}"
    assert named <= modules, f"named in the docstring but not a module: {sorted(named - modules)}"
