"""JSON from untrusted files, within limits checked before ``json.loads``: size, nesting depth, UTF-8.

``json.loads`` recurses once per ``[``/``{`` level (100,000 levels: ``RecursionError``) and ``int()`` refuses
numbers over 4,300 digits with a bare ``ValueError``; both become the caller's one-line ``ToolError`` here.
"""

from __future__ import annotations

import json
import re

from kernelwheel.io.errors import ToolError

_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def nested_deeper_than(text: str, limit: int) -> bool:
    """Whether ``[``/``{`` nest more than ``limit`` levels outside strings."""
    depth = 0
    for match in _JSON_BRACKET.finditer(_JSON_STRING.sub('""', text)):
        if match.group() in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def loads_limited(raw: bytes, what: str, *, max_bytes: int, max_depth: int,
                  error: type[ToolError] = ToolError) -> object:
    """Parse ``raw`` (at most ``max_bytes``, nested at most ``max_depth``) or raise ``error("<what>: <reason>")``."""
    if len(raw) > max_bytes:
        raise error(f"{what}: larger than {max_bytes} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{what}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if nested_deeper_than(text, max_depth):
        raise error(f"{what}: nested deeper than {max_depth} levels")
    try:
        return json.loads(text)
    except ValueError as exc:  # JSONDecodeError, and int() past sys.get_int_max_str_digits
        raise error(f"{what}: not valid JSON: {str(exc).splitlines()[0]}") from None

