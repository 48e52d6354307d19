"""kernelwheel.io.untrusted_json: every refusal is the caller's one-line error, raised before json.loads can recurse."""

from __future__ import annotations

import pytest

from kernelwheel.io.errors import InvalidLockfile, ToolError
from kernelwheel.io.untrusted_json import loads_limited, nested_deeper_than


def _load(raw: bytes) -> object:
    return loads_limited(raw, "f.json", max_bytes=64, max_depth=2)


def test_within_the_limits_it_is_json_loads() -> None:
    assert _load(b'{"a": [1, "[[[{{{"]}') == {"a": [1, "[[[{{{"]}  # brackets inside strings do not nest


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"[" + b" " * 63 + b"]", "f.json: larger than 64 bytes"),
        (b'["\xff"]', "f.json: not UTF-8 (invalid start byte at byte 2)"),
        (b"[[[]]]", "f.json: nested deeper than 2 levels"),
        (b'{"a": ', "f.json: not valid JSON: Expecting value: line 1 column 7 (char 6)"),
    ],
    ids=["too-large", "not-utf8", "too-deep", "not-json"],
)
def test_refusals_are_one_line(raw: bytes, message: str) -> None:
    with pytest.raises(ToolError) as info:
        _load(raw)
    assert str(info.value) == message


def test_a_number_past_the_int_digit_limit_is_not_valid_json() -> None:
    with pytest.raises(ToolError, match=r"^f\.json: not valid JSON: Exceeds the limit \(4300 digits\)"):
        loads_limited(b"1" * 5000, "f.json", max_bytes=10_000, max_depth=2)


def test_the_callers_error_type() -> None:
    with pytest.raises(InvalidLockfile, match=r"^kernels\.lock: nested deeper than 1 levels$"):
        loads_limited(b"[[]]", "kernels.lock", max_bytes=64, max_depth=1, error=InvalidLockfile)


def test_nested_deeper_than() -> None:
    assert not nested_deeper_than('[{"k": "]]]"}]', 2)
    assert nested_deeper_than("[[[", 2)  # counted on the way in: an unclosed text is refused as early
    assert not nested_deeper_than('"\\"[[["', 0)  # an escaped quote does not end the string
