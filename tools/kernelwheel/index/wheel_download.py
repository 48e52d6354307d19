"""A wheel an index links to, as a file: hashed as its bytes arrive, refused past a size cap or its deadline."""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

import requests

from kernelwheel.index.client import (
    TIMEOUT_S,
    Candidate,
    answer_s,
    check_scheme,
    late,
    mismatch,
    pypi_simple_client,
    unreachable,
)
from kernelwheel.io.answer_deadline import MIN_BYTES_PER_S
from kernelwheel.io.errors import DigestMismatch, IndexUnreachable, InvalidWheel, ToolError, one_line
from kernelwheel.io.urls import redact

# A wheel is downloaded (to a temporary file, its sha256 checked as it arrives) only when neither a PEP 658 file nor
# a +torchX.Y label says its torch; one larger than this is refused as soon as it passes it.
_MAX_WHEEL_BYTES = 2 << 30


class _Download:
    """Where a wheel's bytes go as they arrive: a file, the page's hashes and a byte count updated on the way, so
    that neither the size cap nor a hash needs the whole wheel in memory."""

    def __init__(self, sink: IO[bytes] | None, digests: Mapping[str, str], url: str, what: str,
                 too_large: Callable[[str], ToolError]) -> None:
        known = {alg: value for alg, value in digests.items() if alg in hashlib.algorithms_available}
        if digests and not known:
            raise DigestMismatch(f"{redact(url)}: the {what} has no hash this tool can check ({', '.join(digests)})")
        self._sink, self._expected, self._url, self._what, self._too_large = sink, known, url, what, too_large
        self._hashes = {alg: hashlib.new(alg) for alg in known}
        self.received = 0  # read by the deadline's loop in another thread: a plain int, written here only
        self.cancelled = threading.Event()

    def add(self, chunks: Iterable[bytes]) -> None:
        for chunk in chunks:
            if self.cancelled.is_set():
                raise IndexUnreachable(f"{redact(self._url)}: abandoned at its deadline")
            if self.received + len(chunk) > _MAX_WHEEL_BYTES:
                raise self._too_large(self._url)
            for hasher in self._hashes.values():
                hasher.update(chunk)
            if self._sink is not None:
                self._sink.write(chunk)
            self.received += len(chunk)

    def check(self) -> None:
        """Refuse the bytes received unless they have every hash the page gives."""
        for algorithm, hasher in self._hashes.items():
            if hasher.hexdigest() != self._expected[algorithm].lower():
                raise mismatch(self._what, self._url, algorithm, self._expected[algorithm], hasher.hexdigest())


def _within_growing(url: str, download: _Download, work: Callable[[], None]) -> None:
    """``work()``, a download into ``download``, ended (``IndexUnreachable``) once it has taken longer than
    ``answer_s()`` plus its bytes so far at ``MIN_BYTES_PER_S``: a large wheel gets the time it needs, a drip does
    not. The abandoned download stops at its next chunk (``cancelled``) and its file goes with the caller's folder."""
    base, start = answer_s(), time.monotonic()
    done, failure = threading.Event(), []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # handed to the caller's thread as it is
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, daemon=True, name="index-download").start()
    while True:
        allowed = base + download.received / MIN_BYTES_PER_S
        if done.wait(max(0.0, allowed - (time.monotonic() - start))):
            break
        if time.monotonic() - start >= base + download.received / MIN_BYTES_PER_S:
            download.cancelled.set()
            raise late(url, allowed)
    if failure:
        raise failure[0]


def _local_wheel(url: str, download: _Download, missing: ToolError) -> Path:
    """A file:// wheel where it lies, hashed as it is read (in pieces, never whole in memory)."""
    path = Path(url2pathname(unquote(urlsplit(url).path)))
    try:
        with path.open("rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                raise IndexUnreachable(f"{redact(url)}: not a regular file")
            download.add(iter(lambda: file.read(1 << 20), b""))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        raise missing from None
    except OSError as exc:
        raise IndexUnreachable(f"{redact(url)}: {exc.strerror or exc}") from None
    return path


def download_wheel(candidate: Candidate, folder: Path) -> Path:
    """The candidate's wheel as a file (downloaded into ``folder`` over http(s)), checked against the page's hash
    as its bytes arrived and refused as soon as it passes ``_MAX_WHEEL_BYTES``."""
    url = candidate.url
    what = f"wheel {candidate.filename}"
    missing = IndexUnreachable(f"{redact(url)}: listed on the index but not downloadable (404)")

    def too_large(where: str) -> ToolError:
        cap = f"{_MAX_WHEEL_BYTES >> 30} GiB" if _MAX_WHEEL_BYTES >= 1 << 30 else f"{_MAX_WHEEL_BYTES >> 20} MiB"
        return InvalidWheel(f"{redact(where)}: the {what} is over {cap}, refusing it")

    if check_scheme(url) == "file":
        download = _Download(None, candidate.digests, url, what, too_large)
        path = _local_wheel(url, download, missing)
        download.check()
        return path
    target = folder / "wheel.whl"
    with target.open("wb") as sink:
        download = _Download(sink, candidate.digests, url, what, too_large)

        def fetch() -> None:
            with (pypi_simple_client(url, _MAX_WHEEL_BYTES, too_large) as client,
                  client.s.get(url, stream=True, timeout=TIMEOUT_S) as response):
                if response.status_code == 404:
                    raise missing
                response.raise_for_status()
                download.add(response.iter_content(1 << 16))

        try:
            _within_growing(url, download, fetch)
        except ToolError:
            raise
        except requests.RequestException as exc:
            raise unreachable(url, exc) from None
        except ValueError as exc:
            raise IndexUnreachable(f"{redact(url)}: {one_line(exc)}") from None
    download.check()
    return target
