"""Servers the tests start on 127.0.0.1 (pypiserver, http.server, olah): a free port, then start, wait, stop; an
http.server handler served from a thread of the test process; a body that never ends; and a port that takes
connections and never answers."""

from __future__ import annotations

import contextlib
import http.server
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` different ports free on 127.0.0.1 now: all held open until all are chosen (one at a time, the system
    may hand the same port out twice)."""
    with contextlib.ExitStack() as held:
        sockets = [held.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


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


@contextlib.contextmanager
def in_thread(handler: Callable[..., http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` served on 127.0.0.1 by a ThreadingHTTPServer in a daemon thread; yields ``http://127.0.0.1:<port>``
    and stops the server on leaving (a connection still being answered is left to its daemon thread)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def send_endless_body(handler: http.server.BaseHTTPRequestHandler, chunk: bytes,
                      content_type: str = "application/octet-stream") -> None:
    """Answer 200 with a chunked body of ``chunk`` repeated for ever, as fast as the client reads, until it hangs
    up (what a size limit is for); ``handler`` must speak HTTP/1.1."""
    handler.send_response(200)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    with contextlib.suppress(OSError):  # the client hung up
        while True:
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))


@dataclass
class SilentServer:
    endpoint: str
    connections: list[socket.socket] = field(default_factory=list)


@contextlib.contextmanager
def silent_server() -> Iterator[SilentServer]:
    """A port on 127.0.0.1 that accepts every connection and never answers (a server behind a network that drops
    its replies); ``connections`` holds what it accepted."""
    listener = socket.create_server(("127.0.0.1", 0))
    server = SilentServer(f"http://127.0.0.1:{listener.getsockname()[1]}")

    def accept() -> None:
        with contextlib.suppress(OSError):  # the listener shut down
            while True:
                server.connections.append(listener.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield server
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        listener.close()
        for connection in server.connections:
            connection.close()


@dataclass
class DripServer:
    endpoint: str
    connections: list[socket.socket] = field(default_factory=list)


@contextlib.contextmanager
def drip_server(interval_s: float = 2.0, *, body: bool = False) -> Iterator[DripServer]:
    """A port on 127.0.0.1 whose every connection gets one byte every ``interval_s`` seconds, for ever: response
    headers that never end, or (``body``) complete headers of a 200 whose body never ends. A read timeout longer
    than ``interval_s`` never fires on it; only a deadline for the whole answer ends the wait."""
    listener = socket.create_server(("127.0.0.1", 0))
    server = DripServer(f"http://127.0.0.1:{listener.getsockname()[1]}")
    stop = threading.Event()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    lead = head + b"Content-Length: 1000000000\r\n\r\n" if body else head + b"X-Drip: "

    def serve(connection: socket.socket) -> None:
        with contextlib.suppress(OSError):  # the client hung up
            connection.recv(65536)
            connection.sendall(lead)
            while not stop.wait(interval_s):
                connection.sendall(b"x")  # a header value (or a body) that never ends

    def accept() -> None:
        with contextlib.suppress(OSError):  # the listener shut down
            while True:
                connection = listener.accept()[0]
                server.connections.append(connection)
                threading.Thread(target=serve, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield server
    finally:
        stop.set()
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        for connection in server.connections:
            connection.close()
