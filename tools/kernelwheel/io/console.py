"""The one way commands talk to people: rich on stderr, every message escaped, live progress only on a terminal.

Results (wheel paths, install commands, JSON) go to stdout with ``print``; everything here goes to stderr, so a
command's output can be piped. Messages are passed through ``rich.markup.escape``: a file or repository name holding
``[red]`` is shown as written, never interpreted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)


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


class ActivityTask:
    """One line of an ``Activity``: files done of total, bytes done of total (with speed and ETA on a terminal)."""

    def __init__(self, activity: Activity, verb: str, label: str, files_total: int | None, bytes_total: int | None):
        self._activity = activity
        self._verb, self._label = verb, label
        self._files_done, self._files_total = 0, files_total
        self._started = time.monotonic()
        self._id = activity.progress.add_task(escape(label), total=bytes_total, verb=escape(verb), files="")
        self._show_files()

    def _show_files(self) -> None:
        total = "?" if self._files_total is None else str(self._files_total)
        self._activity.progress.update(self._id, files=f"{self._files_done}/{total} files")

    def update(self, *, files_done: int | None = None, files_total: int | None = None, bytes_done: int | None = None,
               bytes_total: int | None = None, label: str | None = None) -> None:
        if files_done is not None:
            self._files_done = files_done
        if files_total is not None:
            self._files_total = files_total
        self._show_files()
        self._activity.progress.update(self._id, completed=bytes_done, total=bytes_total,
                                       description=None if label is None else escape(label))

    def advance(self, *, files: int = 0, nbytes: int = 0) -> None:
        if files:
            self._files_done += files
            self._show_files()
        if nbytes:
            self._activity.progress.advance(self._id, nbytes)

    def finish(self, summary: str | None = None) -> None:
        """Remove the line; ``summary`` (``<verb> <label>: <summary> in 1.2 s``) is printed, terminal or not."""
        self._activity.progress.remove_task(self._id)
        if summary is not None:
            seconds = time.monotonic() - self._started
            self._activity.console.print(escape(f"{self._verb} {self._label}: {summary} in {seconds:.1f} s"))


class Activity:
    """The one progress display of a command, shared by its downloads and its wheel writes (``activity``).

    On a terminal it is a live rich display, one line per task (files, bytes, speed, ETA); anywhere else (CI logs,
    pipes) nothing is drawn and only the lines the caller prints (``ActivityTask.finish`` summaries, one line per
    wheel) appear."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            TextColumn("[bold]{task.fields[verb]}"), TextColumn("{task.description}"), BarColumn(),
            TextColumn("{task.fields[files]}"), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
            console=console, transient=True, disable=not console.is_terminal,
        )
        self._users = 0

    def task(self, verb: str, label: str, *, files_total: int | None = None,
             bytes_total: int | None = None) -> ActivityTask:
        return ActivityTask(self, verb, label, files_total, bytes_total)


_ACTIVE: dict[int, Activity] = {}
_ACTIVE_LOCK = threading.Lock()


@contextmanager
def activity(console: Console) -> Iterator[Activity]:
    """The console's ``Activity``: opened by the outermost caller (e.g. a command around its downloads and writes),
    shared by every nested one, closed when the outermost block ends."""
    with _ACTIVE_LOCK:
        shared = _ACTIVE.get(id(console))
        if shared is None:
            shared = _ACTIVE[id(console)] = Activity(console)
            shared.progress.start()
        shared._users += 1
    try:
        yield shared
    finally:
        with _ACTIVE_LOCK:
            shared._users -= 1
            if shared._users == 0:
                del _ACTIVE[id(console)]
                shared.progress.stop()
