"""HTTP answers read with a byte limit: what an index may make this tool hold in memory.

Every request already has a deadline (``answer_deadline.call_with_deadline``), but a fast hostile server can send
gigabytes before it. ``mount_body_limit`` puts an adapter on a ``requests.Session`` (pypi-simple's ``PyPISimple.s``)
whose answers refuse to be read past ``limit`` bytes, whether requests reads them whole (``Response.content``, as
pypi-simple does for pages and ``.metadata`` files) or in chunks (``iter_content``): both go through the raw response's
``stream``.
The limit counts the bytes after content decoding, so a small gzip bomb is stopped as early as a large body.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import requests
from requests.adapters import HTTPAdapter

from kernelwheel.io.errors import ToolError

TooLarge = Callable[[str], ToolError]  # the request's URL -> the error to raise


class _LimitedBody:
    """A urllib3 response whose ``stream`` stops with ``too_large(url)`` once more than ``limit`` bytes came."""

    def __init__(self, raw: Any, limit: int, url: str, too_large: TooLarge) -> None:
        self._raw = raw
        self._limit = limit
        self._url = url
        self._too_large = too_large

    def stream(self, amt: int = 1 << 16, decode_content: bool | None = None) -> Iterator[bytes]:
        received = 0
        for chunk in self._raw.stream(amt, decode_content=decode_content):
            received += len(chunk)
            if received > self._limit:
                self._raw.close()
                raise self._too_large(self._url)
            yield chunk

    def __getattr__(self, name: str) -> Any:  # everything else (close, release_conn, headers, ...) is urllib3's
        return getattr(self._raw, name)


class _LimitedAdapter(HTTPAdapter):
    def __init__(self, limit: int, too_large: TooLarge) -> None:
        super().__init__()
        self._limit = limit
        self._too_large = too_large

    def build_response(self, req: requests.PreparedRequest, resp: Any) -> requests.Response:
        response = super().build_response(req, resp)
        response.raw = _LimitedBody(response.raw, self._limit, req.url or "", self._too_large)
        return response


def mount_body_limit(session: requests.Session, limit: int, too_large: TooLarge) -> None:
    """Make every http(s) answer that ``session`` reads refuse bodies over ``limit`` bytes with ``too_large(url)``."""
    adapter = _LimitedAdapter(limit, too_large)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
