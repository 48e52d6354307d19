"""Servers the tests start on 127.0.0.1 (pypiserver, http.server, olah): a free port, then start, wait, stop."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(url: str, process: subprocess.Popen[bytes], seconds: float = 30, *, any_status: bool = False) -> None:
    """Return once ``url`` answers 2xx/3xx (with ``any_status``, any HTTP status); raise if ``process`` exits first
    or nothing answers within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server for {url} exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            if any_status:
                return
            time.sleep(0.2)
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    raise RuntimeError(f"server for {url} did not answer within {seconds} s")


@contextlib.contextmanager
def serving(argv: list[str], ready_url: str, *, log: Path | None = None, cwd: Path | None = None,
            seconds: float = 30, any_status: bool = False) -> Iterator[subprocess.Popen[bytes]]:
    """Run the server ``argv`` (output to ``log``, else discarded) until ``ready_url`` answers (``wait_for``), and
    stop it on leaving: SIGTERM, then SIGKILL if it has not exited 10 s later."""
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(log.open("wb")) if log is not None else subprocess.DEVNULL
        server = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        try:
            try:
                wait_for(ready_url, server, seconds, any_status=any_status)
            except RuntimeError as exc:
                raise RuntimeError(f"{exc}; see {log}" if log is not None else str(exc)) from None
            yield server
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
