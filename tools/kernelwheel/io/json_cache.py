"""Run-to-run caches kept as one JSON file each (file digests, ELF verdicts, recorded snapshots).

A cache is read within a size and depth limit and ignored when it is missing, damaged or written under another
header (format, checker version); it is written atomically, and one that cannot be written only costs the next run
the work it would have saved. What the body holds, and how to trust it, is the caller's.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernelwheel.io.atomic import write_atomic
from kernelwheel.io.errors import ToolError
from kernelwheel.io.limited_read import read_limited
from kernelwheel.io.untrusted_json import loads_limited


def load(path: Path, header: Mapping[str, object], *, max_bytes: int, max_depth: int = 8) -> dict[str, Any] | None:
    """The JSON object in ``path`` when it is readable, within the limits, and holds every ``header`` item; else
    None."""
    try:
        raw = read_limited(path, max_bytes)  # one byte over the limit is enough for loads_limited to refuse it
        data = loads_limited(raw, str(path), max_bytes=max_bytes, max_depth=max_depth)
    except (OSError, ToolError):
        return None
    if not isinstance(data, dict) or any(data.get(key) != value for key, value in header.items()):
        return None
    return data


def save(path: Path, header: Mapping[str, object], body: Mapping[str, object]) -> None:
    """Write ``header`` and ``body`` as one JSON object to ``path``, atomically; an OSError is ignored."""
    with contextlib.suppress(OSError):
        write_atomic(path, json.dumps({**header, **body}).encode())
