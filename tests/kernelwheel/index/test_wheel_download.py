"""kernelwheel.index.wheel_download: a wheel streamed to a checked temporary file, within its deadline and cap.

``python -m tools.cli.install_command`` against loopback servers: an index whose wheel (read when neither a
``.metadata`` file nor a ``+torchX.Y`` label says its torch) drips one byte every 2 s. A read timeout (30 s) never
fires on it; the per-answer deadline (``KERNELWHEEL_INDEX_TIMEOUT``) must, well before the command's own
``--timeout``. The wheel's size cap and hash are checked as its bytes arrive (``plan_install``, the library function
the command calls, with the cap lowered so that the test does not send 2 GiB).
"""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.version import Version

from kernelwheel.index import wheel_download
from kernelwheel.index.install_plan import plan_install
from kernelwheel.index.target_environment import Environment
from kernelwheel.io.errors import DigestMismatch, InvalidWheel
from tests.helpers import standin_wheels as standin
from tests.helpers.index_servers import QuietHandler, one_error, serve, timed_install_command
from tests.helpers.servers import drip_server, send_endless_body

STABLE = "img2gray_cu130-0.3.0-cp39-abi3-manylinux_2_28_x86_64.whl"  # no +torch label: the wheel itself is read


class _Flood(QuietHandler):
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
def _serve(root: Path, handler: type[QuietHandler] = QuietHandler) -> Iterator[str]:
    """``root`` over http.server on loopback (``index_servers.serve``); yields its ``http://127.0.0.1:<port>``."""
    with serve(root, handler) as host:
        yield f"http://{host}"


@pytest.mark.needs_torch  # plans for this interpreter, whose torch decides the wheel
def test_a_wheel_dripping_one_byte_every_2_s_ends_at_the_answer_deadline(tmp_path: Path) -> None:
    with drip_server(2.0, body=True) as drip:
        _page(tmp_path, f"{drip.endpoint}/{STABLE}")
        with _serve(tmp_path) as index:
            result, elapsed = timed_install_command("--index-url", f"{index}/simple/", "img2gray-cu130")
    assert one_error(result) == (
        f"error: {drip.endpoint}/{STABLE}: no complete answer within 3 s (KERNELWHEEL_INDEX_TIMEOUT); the server is "
        "too slow or is holding the connection open")
    assert elapsed < 60


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
    monkeypatch.setattr(wheel_download, "_MAX_WHEEL_BYTES", 8 << 20)
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
