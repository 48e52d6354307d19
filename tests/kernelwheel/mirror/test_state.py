"""Tests for kernelwheel/mirror/state.py: one record per kernel, written atomically, read as untrusted input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelwheel.io.errors import InvalidMirrorState
from kernelwheel.mirror.state import Converted, KernelState, load_state, save_state, state_path

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_a_record_round_trips_and_a_new_kernel_is_empty(tmp_path: Path) -> None:
    assert load_state(tmp_path, "org/k") == KernelState("org/k")
    state = KernelState("org/k", {"v0.1.0": Converted(COMMIT, ("k-0.1.0-py3-none-any.whl",), (("x", "why"),))})
    save_state(tmp_path, state)
    assert state_path(tmp_path, "org/k") == tmp_path / ".mirror" / "org--k.json"
    assert load_state(tmp_path, "org/k") == state
    assert [p.name for p in (tmp_path / ".mirror").iterdir()] == ["org--k.json"]  # no temporary left


@pytest.mark.parametrize("body, problem", [
    ("[]", "is not format 1 of org/k's record"),
    ('{"format": 1, "repo": "org/other", "converted": {}}', "is not format 1 of org/k's record"),
    ('{"format": 1, "repo": "org/k", "converted": []}', "converted is not an object"),
    ('{"format": 1, "repo": "org/k", "converted": {"v1.0": {"commit": "main", "wheels": [], "skipped": []}}}',
     "converted['v1.0'].commit is 'main', not a 40-digit commit id"),
    (json.dumps({"format": 1, "repo": "org/k", "converted": {"v1.0": {"commit": COMMIT, "wheels": ["../x.whl"],
                                                                      "skipped": []}}}),
     "converted['v1.0'].wheels is not a list of file names"),
    (json.dumps({"format": 1, "repo": "org/k", "converted": {"v1.0": {"commit": COMMIT, "wheels": [],
                                                                      "skipped": [["x"]]}}}),
     "converted['v1.0'].skipped is not a list of [variant, reason] pairs"),
    ("{", "not valid JSON"),
])
def test_a_record_of_another_shape_fails_that_kernel_in_one_line(tmp_path: Path, body: str, problem: str) -> None:
    path = state_path(tmp_path, "org/k")
    path.parent.mkdir()
    path.write_text(body)
    with pytest.raises(InvalidMirrorState) as raised:
        load_state(tmp_path, "org/k")
    assert problem in str(raised.value) and "\n" not in str(raised.value)
