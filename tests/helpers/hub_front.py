"""A small HTTP server on 127.0.0.1 in front of an olah Hub: it answers what olah 0.5.4 cannot, an owner's list of
models (``GET /api/models?author=ORG``, answered with a body olah leaves empty), as the Hub API does, from the
repositories olah serves; everything else it passes to olah unchanged. A test may also hold the requests for a
repository's files (``Gate``), to keep a run at a known point while another process acts."""

from __future__ import annotations

import contextlib
import http.client
import http.server
import json
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.servers import in_thread

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass
class Gate:
    """Requests for files (``/resolve/``) of a repository whose id contains one of ``held`` wait for ``opened``;
    ``reached`` is set when the first such request arrives."""

    held: set[str] = field(default_factory=set)
    opened: threading.Event = field(default_factory=threading.Event)
    reached: threading.Event = field(default_factory=threading.Event)

    def holds(self, path: str) -> bool:
        return "/resolve/" in path and any(f"/{repo}/" in path for repo in self.held)


def model_listing(mirrors: Path, author: str) -> list[dict[str, object]]:
    """``GET /api/models?author=`` as the Hub answers it: one object per model repository of ``author`` (id, author,
    tags, ...), sorted by id."""
    owner = mirrors / "models" / author
    names = sorted(p.name for p in owner.iterdir() if p.is_dir()) if owner.is_dir() else []
    return [{"_id": f"{index:024x}", "id": f"{author}/{name}", "modelId": f"{author}/{name}", "author": author,
             "private": False, "likes": 0, "downloads": 0, "tags": [], "createdAt": "2026-01-01T00:00:00.000Z"}
            for index, name in enumerate(names)]


@contextlib.contextmanager
def hub_front(olah: str, mirrors: Path, gate: Gate | None = None) -> Iterator[str]:
    """Serve the front on 127.0.0.1; yields its endpoint (``HF_ENDPOINT`` for the client)."""
    upstream = urllib.parse.urlsplit(olah)
    endpoint: list[str] = []

    class Front(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes, length: str | None) -> None:
            self.send_response(status)
            for name, value in headers:
                if name.lower() not in _HOP_BY_HOP:
                    self.send_header(name, value.replace(olah, endpoint[0]))
            self.send_header("Content-Length", length if self.command == "HEAD" and length else str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _forward(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query)
            if self.command == "GET" and url.path == "/api/models" and "author" in query:
                body = json.dumps(model_listing(mirrors, query["author"][0])).encode()
                self._answer(200, [("Content-Type", "application/json")], body, None)
                return
            if gate is not None and gate.holds(url.path):
                gate.reached.set()
                gate.opened.wait(timeout=300)
            size = int(self.headers.get("Content-Length") or 0)
            sent = self.rfile.read(size) if size else None
            connection = http.client.HTTPConnection(upstream.hostname or "127.0.0.1", upstream.port, timeout=120)
            try:
                connection.request(self.command, self.path, body=sent,
                                   headers={k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP})
                answer = connection.getresponse()
                body = answer.read()
                self._answer(answer.status, answer.getheaders(), body, answer.getheader("Content-Length"))
            finally:
                connection.close()

        do_GET = do_HEAD = do_POST = _forward

    with in_thread(Front) as url:
        endpoint.append(url)
        yield url
