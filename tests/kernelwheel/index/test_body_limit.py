"""tools/kernelwheel/index/body_limit.py: answers refused past a byte limit, through a real requests session and server."""

from __future__ import annotations

import contextlib
import gzip
import http.server
from collections.abc import Iterator

import pytest
import requests

from kernelwheel.index.body_limit import mount_body_limit
from kernelwheel.io.errors import IndexUnreachable, ToolError
from tests.helpers.servers import in_thread, send_endless_body

LIMIT = 1 << 20


class _Handler(http.server.BaseHTTPRequestHandler):
    """/exact/N: N bytes with a Content-Length; /gzip/N: N zero bytes gzip-encoded (a few KiB on the wire);
    /endless: a chunked body that never ends."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        kind, _, size = self.path.strip("/").partition("/")
        if kind == "endless":
            return send_endless_body(self, b"x" * 65536)
        body = b"y" * int(size) if kind == "exact" else gzip.compress(bytes(int(size)))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        if kind == "gzip":
            self.send_header("Content-Encoding", "gzip")
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(body)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with in_thread(_Handler) as url:
        yield url


def _too_large(url: str) -> ToolError:
    return IndexUnreachable(f"{url}: over the limit")


@pytest.fixture
def session() -> Iterator[requests.Session]:
    with requests.Session() as limited:
        mount_body_limit(limited, LIMIT, _too_large)
        yield limited


def test_an_answer_up_to_the_limit_is_read_whole(server: str, session: requests.Session) -> None:
    assert session.get(f"{server}/exact/{LIMIT}", timeout=10).content == b"y" * LIMIT
    assert session.get(f"{server}/gzip/{LIMIT}", timeout=10).content == bytes(LIMIT)


@pytest.mark.parametrize("path", [f"exact/{LIMIT + 1}", f"gzip/{64 * LIMIT}", "endless"])
def test_a_larger_answer_is_refused_while_it_is_read(server: str, session: requests.Session, path: str) -> None:
    """Read whole (pypi-simple's pages) or streamed (wheels): the limit counts decoded bytes, so 64 MiB of zeros sent
    as 64 KiB of gzip is refused too, and an endless body ends at the limit instead of filling memory."""
    with pytest.raises(IndexUnreachable, match=rf"^{server}/{path}: over the limit$"):
        session.get(f"{server}/{path}", timeout=10)
    with pytest.raises(IndexUnreachable), session.get(f"{server}/{path}", stream=True, timeout=10) as response:
        received = sum(len(chunk) for chunk in response.iter_content(1 << 16))
        pytest.fail(f"read {received} bytes past a {LIMIT}-byte limit")


def test_a_session_without_the_limit_reads_what_the_limited_one_refuses(server: str) -> None:
    """The control: the refusals above come from mount_body_limit, not from the server or requests."""
    with requests.Session() as plain:
        assert len(plain.get(f"{server}/gzip/{64 * LIMIT}", timeout=10).content) == 64 * LIMIT
