"""tools/kernelwheel/io/json_cache.py: run-to-run caches read within limits and ignored when unusable."""

from __future__ import annotations

import os
from pathlib import Path

from kernelwheel.io import json_cache

HEADER = {"format": 1, "checker": "rules=1"}


def test_a_saved_cache_loads_back_with_its_header(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    json_cache.save(path, HEADER, {"entries": [["a", 1]]})
    assert json_cache.load(path, HEADER, max_bytes=1024) == {**HEADER, "entries": [["a", 1]]}
    assert [p.name for p in tmp_path.iterdir()] == ["cache.json"]  # no temporary left behind


def test_another_header_a_damaged_or_oversized_file_or_none_at_all_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    json_cache.save(path, HEADER, {"entries": []})
    assert json_cache.load(path, {**HEADER, "checker": "rules=2"}, max_bytes=1024) is None
    assert json_cache.load(path, HEADER, max_bytes=8) is None
    assert json_cache.load(tmp_path / "missing.json", HEADER, max_bytes=1024) is None
    for damaged in (b'{"format": 1', b"\xff\xfe", b"[1, 2]", b'{"format": 1, "checker": "rules=1"' + b"[" * 50):
        path.write_bytes(damaged)
        assert json_cache.load(path, HEADER, max_bytes=1024) is None
    path.unlink()
    os.mkfifo(path)  # no writer: open() would wait for one
    assert json_cache.load(path, HEADER, max_bytes=1024) is None


def test_a_cache_that_cannot_be_written_is_skipped(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    json_cache.save(blocker / "cache.json", HEADER, {"entries": []})  # OSError (not a directory): ignored
    assert blocker.read_text() == "not a folder"
