"""A folder served over http on 127.0.0.1 from a thread of the test process, as the install tests serve an index:
quietly (``QuietHandler``), or only to the user ``reader:pw`` (``AuthHandler``); and the install command run against
such an index with a short answer deadline (``timed_install_command``), as the deadline tests run it."""

from __future__ import annotations

import base64
import contextlib
import functools
import http.server
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tests.helpers.repo import REPO_ROOT
from tests.helpers.servers import in_thread


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


class AuthHandler(QuietHandler):
    expected = "Basic " + base64.b64encode(b"reader:pw").decode()

    def do_GET(self) -> None:
        if self.headers.get("Authorization") != self.expected:
            self.send_error(401)
            return
        super().do_GET()


@contextlib.contextmanager
def serve(root: Path, handler: type[http.server.SimpleHTTPRequestHandler] = QuietHandler) -> Iterator[str]:
    """``root`` over http.server on loopback; yields ``127.0.0.1:<port>``."""
    with in_thread(functools.partial(handler, directory=str(root))) as url:
        yield url.removeprefix("http://")


@contextlib.contextmanager
def index_url(simple: Path, scheme: str) -> Iterator[str]:
    """The index root of ``simple`` as file:// or over http with credentials (``AuthHandler``)."""
    if scheme == "file":
        yield simple.as_uri() + "/"
    else:
        with serve(simple.parent, AuthHandler) as host:
            yield f"http://reader:pw@{host}/simple/"


def timed_install_command(*args: str, answer_s: str = "3") -> tuple[subprocess.CompletedProcess[str], float]:
    """``install_command --torch 2.14.1`` with ``KERNELWHEEL_INDEX_TIMEOUT=answer_s``, and how long it took."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "KERNELWHEEL_"))}
    env.update(PIP_CONFIG_FILE=os.devnull, KERNELWHEEL_INDEX_TIMEOUT=answer_s)
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "tools.cli.install_command", "--torch", "2.14.1", "--timeout",
                             "300", *args], capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=200)
    return result, time.monotonic() - start


def one_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one ``error:`` line of a command that failed cleanly (exit 1, nothing on stdout, no traceback)."""
    assert result.returncode == 1 and result.stdout == "" and "Traceback" not in result.stderr, result
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    return errors[0]
