"""The index client's answers: one deadline for each whole answer, and wheels streamed to a checked temporary file.

``python -m tools.cli.install_command`` against loopback servers: an index that drips its page one byte every 2 s,
and one whose wheel (read when neither a ``.metadata`` file nor a ``+torchX.Y`` label says its torch) drips. A
read timeout (30 s) never fires on either; the per-answer deadline (``KERNELWHEEL_INDEX_TIMEOUT``) must, well before
the command's own ``--timeout``. The wheel's size cap and hash are checked as its bytes arrive (``plan_install``,
the library function the command calls, with the cap lowered so that the test does not send 2 GiB).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.version import Version

from kernelwheel.index import client
from kernelwheel.index.install_plan import Environment, plan_install
from kernelwheel.io.errors import DigestMismatch, InvalidWheel
from tests.helpers import standin_wheels as standin
from tests.helpers.repo import REPO_ROOT
from tests.helpers.servers import drip_server, in_thread, send_endless_body

STABLE = "img2gray_cu130-0.3.0-cp39-abi3-manylinux_2_28_x86_64.whl"  # no +torch label: the wheel itself is read


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


class _Flood(_Quiet):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path.endswith(".whl"):
            send_endless_body(self, b"PK" * 32768)
        else:
            super().do_GET()


def _page(root: Path, href: str) -> None:
    page = root / "simple" / "img2gray-cu130" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(f'<!DOCTYPE html>\n<html><body><a href="{href}">{STABLE}</a><br></body></html>\n')


@contextlib.contextmanager
def _serve(root: Path, handler: type[_Quiet] = _Quiet) -> Iterator[str]:
    """``root`` over http.server on loopback; yields its ``http://127.0.0.1:<port>``."""
    with in_thread(functools.partial(handler, directory=str(root))) as url:
        yield url


def _command(*args: str, answer_s: str = "3") -> tuple[subprocess.CompletedProcess[str], float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "KERNELWHEEL_"))}
    env.update(PIP_CONFIG_FILE=os.devnull, KERNELWHEEL_INDEX_TIMEOUT=answer_s)
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "tools.cli.install_command", "--torch", "2.14.1", "--timeout",
                             "300", *args], capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=200)
    return result, time.monotonic() - start


def _one_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1 and result.stdout == "" and "Traceback" not in result.stderr, result
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def test_an_index_page_dripping_one_byte_every_2_s_ends_at_the_answer_deadline() -> None:
    with drip_server(2.0) as drip:
        result, elapsed = _command("--index-url", f"{drip.endpoint}/simple/", "img2gray-cu130")
    assert _one_error(result) == (
        f"error: {drip.endpoint}/simple/img2gray-cu130/: no complete answer within 3 s (KERNELWHEEL_INDEX_TIMEOUT); "
        "the server is too slow or is holding the connection open")
    assert elapsed < 60  # not --timeout's 300 s, nor for ever


def test_a_wheel_dripping_one_byte_every_2_s_ends_at_the_answer_deadline(tmp_path: Path) -> None:
    with drip_server(2.0, body=True) as drip:
        _page(tmp_path, f"{drip.endpoint}/{STABLE}")
        with _serve(tmp_path) as index:
            result, elapsed = _command("--index-url", f"{index}/simple/", "img2gray-cu130")
    assert _one_error(result) == (
        f"error: {drip.endpoint}/{STABLE}: no complete answer within 3 s (KERNELWHEEL_INDEX_TIMEOUT); the server is "
        "too slow or is holding the connection open")
    assert elapsed < 60


def test_a_bad_answer_timeout_is_one_line() -> None:
    result, _ = _command("--index-url", "http://127.0.0.1:9/simple/", "img2gray-cu130", answer_s="soon")
    assert _one_error(result) == (
        "error: KERNELWHEEL_INDEX_TIMEOUT: expected a positive number of seconds, at most 86400, got 'soon'")


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the client's temporary files go, to see that none is left."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _target() -> Environment:
    """A CUDA 13.0 torch 2.14.1 that accepts the stand-in wheels' tags."""
    return Environment("/env/bin/python", Version("3.11.7"), Version("2.14.1"),
                       frozenset({"cp39-abi3-manylinux_2_28_x86_64"}), Version("13.0"))


def test_a_wheel_that_never_ends_is_refused_as_it_passes_the_cap_and_leaves_no_file(
        tmp_path: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client, "_MAX_WHEEL_BYTES", 8 << 20)
    _page(tmp_path / "index", f"../../{STABLE}")
    with _serve(tmp_path / "index", _Flood) as index, pytest.raises(InvalidWheel) as caught:
        plan_install(f"{index}/simple/", "img2gray-cu130", _target())
    assert str(caught.value) == f"{index}/{STABLE}: the wheel {STABLE} is over 8 MiB, refusing it"
    assert list(scratch.iterdir()) == []


def test_a_wheel_is_checked_against_the_page_hash_as_it_arrives_and_leaves_no_file(
        tmp_path: Path, scratch: Path) -> None:
    root = tmp_path / "index"
    wheel = standin.write_standin(root, torch="2.14")
    (root / STABLE).write_bytes(wheel.read_bytes())
    right = hashlib.sha256(wheel.read_bytes()).hexdigest()
    _page(root, f"../../{STABLE}#sha256={'0' * 64}")
    with _serve(root) as index, pytest.raises(DigestMismatch, match=f"sha256 {right}, the page says 0+"):
        plan_install(f"{index}/simple/", "img2gray-cu130", _target())
    assert list(scratch.iterdir()) == []
