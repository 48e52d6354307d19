"""kernelwheel.cli.dispatch (``kernelwheel <command>``): the command list, usage errors in one line, and the chosen
command's module imported by name, alone."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest

from kernelwheel.cli import dispatch


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert dispatch.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: kernelwheel <command>")
    for name in ("convert", "index", "install-command", "upload", "verify", "publish"):
        assert f"\n  {name} " in out


@pytest.mark.parametrize("argv", [["nope"], ["hub2wheel", "--help"], ["--verbose"]])
def test_an_unknown_command_exits_2_with_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert dispatch.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"kernelwheel: unknown command {argv[0]!r} (commands: convert, index, install-command, ")


def test_no_command_prints_the_usage_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert dispatch.main([]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("usage: kernelwheel <command>")


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_is_the_installed_distributions(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert dispatch.main([flag]) == 0
    assert capsys.readouterr() == (f"kernelwheel {importlib.metadata.version('kernelwheel')}\n", "")
    installed = subprocess.run([sys.executable, "-m", "kernelwheel", "--version"], capture_output=True, text=True)
    assert (installed.returncode, installed.stdout) == (0, f"kernelwheel {importlib.metadata.version('kernelwheel')}\n")


def test_the_command_gets_the_remaining_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        dispatch.main(["index", "--help"])
    assert exit_info.value.code == 0
    assert "--torch X.Y" in capsys.readouterr().out


def test_every_command_module_has_a_main() -> None:
    for name in dispatch.COMMANDS:
        assert callable(dispatch.command_main(name))


def test_only_the_chosen_command_is_imported() -> None:
    """A fresh interpreter: importing the dispatcher and running one command's ``--help`` loads no other command."""
    code = ("import sys\nfrom kernelwheel.cli import dispatch\n"
            "try:\n    dispatch.main(['index', '--help'])\nexcept SystemExit:\n    pass\n"
            "commands = {f'kernelwheel.cli.{c.module}' for c in dispatch.COMMANDS.values()}\n"
            "print(sorted(m for m in sys.modules if m in commands))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "['kernelwheel.cli.index']"


def test_commands_import_libraries_never_each_other() -> None:
    from pathlib import Path

    folder = Path(dispatch.__file__).parent
    modules = {command.module for command in dispatch.COMMANDS.values()}  # not dispatch, not the argparse helpers
    for path in folder.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        for other in modules - {path.stem}:
            assert f"kernelwheel.cli.{other} import" not in text and f"from kernelwheel.cli import {other}" not in text, (
                f"{path.name} imports the command {other}")
