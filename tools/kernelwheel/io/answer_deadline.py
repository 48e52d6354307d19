"""One deadline for each whole network answer (connect, headers, body), however slowly a server sends it.

A read timeout bounds the wait for each piece of an answer, not the answer: a server that sends one header byte every
2 s is never "timed out", and ``hub2wheel --revision main`` against one ran for ever. Two mechanisms here:

* ``call_within(seconds, work)`` runs a stdlib request (``revision_probe``'s HEAD) on a daemon thread and stops
  waiting for it at the deadline: ``TimeoutError``. The abandoned thread holds no file and ends with its socket.
  ``call_with_deadline`` does the same for reading a package index (``install_plan.plan_install``, every request
  together), ending in ``IndexUnreachable``.
* ``bound_huggingface_hub()`` gives huggingface_hub (through its public ``set_client_factory``) an httpx client whose
  transport ends every answer at its deadline: connect, request and response headers within ``headers_s()`` (the
  larger of ``HF_HUB_ETAG_TIMEOUT`` and ``HF_HUB_DOWNLOAD_TIMEOUT``, its own settings, so users tune one thing), the
  body within ``HF_HUB_DOWNLOAD_TIMEOUT`` plus the time its bytes so far take at ``MIN_BYTES_PER_S`` (a body that
  drips, whatever its ``Content-Length`` claims, ends ``HF_HUB_DOWNLOAD_TIMEOUT`` after its headers). At the
  deadline the socket is shut down and the call raises ``httpx.ReadTimeout``, which huggingface_hub reads as "the
  Hub cannot be reached" (cache fallback) as it reads its own timeouts. Not bounded by it:
  the response headers of a request on a kept-alive connection (no new socket to watch; the connection's first
  answer already came within its deadline) and requests through an environment proxy (httpx builds those
  transports itself); both still have huggingface_hub's per-read timeouts.

A refused connection is not retried (``_refusal``): huggingface_hub retried it five times, 1 to 8 s apart, so a run
against a Hub that is down waited 23-47 s for its one error; it now fails (or falls back to the cache) at once.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from kernelwheel.io.errors import IndexUnreachable

if TYPE_CHECKING:
    import httpx2

T = TypeVar("T")
# A download slower than this is as good as stalled: 1 GiB still gets 4.5 hours.
MIN_BYTES_PER_S = 64 * 1024


def call_within(seconds: float, work: Callable[[], T], what: str = "the answer") -> T:
    """``work()``'s result or exception, or ``TimeoutError`` once ``seconds`` passed without one."""
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the caller's thread as it is
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, daemon=True, name="answer-deadline").start()
    if not done.wait(seconds):
        raise TimeoutError(f"no complete {what} within {seconds:g} s")
    if "error" in outcome:
        raise outcome["error"]
    value: T = outcome["value"]
    return value


def call_with_deadline(work: Callable[[], T], seconds: float, what: str, shown_s: float | None = None) -> T:
    """``work()``, or ``IndexUnreachable`` once ``seconds`` have passed without it finishing (the message names
    ``shown_s``, the whole deadline, when the caller has spent part of it already).

    requests' timeouts bound each read, not a whole answer: a server sending a byte every few seconds never
    trips them. So the work runs in a daemon thread; past the deadline it is abandoned (it holds no files, and
    the process exit ends it) and the caller gets the error at once.
    """
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=run, name="index-reader", daemon=True)
    worker.start()
    worker.join(max(seconds, 0.0))
    if worker.is_alive():
        limit = shown_s if shown_s is not None else seconds
        raise IndexUnreachable(
            f"{what}: no complete answer within {limit:g} s (the deadline for reading the index, --timeout); "
            "the server is too slow or is holding the connection open. Nothing was installed"
        )
    if failure:
        raise failure[0]
    return outcome[0]


def headers_s() -> float:
    """Seconds from a request to its complete response headers: huggingface_hub's own timeouts, read at call time."""
    from huggingface_hub import constants

    return float(max(constants.HF_HUB_ETAG_TIMEOUT, constants.HF_HUB_DOWNLOAD_TIMEOUT))


def body_grace_s() -> float:
    """Seconds a body may take before its first byte, on top of the time its bytes take at MIN_BYTES_PER_S."""
    from huggingface_hub import constants

    return float(constants.HF_HUB_DOWNLOAD_TIMEOUT)


