"""URLs a user gives (index, upload and Hub endpoints): why one cannot be used, and how to show one in a message
without its password or a character that would break the line."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit, urlunsplit

_CREDENTIALS = re.compile(r"(//[^/@:]*:)[^/@]*@")


def redact(url: str) -> str:
    """``url`` with its password shown as ``***`` (also for a URL too malformed to parse)."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
    except ValueError:
        return _CREDENTIALS.sub(r"\1***@", url)
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{parts.netloc.rsplit('@', 1)[1]}"))


def url_problem(url: str, schemes: tuple[str, ...]) -> str | None:
    """Why ``url`` cannot be used (it does not parse, another scheme than ``schemes``, no valid host or port for
    http(s), a remote ``file:`` URL), in words that follow "is not usable: "; None when it can."""
    if any(c.isspace() or not c.isprintable() for c in url):
        return "it contains whitespace or a control character"
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError for a port that is not a number in 0-65535
    except ValueError as exc:
        return f"it cannot be parsed ({exc})"
    if parts.scheme not in schemes:
        scheme = f"{parts.scheme}:" if parts.scheme else "missing"
        return f"its scheme is {scheme} (usable here: {', '.join(f'{s}:' for s in schemes)})"
    if parts.scheme == "file":
        return None if parts.netloc in ("", "localhost") else "a file: URL must name a local path (file:///...)"
    host = parts.hostname
    if not host:
        return "it has no host"
    if port == 0:
        return "port 0 is not a port a server listens on"
    try:
        ipaddress.ip_address(host)
    except ValueError:
        try:
            host.encode("idna")
        except UnicodeError as exc:
            return f"its host {host!r} is not a valid host name ({exc})"
    return None


def printable(text: str) -> str:
    """``text`` as is, or as ``ascii()`` when it holds a newline or another character a one-line message can't show."""
    return text if text.isprintable() and text else ascii(text)
