"""kernelwheel's public API: ``__all__`` is exactly docs/api.md's table, every name resolves (imported on first use,
never at ``import kernelwheel``), and the commands call these same functions."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import kernelwheel
from tests.helpers.repo import REPO_ROOT

API_PAGE = REPO_ROOT / "docs" / "api.md"
CLI = REPO_ROOT / "tools" / "kernelwheel" / "cli"


def test_all_is_the_documented_list() -> None:
    documented = re.findall(r"^\| `([A-Za-z_]+)` \|", API_PAGE.read_text(encoding="utf-8"), re.MULTILINE)
    assert len(documented) == len(set(documented))
    assert sorted(kernelwheel.__all__) == sorted(documented)
    assert sorted(kernelwheel._API) == sorted(kernelwheel.__all__)


def test_every_name_resolves_to_its_module_object() -> None:
    for name in kernelwheel.__all__:
        value = getattr(kernelwheel, name)
        assert value.__module__ == f"kernelwheel.{kernelwheel._API[name]}", name
    try:
        kernelwheel.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no attribute 'no_such_name'" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")


def test_importing_the_package_imports_no_library() -> None:
    code = ("import sys, kernelwheel; print(sorted(m for m in ('huggingface_hub', 'sigstore', 'rich', 'requests', "
            "'kernelwheel.wheels.convert') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def _imported_names(path: str) -> set[str]:
    tree = ast.parse((CLI / path).read_text(encoding="utf-8"))
    return {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}


def test_the_commands_call_the_api() -> None:
    for command, function in [("hub2wheel.py", "convert_kernel"), ("verify_wheel.py", "verify_wheel"),
                              ("index.py", "write_index"), ("install_command.py", "plan_install"),
                              ("mirror.py", "run_mirror")]:
        assert function in _imported_names(command), (command, function)
