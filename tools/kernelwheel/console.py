"""The one way commands talk to people: rich on stderr, every message escaped, progress only on a terminal.

Results (wheel paths, install commands, JSON) go to stdout with ``print``; everything here goes to stderr, so a
command's output can be piped. Messages are passed through ``rich.markup.escape``: a file or repository name holding
``[red]`` is shown as written, never interpreted.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn


def make_console() -> Console:
    """stderr, no syntax highlighting of numbers/paths, long lines kept whole (one error, one line)."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


def print_error(console: Console, message: object) -> None:
    """``error: <message>``: what every command prints for a ``ToolError`` before it exits non-zero."""
    console.print(f"[red]error:[/] {escape(str(message))}")


def print_warning(console: Console, message: object) -> None:
    console.print(f"[yellow]warning:[/] {escape(str(message))}")


def print_skipped(console: Console, name: str, reason: str) -> None:
    console.print(f"[yellow]skipped[/] {escape(name)}: {escape(reason)}")


def print_step(console: Console, message: str) -> None:
    """A progress line (``* Verified 2 build variants ...``), shown as written."""
    console.print(escape(message))


def progress_bar(console: Console, verb: str) -> Progress:
    """A transient ``<verb> ━━━━ 3/10 <item>`` bar; disabled when stderr is not a terminal (CI logs stay plain)."""
    return Progress(
        TextColumn(f"[bold]{escape(verb)}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
        console=console, transient=True, disable=not console.is_terminal,
    )
