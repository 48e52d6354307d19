"""kernelwheel.io.console: messages are escaped, go to the console they are given, and progress is terminal-only."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from kernelwheel.io.console import (
    activity,
    make_console,
    print_error,
    print_skipped,
    print_step,
    print_warning,
    progress_bar,
)


def _console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=False, highlight=False, soft_wrap=True), buffer


def test_print_error_escapes_markup() -> None:
    console, buffer = _console()
    print_error(console, "repo [red]x[/] is [bold]odd[/bold]")
    assert buffer.getvalue() == "error: repo [red]x[/] is [bold]odd[/bold]\n"


def test_print_error_takes_any_object() -> None:
    console, buffer = _console()
    print_error(console, ValueError("build/[x]: bad"))
    assert buffer.getvalue() == "error: build/[x]: bad\n"


def test_warning_skipped_and_step_are_escaped_too() -> None:
    console, buffer = _console()
    print_warning(console, "[yellow]w[/]")
    print_skipped(console, "torch[1]-cpu", "reason [i]kept[/i]")
    print_step(console, "* Verified [2] variants")
    assert buffer.getvalue().splitlines() == [
        "warning: [yellow]w[/]",
        "skipped torch[1]-cpu: reason [i]kept[/i]",
        "* Verified [2] variants",
    ]


def test_output_goes_to_the_given_console_only(capsys: pytest.CaptureFixture[str]) -> None:
    console, buffer = _console()
    print_error(console, "boom")
    assert buffer.getvalue() == "error: boom\n"
    assert capsys.readouterr() == ("", "")


def test_make_console_writes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    console = make_console()
    print_error(console, "to stderr [red]x[/]")
    out, err = capsys.readouterr()
    assert out == "" and "error: to stderr [red]x[/]" in err


def test_progress_is_disabled_off_a_terminal() -> None:
    console, buffer = _console()
    with progress_bar(console, "writing") as progress:
        task = progress.add_task("torch-cpu", total=2)
        progress.advance(task)
        progress.advance(task)
    assert progress.disable
    assert buffer.getvalue() == ""


def test_progress_is_enabled_on_a_terminal() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=80)
    with progress_bar(console, "writing [b]") as progress:
        task = progress.add_task("torch-cpu", total=2)
        progress.advance(task, 2)
        progress.refresh()
    assert not progress.disable
    assert "writing [b]" in buffer.getvalue() and "2/2" in buffer.getvalue()


def test_activity_off_a_terminal_prints_only_summaries() -> None:
    console, buffer = _console()
    with activity(console) as outer:
        task = outer.task("fetching", "org/[x]@v1", files_total=3)
        task.update(files_done=1, bytes_done=10, bytes_total=30)
        task.advance(files=2, nbytes=20)
        with activity(console) as inner:  # a nested user gets the same display
            assert inner is outer
        task.finish("3 files, 0.0 MiB downloaded")
    assert not outer.progress.live.is_started
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fetching org/[x]@v1: 3 files, 0.0 MiB downloaded in ")
    assert lines[0].endswith(" s")


def test_activity_on_a_terminal_shows_files_and_bytes() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=120)
    with activity(console) as display:
        task = display.task("writing", "org/k", files_total=10, bytes_total=8 << 20)
        task.advance(files=3, nbytes=4 << 20)
        display.progress.refresh()
        task.finish()
    shown = buffer.getvalue()
    assert "writing" in shown and "org/k" in shown and "3/10 files" in shown and "4.2/8.4 MB" in shown
