"""The index client's answers: one deadline for each whole answer (a wheel's: test_wheel_download.py).

``python -m tools.cli.install_command`` against a loopback server that drips its page one byte every 2 s: a read
timeout (30 s) never fires on it; the per-answer deadline (``KERNELWHEEL_INDEX_TIMEOUT``) must, well before the
command's own ``--timeout``.
"""

from __future__ import annotations

from tests.helpers.index_servers import one_error, timed_install_command
from tests.helpers.servers import drip_server


def test_an_index_page_dripping_one_byte_every_2_s_ends_at_the_answer_deadline() -> None:
    with drip_server(2.0) as drip:
        result, elapsed = timed_install_command("--index-url", f"{drip.endpoint}/simple/", "img2gray-cu130")
    assert one_error(result) == (
        f"error: {drip.endpoint}/simple/img2gray-cu130/: no complete answer within 3 s (KERNELWHEEL_INDEX_TIMEOUT); "
        "the server is too slow or is holding the connection open")
    assert elapsed < 60  # not --timeout's 300 s, nor for ever


def test_a_bad_answer_timeout_is_one_line() -> None:
    result, _ = timed_install_command("--index-url", "http://127.0.0.1:9/simple/", "img2gray-cu130", answer_s="soon")
    assert one_error(result) == (
        "error: KERNELWHEEL_INDEX_TIMEOUT: expected a positive number of seconds, at most 86400, got 'soon'")
