"""What every command does around its own work, written once: its parser (one style: ``prog`` as the command is
spelled, the description and epilog as written), the one ``error:`` line and exit 1 for a ``ToolError``, and Ctrl-C
(one line, exit 130). A command's ``main(argv)`` is ``run_command(build_parser(), work, argv)``."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from rich.console import Console

from kernelwheel.cli import prog
from kernelwheel.io.console import make_console, print_error
from kernelwheel.io.errors import ToolError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

# The command's work: the parsed arguments, its parser (for a usage error found late: ``parser.error``, exit 2) and
# the console its messages go to; returns the exit code.
Work = Callable[[argparse.Namespace, argparse.ArgumentParser, Console], int]


def command_parser(module: str, command: str, description: str, epilog: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``kernelwheel <command>`` (module ``kernelwheel.cli.<module>``), named as it was run."""
    return argparse.ArgumentParser(prog=prog(module, command), description=description, epilog=epilog,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def run_command(parser: argparse.ArgumentParser, work: Work, argv: Sequence[str] | None, *,
                interrupted: Callable[[argparse.Namespace], str] | None = None) -> int:
    """Parse ``argv`` (usage errors: one line, exit 2), run ``work``; a ``ToolError`` is its one ``error:`` line and
    exit 1, Ctrl-C one line (``interrupted(args)``, or "interrupted") and exit 130."""
    args = parser.parse_args(argv)
    console = make_console()
    try:
        return work(args, parser, console)
    except ToolError as exc:
        print_error(console, exc)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print_error(console, interrupted(args) if interrupted else "interrupted")
        return EXIT_INTERRUPTED
