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
  deadline the socket is shut down, which wakes the read blocked on it. A request on a kept-alive connection has no
  new socket to watch: at its deadline every idle kept-alive socket to that server is shut down, the one it waits on
  among them (a server that answered a HEAD and then kept sending bytes on that connection held the next request
  for ever). Requests through an environment proxy are not bounded (httpx builds those transports itself); they
  still have huggingface_hub's per-read timeouts.

A server that did not answer in time, or refused the connection, is not asked again until ``forget_unanswered()``
(a command calls it when it starts): each later request to it fails at once, as does the revision probe's
(``unanswered``), so a run against a Hub that never answers waits one deadline, not one per request and retry.
Both failures are huggingface_hub's ``OfflineModeIsEnabled``, which its callers read as "the Hub cannot be reached"
(cache fallback) and its retry loops do not retry: huggingface_hub retried a refused connection five times, 1 to
8 s apart (23-47 s for one error), and a timeout as often, each try waiting its deadline again.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import urllib.parse
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


def origin(url: str) -> str:
    """``scheme://host:port`` of ``url`` (the port spelled out): the server a request goes to."""
    parts = urllib.parse.urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


_state = threading.Lock()
_unanswered: dict[str, str] = {}  # origin → why it is not asked again
_idle: dict[str, set[socket.socket]] = {}  # origin → sockets of kept-alive connections between two answers


def note_unanswered(url: str, reason: str) -> None:
    """The server of ``url`` did not answer (``reason``: "no complete answer within 10 s"): not asked again."""
    with _state:
        _unanswered.setdefault(origin(url), reason)


def unanswered(url: str) -> str | None:
    """Why the server of ``url`` is not asked again (``note_unanswered``), or None."""
    with _state:
        return _unanswered.get(origin(url))


def forget_unanswered() -> None:
    """Ask every server again (a command starts: what an earlier run in this process found no longer counts)."""
    with _state:
        _unanswered.clear()


_TIMER_SLACK_S = 0.05  # a socket timeout of the deadline's length may fire this much before the watchdog's timer


def _seconds(value: float) -> str:
    return f"{round(value, 1):g}"


def _socket_of(stream: Any) -> socket.socket | None:
    sock = stream.get_extra_info("socket") if hasattr(stream, "get_extra_info") else None
    return sock if isinstance(sock, socket.socket) else None


def _idle_again(where: str, sock: socket.socket | None) -> None:
    """An answer on ``sock`` ended: its connection may wait in the pool for the next request."""
    if sock is not None:
        with _state:
            idle = _idle.setdefault(where, set())
            idle.difference_update([known for known in idle if known.fileno() == -1])  # closed by the pool since
            idle.add(sock)


def _taken(where: str, sock: socket.socket | None) -> None:
    if sock is not None:
        with _state:
            _idle.get(where, set()).discard(sock)


def _shut_idle(where: str) -> None:
    """Shut down every idle kept-alive socket to ``where`` (one of them holds a request past its deadline)."""
    with _state:
        sockets = [sock for sock in _idle.pop(where, set()) if sock.fileno() != -1]
    for sock in sockets:
        _Watchdog.shut(sock)


