"""The kernelwheel package's docstring names every layer and every module in it, one line each, so the map of the
package cannot drift; and the imports follow the layers it lists: a module imports its own layer or one before it."""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

import kernelwheel as package

FOLDER = Path(package.__file__).parent
LAYERS = re.findall(r"^([a-z_]+)/ {2,}\S", package.__doc__ or "", re.MULTILINE)


def _modules() -> dict[str, Path]:
    """``layer/module`` (or ``module`` at the top) → its file, for every module but the ``__init__`` files."""
    return {path.relative_to(FOLDER).with_suffix("").as_posix(): path
            for path in sorted(FOLDER.rglob("*.py")) if path.stem != "__init__"}


def test_docstring_names_every_layer_and_module() -> None:
    named = re.findall(r"^([a-z0-9_]+(?:/[a-z0-9_]+)?) {2,}\S", package.__doc__ or "", re.MULTILINE)
    named = [n for n in named if n not in LAYERS] + [f"{n}/" for n in LAYERS]
    assert len(named) == len(set(named)), f"named twice: {sorted(n for n in set(named) if named.count(n) > 1)}"
    actual = set(_modules()) | {f"{p.parent.name}/" for p in FOLDER.glob("*/__init__.py")}
    assert not actual - set(named), f"not in tools/kernelwheel/__init__.py's docstring: {sorted(actual - set(named))}"
    assert not set(named) - actual, f"named in the docstring but not in the package: {sorted(set(named) - actual)}"


def _imported_layers(path: Path) -> set[str]:
    layers: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
        names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        layers |= {name.split(".")[1] for name in names if name.startswith("kernelwheel.")}
    return layers


def test_every_import_points_down_the_layers() -> None:
    assert LAYERS[0] == "io" and LAYERS[-1] == "cli", LAYERS
    upward = []
    for module, path in _modules().items():
        if "/" not in module:
            continue
        rank = LAYERS.index(module.split("/")[0])
        upward += [f"{module} imports kernelwheel.{layer}" for layer in _imported_layers(path)
                   if layer in LAYERS and LAYERS.index(layer) > rank]
    assert not upward, upward


def _imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The kernelwheel modules ``path`` imports (``from kernelwheel.x import y`` counts ``x.y`` when that is a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kernelwheel."):
            base = node.module.removeprefix("kernelwheel.").replace(".", "/")
            found |= {name for name in [base, *(f"{base}/{alias.name}" for alias in node.names)] if name in modules}
    return found


def test_no_two_modules_import_each_other_even_through_others() -> None:
    """Inside a layer too, the imports point one way: a conversion's data never climbs back up the modules."""
    modules = _modules()
    graph = {module: _imported_modules(path, set(modules)) for module, path in modules.items()}
    try:
        order = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as cycle:
        raise AssertionError(f"an import cycle: {' -> '.join(cycle.args[1])}") from None
    assert set(order) >= set(modules)


def test_the_package_never_imports_tools_or_torch_at_its_top_level() -> None:
    """kernelwheel is installed without the checkout and without torch: no module of it names ``tools.``."""
    for path in FOLDER.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from|import) tools\b", text, re.MULTILINE), path
        assert not re.search(r"^(from|import) torch\b", text, re.MULTILINE), path
