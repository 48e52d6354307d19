"""Tests call the production path: a function or class of kernelwheel that only tests use is a twin of the code
that runs, or dead code kept alive by its tests. This scan (names, not imports: any use in tools/ counts) fails when
one appears that is not on the short allow-list below, each entry with its reason."""

from __future__ import annotations

import ast
import collections
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools"
PACKAGE = TOOLS / "kernelwheel"

# module:name → why it stays although only tests call it.
ALLOWED = {
    # kernels.lock as a whole, read and written exactly as kernels does: the format layer's reference, compared with
    # each kernels release (test_kernels_conformance); conversion reads one kernel's lock (load_lockfile).
    "format/lockfile:parse_lockfile",
    "format/lockfile:dump_lockfile",
    # backend.type as kernels 0.19.1 reads it, kept beside build-layout as the format's record of that release.
    "format/metadata:backend_type",
    "format/metadata:is_known_backend",
    # whether a variant is an SDK, as the comparison with each kernels release's variant kinds asks it.
    "format/variants:Variant.sdk",
    # a Hub version spec resolved in one call: the composition of list_refs and pick_version the commands make.
    "hub/versions:resolve_version",
    # what the weekly upstream canary (pytest -m torch_release) compares with index/torch_minors.json.
    "index/torch_minors:minors_of_releases",
    # a torch minor's requirement without a variant, as the torch frameworks' rules spell it (format/frameworks):
    # the stand-in wheels tests install are made with it.
    "wheels/naming:torch_requirement",
    # the plain progress bar of io/console, kept beside Activity for commands that count items, not bytes.
    "io/console:progress_bar",
}


def _python_files(folder: Path) -> Iterator[Path]:
    for path in sorted(folder.rglob("*.py")):
        if not any(part.startswith(".") or part == "__pycache__" for part in path.relative_to(ROOT).parts):
            yield path


def _names(tree: ast.AST) -> collections.Counter[str]:
    """Every name a tree uses: bare names, attributes, and names imported from a module."""
    used: collections.Counter[str] = collections.Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used[node.id] += 1
        elif isinstance(node, ast.Attribute):
            used[node.attr] += 1
        elif isinstance(node, ast.ImportFrom):
            used.update(alias.name for alias in node.names)
    return used


Definition = tuple[str, str, ast.AST]  # (module, name, its node); a method's name is Class.method


def _definitions(path: Path, tree: ast.Module) -> Iterator[Definition]:
    module = path.relative_to(PACKAGE).with_suffix("").as_posix()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield module, node.name, node
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and not member.name.startswith("__"):
                    yield module, f"{node.name}.{member.name}", member


def _only_tests_call() -> list[str]:
    """``module:name`` of every kernelwheel function, class or method that no module of tools/ uses outside its own
    definition, and some test does."""
    production: collections.Counter[str] = collections.Counter()
    definitions: list[Definition] = []
    for path in _python_files(TOOLS):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        production += _names(tree)
        if path.is_relative_to(PACKAGE):
            definitions += _definitions(path, tree)
    tests: collections.Counter[str] = collections.Counter()
    for path in _python_files(ROOT / "tests"):
        tests += _names(ast.parse(path.read_text(encoding="utf-8")))
    found = []
    for module, name, node in definitions:
        short = name.rsplit(".", 1)[-1]
        if production[short] - _names(node)[short] <= 0 and tests[short] > 0:
            found.append(f"{module}:{name}")
    return sorted(found)


def test_tests_call_the_production_path() -> None:
    only_tests = set(_only_tests_call())
    assert not only_tests - ALLOWED, (
        f"only tests call {sorted(only_tests - ALLOWED)}: make the tests call what production runs, or add it to "
        "ALLOWED with the reason")
    assert not ALLOWED - only_tests, f"production uses these now, or they are gone: {sorted(ALLOWED - only_tests)}"


def test_the_scan_finds_a_twin() -> None:
    """The scan's rule on a small tree: a function only a test calls is found, one production calls is not."""
    tree = ast.parse("def twin():\n    return twin()\n\ndef step():\n    pass\n")
    production = _names(ast.parse("step()\n"))
    definitions = list(_definitions(PACKAGE / "wheels" / "example.py", tree))
    assert [(module, name) for module, name, _ in definitions] == [("wheels/example", "twin"),
                                                                   ("wheels/example", "step")]
    unused = [name for _, name, node in definitions if production[name] - _names(node)[name] <= 0]
    assert unused == ["twin"]