class _Watchdog:
    """Shuts down the sockets of one request when its deadline passes, which wakes a read blocked on them, and notes
    the server as not answering. One thread per request, whose deadline can move (the body's grows with the bytes
    received)."""

    def __init__(self, where: str) -> None:
        self._where = where
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
                    note_unanswered(self._where, self.reason())
                    for sock in self._sockets:
                        self.shut(sock)
                    if not self._sockets:  # a kept-alive connection's: not known which, so every idle one
                        _shut_idle(self._where)
                    return
                self._lock.wait(left)

    def reason(self) -> str:
        return f"no complete answer within {_seconds(self.expired_after or 0.0)} s"

    def expired(self) -> bool:
        """Whether the deadline has passed: this watchdog fired, or a read or connect timeout as long as the deadline
        (``_cap_timeouts``) fired first, which is the same fact (and is noted the same way)."""
        with self._lock:
            if self.expired_after is None and self._deadline is not None \
                    and time.monotonic() >= self._deadline - _TIMER_SLACK_S:
                self.expired_after = self._seconds
                note_unanswered(self._where, self.reason())
            return self.expired_after is not None

    def watch(self, sock: socket.socket | None) -> None:
        if sock is not None:
            with self._lock:
                self._sockets.append(sock)
                if self.expired_after is not None:
                    self.shut(sock)

    @staticmethod
    def shut(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _unreachable(request: httpx2.Request, reason: str) -> Exception:
    """huggingface_hub's ``OfflineModeIsEnabled``: its callers read it as "the Hub cannot be reached" (cache
    fallback) as they read a failed connect or a timeout, but its retry loops do not retry it."""
    from huggingface_hub.errors import OfflineModeIsEnabled

    where = request.url.host if request.url.port is None else f"{request.url.host}:{request.url.port}"
    return OfflineModeIsEnabled(f"{where}: {reason}")


def _make_transport() -> httpx2.HTTPTransport:
    import httpx2

    class _Body(httpx2.SyncByteStream):
        def __init__(self, inner: httpx2.SyncByteStream, watchdog: _Watchdog, request: httpx2.Request,
                     sock: socket.socket | None) -> None:
            self._inner, self._watchdog, self._request, self._sock = inner, watchdog, request, sock

        def __iter__(self) -> Iterator[bytes]:
            start, received = time.monotonic(), 0
            try:
                for chunk in self._inner:
                    if self._watchdog.expired_after is not None:
                        raise _unreachable(self._request, self._watchdog.reason())
                    received += len(chunk)
                    # The deadline grows with what came: a body slower than MIN_BYTES_PER_S on average ends.
                    allowed = body_grace_s() + received / MIN_BYTES_PER_S
                    self._watchdog.arm(allowed - (time.monotonic() - start), allowed)
                    yield chunk
            except httpx2.TransportError:
                if self._watchdog.expired():
                    raise _unreachable(self._request, self._watchdog.reason()) from None
                raise

        def close(self) -> None:
            self._watchdog.disarm()
            self._inner.close()
            if self._watchdog.expired_after is None:
                _idle_again(origin(str(self._request.url)), self._sock)

    class DeadlineTransport(httpx2.HTTPTransport):
        """httpx's own transport, with ``answer_deadline``'s deadlines on every answer."""

        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            where = origin(str(request.url))
            why = unanswered(where)
            if why is not None:
                raise _unreachable(request, f"{why}, to an earlier request (not asked again)")
            watchdog, limit = _Watchdog(where), headers_s()
            _trace_sockets(request, watchdog)
            _cap_timeouts(request, limit)
            watchdog.arm(limit)
            try:
                response = super().handle_request(request)
            except httpx2.TransportError as exc:
                watchdog.disarm()
                if watchdog.expired():
                    raise _unreachable(request, watchdog.reason()) from None
                if _refused(exc):
                    raise _refusal(request, exc) from exc
                raise
            sock = _socket_of(response.extensions.get("network_stream"))
            _taken(where, sock)
            watchdog.watch(sock)
            watchdog.arm(body_grace_s())
            assert isinstance(response.stream, httpx2.SyncByteStream)
            response.stream = _Body(response.stream, watchdog, request, sock)
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
    """A refused connection, not retried and noted (``note_unanswered``): a refused connect is an answer, not a
    lost packet."""
    text = str(exc).strip()
    reason = text.splitlines()[0] if text else type(exc).__name__
    note_unanswered(str(request.url), reason)
    return _unreachable(request, f"{reason} (not retried: nothing listens there)")


def _trace_sockets(request: httpx2.Request, watchdog: _Watchdog) -> None:
    """Watch the socket of a connection opened for ``request`` (httpcore's documented ``trace`` extension)."""
    previous = request.extensions.get("trace")

    def trace(event: str, info: dict[str, Any]) -> None:
        if event.endswith((".connect_tcp.complete", ".start_tls.complete")):
            watchdog.watch(_socket_of(info.get("return_value")))
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
