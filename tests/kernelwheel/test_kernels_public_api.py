"""The toolkit, and every file it copies into wheels, uses only names every supported kernels release exports
(``kernels.__all__``): no ``kernels.<module>`` import, no private name. An AST scan of tools/ and of a generated
entry package."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from kernelwheel.wheels.entry_package import Entry, entry_source
from tests.helpers.kernels_releases import RELEASES, ask
from tests.helpers.repo import REPO_ROOT


def kernels_uses(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``(line, what)`` for each use of kernels: ``import kernels[.x]``, ``from kernels[.x] import y``, and
    ``<name>.y`` where ``<name>`` is bound to the kernels module."""
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "kernels" or alias.name.startswith("kernels."):
                    if alias.name != "kernels":
                        yield node.lineno, f"import {alias.name}"
                    aliases.add(alias.asname or "kernels")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            if node.module == "kernels":
                yield from ((node.lineno, f"kernels.{alias.name}") for alias in node.names)
            elif node.module.startswith("kernels."):
                yield node.lineno, f"from {node.module} import ..."
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            yield node.lineno, f"kernels.{node.attr}"


def _public_names() -> set[str]:
    names: set[str] | None = None
    for release in RELEASES:
        exported = set(ask(release, "format_data", "public_names"))
        names = exported if names is None else names & exported
    return names or set()


def _problems(source: str, where: str, public: set[str]) -> list[str]:
    problems = []
    for line, what in kernels_uses(ast.parse(source)):
        name = what.removeprefix("kernels.")
        if not what.startswith("kernels.") or name not in public:
            problems.append(f"{where}:{line}: {what}")
    return problems


def test_scan_finds_internal_uses() -> None:
    source = ("import kernels\nimport kernels.deps\nfrom kernels.verify import X\nfrom kernels import get_kernel_dep"
              "\nkernels._rust.Metadata\n")
    assert _problems(source, "x.py", {"get_kernel_dep"}) == [
        "x.py:2: import kernels.deps", "x.py:3: from kernels.verify import ...", "x.py:5: kernels._rust"]


def test_tools_and_wheel_files_use_only_public_kernels_names() -> None:
    public = _public_names()
    assert {"get_local_kernel", "get_kernel_dep"} <= public
    problems = []
    for path in sorted((REPO_ROOT / "tools").rglob("*.py")):
        problems += _problems(path.read_text(encoding="utf-8"), str(path.relative_to(REPO_ROOT)), public)
    entry = Entry("_relu_plus_abc1234", "relu-plus", "torch-cpu", "cpu", (), {"org/relu": "relu"})
    problems += _problems(entry_source(entry).decode(), "<entry package __init__.py>", public)
    assert problems == []


def test_the_entry_uses_get_local_kernel() -> None:
    entry = Entry("_relu_plus_abc1234", "relu-plus", "torch-cpu", "cpu", (), {"org/relu": "relu"})
    uses = {what for _, what in kernels_uses(ast.parse(entry_source(entry).decode()))}
    assert uses == {"kernels.get_local_kernel"}