class _Watchdog:
    """Shuts down the sockets of one request when its deadline passes, which wakes a read blocked on them. One
    thread per request, whose deadline can move (the body's grows with the bytes received)."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._sockets: list[socket.socket] = []
        self._deadline: float | None = None
        self._seconds = 0.0
        self._closed = False
        self.expired_after: float | None = None
        threading.Thread(target=self._run, daemon=True, name="answer-deadline").start()

    def arm(self, seconds: float, shown: float | None = None) -> None:
        with self._lock:
            self._deadline, self._seconds = time.monotonic() + seconds, seconds if shown is None else shown
            self._lock.notify()

    def disarm(self) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify()

    def _run(self) -> None:
        with self._lock:
            while not self._closed:
                left = None if self._deadline is None else self._deadline - time.monotonic()
                if left is not None and left <= 0:
                    self.expired_after = self._seconds
                    for sock in self._sockets:
                        self._shut(sock)
                    return
                self._lock.wait(left)

    def watch(self, stream: Any) -> None:
        sock = stream.get_extra_info("socket") if hasattr(stream, "get_extra_info") else None
        if isinstance(sock, socket.socket):
            with self._lock:
                self._sockets.append(sock)
                if self.expired_after is not None:
                    self._shut(sock)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _timeout_error(request: httpx2.Request, seconds: float) -> httpx2.ReadTimeout:
    import httpx2

    return httpx2.ReadTimeout(f"no complete answer from {request.url.host} within {seconds:g} s", request=request)


def _make_transport() -> httpx2.HTTPTransport:
    import httpx2

    class _Body(httpx2.SyncByteStream):
        def __init__(self, inner: httpx2.SyncByteStream, watchdog: _Watchdog, request: httpx2.Request) -> None:
            self._inner, self._watchdog, self._request = inner, watchdog, request

        def __iter__(self) -> Iterator[bytes]:
            start, received = time.monotonic(), 0
            try:
                for chunk in self._inner:
                    if self._watchdog.expired_after is not None:
                        raise _timeout_error(self._request, self._watchdog.expired_after)
                    received += len(chunk)
                    # The deadline grows with what came: a body slower than MIN_BYTES_PER_S on average ends.
                    allowed = body_grace_s() + received / MIN_BYTES_PER_S
                    self._watchdog.arm(allowed - (time.monotonic() - start), allowed)
                    yield chunk
            except httpx2.TransportError:
                if self._watchdog.expired_after is not None:
                    raise _timeout_error(self._request, self._watchdog.expired_after) from None
                raise

        def close(self) -> None:
            self._watchdog.disarm()
            self._inner.close()

    class DeadlineTransport(httpx2.HTTPTransport):
        """httpx's own transport, with ``answer_deadline``'s deadlines on every answer."""

        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            watchdog, limit = _Watchdog(), headers_s()
            _trace_sockets(request, watchdog)
            _cap_timeouts(request, limit)
            watchdog.arm(limit)
            try:
                response = super().handle_request(request)
            except httpx2.TransportError as exc:
                watchdog.disarm()
                if watchdog.expired_after is not None:
                    raise _timeout_error(request, watchdog.expired_after) from None
                if _refused(exc):
                    raise _refusal(request, exc) from exc
                raise
            watchdog.watch(response.extensions.get("network_stream"))
            watchdog.arm(body_grace_s())
            assert isinstance(response.stream, httpx2.SyncByteStream)
            response.stream = _Body(response.stream, watchdog, request)
            return response

    return DeadlineTransport()


def _refused(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a refused connection: nothing listens at the address."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _refusal(request: httpx2.Request, exc: BaseException) -> Exception:
    """A refused connection as huggingface_hub's ``OfflineModeIsEnabled``: its callers read it as "the Hub cannot be
    reached" (cache fallback) as they read a failed connect, but its retry loop does not retry it. Retrying a
    refusal (five times, 1 to 8 s apart) only made a run against a Hub that is down wait 23-47 s for its one error:
    a refused connect is an answer, not a lost packet."""
    from huggingface_hub.errors import OfflineModeIsEnabled

    where = request.url.host if request.url.port is None else f"{request.url.host}:{request.url.port}"
    text = str(exc).strip()
    reason = text.splitlines()[0] if text else type(exc).__name__
    return OfflineModeIsEnabled(f"{where}: {reason} (not retried: nothing listens there)")


def _trace_sockets(request: httpx2.Request, watchdog: _Watchdog) -> None:
    """Watch the socket of a connection opened for ``request`` (httpcore's documented ``trace`` extension)."""
    previous = request.extensions.get("trace")

    def trace(event: str, info: dict[str, Any]) -> None:
        if event.endswith((".connect_tcp.complete", ".start_tls.complete")):
            watchdog.watch(info.get("return_value"))
        if previous is not None:
            previous(event, info)

    request.extensions["trace"] = trace


def _cap_timeouts(request: httpx2.Request, limit: float) -> None:
    """No single wait longer than the whole deadline (huggingface_hub's client has no default timeout)."""
    given = request.extensions.get("timeout") or {}
    request.extensions["timeout"] = {
        key: limit if given.get(key) is None else min(float(given[key]), limit)
        for key in ("connect", "read", "write", "pool")}


def _offline_refusal(request: httpx2.Request) -> None:
    """What huggingface_hub's own client does first: no request at all in offline mode (``HF_HUB_OFFLINE``), with
    its public error, so its callers fall back to the cache as they do with its default client. Written here from
    public names: the default client's event hook lives in a private module."""
    from huggingface_hub import constants
    from huggingface_hub.errors import OfflineModeIsEnabled

    if constants.HF_HUB_OFFLINE:
        raise OfflineModeIsEnabled(f"Cannot reach {request.url}: offline mode is enabled (HF_HUB_OFFLINE)")


def _client_factory() -> httpx2.Client:
    """huggingface_hub's default client (redirects followed, no client-wide timeout), with the deadline transport."""
    import httpx2

    return httpx2.Client(event_hooks={"request": [_offline_refusal]}, follow_redirects=True, timeout=None,
                         transport=_make_transport())


_installed = False


def bound_huggingface_hub() -> None:
    """Make every request huggingface_hub sends from now on end at its deadline (see the module docstring)."""
    global _installed
    if _installed:
        return
    from huggingface_hub import set_client_factory

    set_client_factory(_client_factory)
    _installed = True
