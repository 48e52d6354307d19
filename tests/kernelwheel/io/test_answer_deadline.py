"""kernelwheel.io.answer_deadline: huggingface_hub's requests through the deadline transport, against real servers on
127.0.0.1 (through huggingface_hub's public ``get_session``, the client every one of its calls uses)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from huggingface_hub import constants as hf_constants
from huggingface_hub import get_session
from huggingface_hub.errors import OfflineModeIsEnabled

from kernelwheel.io import answer_deadline
from tests.helpers.servers import silent_server


@pytest.fixture(autouse=True)
def one_second_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hf_constants, "HF_HUB_ETAG_TIMEOUT", 1)
    monkeypatch.setattr(hf_constants, "HF_HUB_DOWNLOAD_TIMEOUT", 1)
    answer_deadline.bound_huggingface_hub()


@contextlib.contextmanager
def _head_then_drip() -> Iterator[tuple[str, list[socket.socket]]]:
    """Each connection: a complete answer to its first request (a HEAD: headers, no body), then, 0.3 s later, one
    byte every 0.2 s on the same connection. A second request on it, kept alive, reads those bytes as the start of
    its answer's status line, which never ends; no read waits a whole second."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve(connection: socket.socket) -> None:
        with contextlib.suppress(OSError):
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nX-Repo-Commit: none\r\n\r\n")
            stop.wait(0.3)
            while not stop.wait(0.2):
                connection.sendall(b"x")

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                connection = listener.accept()[0]
                accepted.append(connection)
                threading.Thread(target=serve, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    finally:
        stop.set()
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        for connection in accepted:
            connection.close()


def test_a_request_on_a_kept_alive_connection_ends_at_its_deadline() -> None:
    """The second request went out on the connection the HEAD left in the pool, with no new socket for the deadline
    to watch, and waited for ever for the end of a status line arriving a byte every 0.2 s."""
    with _head_then_drip() as (url, accepted):
        assert get_session().head(f"{url}/first").status_code == 200
        start = time.monotonic()
        with pytest.raises(OfflineModeIsEnabled, match=r"127\.0\.0\.1:\d+: no complete answer within 1 s"):
            get_session().get(f"{url}/second")
        assert time.monotonic() - start < 5
        assert len(accepted) == 1  # the second request did go out on the kept-alive connection


def test_a_server_that_did_not_answer_is_not_asked_again_until_forgotten() -> None:
    with silent_server() as hub:
        start = time.monotonic()
        with pytest.raises(OfflineModeIsEnabled, match=r"no complete answer within 1 s$"):
            get_session().get(f"{hub.endpoint}/api/models/org/x/refs")
        assert time.monotonic() - start < 5 and len(hub.connections) == 1
        assert answer_deadline.unanswered(f"{hub.endpoint}/anything") == "no complete answer within 1 s"
        start = time.monotonic()
        with pytest.raises(OfflineModeIsEnabled, match=r"within 1 s, to an earlier request \(not asked again\)"):
            get_session().get(f"{hub.endpoint}/api/models/org/x/refs")
        assert time.monotonic() - start < 0.5 and len(hub.connections) == 1  # no new connection
        answer_deadline.forget_unanswered()
        with pytest.raises(OfflineModeIsEnabled):
            get_session().get(f"{hub.endpoint}/api/models/org/x/refs")
        assert len(hub.connections) == 2


def test_a_refused_connection_is_not_retried_and_not_asked_again() -> None:
    with socket.create_server(("127.0.0.1", 0)) as held:
        url = f"http://127.0.0.1:{held.getsockname()[1]}"
    start = time.monotonic()  # nothing listens there now: every connection is refused
    with pytest.raises(OfflineModeIsEnabled, match=r"Connection refused \(not retried: nothing listens there\)"):
        get_session().get(f"{url}/api/models/org/x/refs")
    assert time.monotonic() - start < 1
    assert "Connection refused" in (answer_deadline.unanswered(url) or "")


def test_origins_name_the_port_even_when_the_url_does_not() -> None:
    assert answer_deadline.origin("https://HF.co/api/x") == "https://hf.co:443"
    assert answer_deadline.origin("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
