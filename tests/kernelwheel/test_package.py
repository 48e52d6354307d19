"""The kernelwheel package's docstring names every module and sub-package in it, one line each, so the map of the
package cannot drift (tests/kernelwheel/format/test_package.py does the same for format/)."""

from __future__ import annotations

import re
from pathlib import Path

import kernelwheel as package


def test_docstring_names_every_module_and_subpackage() -> None:
    folder = Path(package.__file__).parent
    modules = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    subpackages = {f"{p.parent.name}/" for p in folder.glob("*/__init__.py")}
    named = re.findall(r"^([a-z_]+/?) {2,}\S", package.__doc__ or "", re.MULTILINE)
    assert len(named) == len(set(named)), f"named twice: {sorted(n for n in set(named) if named.count(n) > 1)}"
    missing = (modules | subpackages) - set(named)
    assert not missing, f"not in tools/kernelwheel/__init__.py's docstring: {sorted(missing)}"
    extra = set(named) - (modules | subpackages)
    assert not extra, f"named in the docstring but not a module or sub-package: {sorted(extra)}"


def test_the_package_never_imports_tools_or_torch_at_its_top_level() -> None:
    """kernelwheel is installed without the checkout and without torch: no module of it names ``tools.``."""
    folder = Path(package.__file__).parent
    for path in folder.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from|import) tools\b", text, re.MULTILINE), path
        assert not re.search(r"^(from|import) torch\b", text, re.MULTILINE), path
