"""kernelwheel.io.urls: what makes a URL unusable, and a URL shown without its password or a line break (the
commands' messages built on them are tested in test_install, test_upload and test_hub)."""

from __future__ import annotations

import pytest

from kernelwheel.io.urls import printable, redact, url_problem

HTTP = ("http", "https")


@pytest.mark.parametrize(("url", "shown"), [
    ("https://user:secret@host/simple/", "https://user:***@host/simple/"),
    ("https://user@host/simple/", "https://user@host/simple/"),  # a user name alone is not a secret
    ("https://host/simple/", "https://host/simple/"),
    ("https://user:p@ss@host/simple/", "https://user:***@host/simple/"),  # '@' inside the password
    ("http://user:secret@[::1/simple/", "http://user:***@[::1/simple/"),  # does not parse: redacted by pattern
])
def test_redact_hides_the_password_only(url: str, shown: str) -> None:
    assert redact(url) == shown


@pytest.mark.parametrize(("url", "problem"), [
    ("https://host:8443/simple/", None),
    ("http://127.0.0.1/", None),
    ("http://[::1]:8080/", None),
    ("https://bücher.example/simple/", None),  # IDNA
    ("file:///srv/simple/", "its scheme is file: (usable here: http:, https:)"),
    ("http://[::1/", "it cannot be parsed (Invalid IPv6 URL)"),
    ("http://host:0/", "port 0 is not a port a server listens on"),
    ("http:///simple/", "it has no host"),
    ("http://a..b/", "its host 'a..b' is not a valid host name (encoding with 'idna' codec failed (UnicodeError: "
                     "label empty or too long))"),
    ("http://host/a b/", "it contains whitespace or a control character"),
])
def test_url_problem(url: str, problem: str | None) -> None:
    assert url_problem(url, HTTP) == problem


def test_file_urls_are_local_paths_only() -> None:
    assert url_problem("file:///srv/simple/", ("file",)) is None
    assert url_problem("file://localhost/srv/simple/", ("file",)) is None
    assert url_problem("file://server/share/", ("file",)) == "a file: URL must name a local path (file:///...)"


@pytest.mark.parametrize(("text", "shown"), [("plain", "plain"), ("two\nlines", "'two\\nlines'"), ("", "''"),
                                             ("bell\a", "'bell\\x07'")])
def test_printable_keeps_a_message_on_one_line(text: str, shown: str) -> None:
    assert printable(text) == shown
