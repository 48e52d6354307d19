"""``simple/.index-state.json`` (what the last run indexed and wrote) and the lock that serialises runs."""

from __future__ import annotations

import fcntl
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from tools.kernelwheel.index.wheels import IndexedWheel

STATE_FILE = ".index-state.json"
LOCK_FILE = ".index.lock"
_STATE_VERSION = 1


def read_state(simple: Path) -> dict[str, IndexedWheel]:
    try:
        state = json.loads((simple / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    if state.get("version") != _STATE_VERSION:
        return {}
    try:
        return {w["filename"]: IndexedWheel(**w) for w in state.get("wheels", [])}
    except TypeError:
        return {}


def state_bytes(wheels: Sequence[IndexedWheel], pages: Sequence[str]) -> bytes:
    state = {"version": _STATE_VERSION, "wheels": [asdict(w) for w in wheels], "pages": sorted(pages)}
    return (json.dumps(state, indent=2, sort_keys=True) + "\n").encode()


def previous_pages(simple: Path) -> set[str]:
    try:
        return set(json.loads((simple / STATE_FILE).read_text()).get("pages", []))
    except (OSError, ValueError, AttributeError):
        return set()


@contextmanager
def locked(simple: Path) -> Iterator[None]:
    simple.mkdir(parents=True, exist_ok=True)
    with (simple / LOCK_FILE).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
