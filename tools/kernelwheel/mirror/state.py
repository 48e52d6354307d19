"""What the mirror has converted: one small JSON file per kernel, ``<wheelhouse>/.mirror/<org>--<name>.json``.

Each file lists the release tags converted, with the commit each pointed at, the wheels it gave and the variants it
skipped and why; it is rewritten atomically (``io.atomic.write_atomic``) after every tag, so a run killed at any
moment resumes at the first tag it had not finished. One file per kernel also lets the jobs of a CI matrix (each
its own kernels, ``--shard``) write into one wheelhouse without ever writing the same file. A file is read as
untrusted input: anything but the shape written here fails that kernel alone (``InvalidMirrorState``), naming the
file; removing it converts that kernel's releases again (wheels already there byte for byte are left alone).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelwheel.io.atomic import write_atomic
from kernelwheel.io.errors import InvalidMirrorState
from kernelwheel.io.limited_read import read_limited
from kernelwheel.io.untrusted_json import loads_limited

STATE_FOLDER = ".mirror"
_FORMAT = 1
_MAX_BYTES = 16 << 20
_COMMIT = re.compile(r"[0-9a-f]{40}", re.ASCII)


@dataclass(frozen=True)
class Converted:
    """One release tag converted: its commit then, its wheels (file names) and the variants skipped with reasons."""

    commit: str
    wheels: tuple[str, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()


@dataclass
class KernelState:
    repo: str
    converted: dict[str, Converted] = field(default_factory=dict)  # tag → what it gave


def state_path(wheelhouse: Path, repo: str) -> Path:
    return wheelhouse / STATE_FOLDER / (repo.replace("/", "--") + ".json")


def _invalid(path: Path, problem: str) -> InvalidMirrorState:
    return InvalidMirrorState(f"{path}: {problem}; expected the JSON this tool writes. Remove the file to convert "
                              "this kernel's releases again (wheels already in place are kept)")


def _entry(path: Path, tag: str, value: Any) -> Converted:
    if not isinstance(value, dict) or set(value) != {"commit", "wheels", "skipped"}:
        raise _invalid(path, f"converted[{tag!r:.60}] is not an object with commit, wheels and skipped")
    commit, wheels, skipped = value["commit"], value["wheels"], value["skipped"]
    if not isinstance(commit, str) or not _COMMIT.fullmatch(commit):
        raise _invalid(path, f"converted[{tag!r:.60}].commit is {commit!r:.60}, not a 40-digit commit id")
    if not isinstance(wheels, list) or not all(isinstance(w, str) and "/" not in w for w in wheels):
        raise _invalid(path, f"converted[{tag!r:.60}].wheels is not a list of file names")
    if not isinstance(skipped, list) or not all(
            isinstance(s, list) and len(s) == 2 and all(isinstance(x, str) for x in s) for s in skipped):
        raise _invalid(path, f"converted[{tag!r:.60}].skipped is not a list of [variant, reason] pairs")
    return Converted(commit, tuple(wheels), tuple((s[0], s[1]) for s in skipped))


def load_state(wheelhouse: Path, repo: str) -> KernelState:
    """``repo``'s record; empty when it was never converted here."""
    path = state_path(wheelhouse, repo)
    try:
        raw = read_limited(path, _MAX_BYTES)
    except FileNotFoundError:
        return KernelState(repo)
    except OSError as exc:
        raise _invalid(path, f"cannot be read ({exc.strerror or exc})") from None
    data = loads_limited(raw, str(path), max_bytes=_MAX_BYTES, max_depth=6, error=InvalidMirrorState)
    if not isinstance(data, dict) or data.get("format") != _FORMAT or data.get("repo") != repo:
        raise _invalid(path, f"is not format {_FORMAT} of {repo}'s record")
    converted = data.get("converted")
    if not isinstance(converted, dict):
        raise _invalid(path, "converted is not an object")
    return KernelState(repo, {tag: _entry(path, tag, value) for tag, value in converted.items()})


def save_state(wheelhouse: Path, state: KernelState) -> None:
    """Write ``state`` atomically: the file holds the old record or the new one, never part of either."""
    body = {
        "format": _FORMAT,
        "repo": state.repo,
        "converted": {tag: {"commit": c.commit, "wheels": list(c.wheels), "skipped": [list(s) for s in c.skipped]}
                      for tag, c in sorted(state.converted.items())},
    }
    write_atomic(state_path(wheelhouse, state.repo), (json.dumps(body, indent=1, sort_keys=True) + "\n").encode())
