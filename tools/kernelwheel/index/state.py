"""``simple/.index-state.json`` (what the last run indexed and wrote) and the lock that serialises runs.

The state is a cache, and it is read as untrusted input: its shape is checked field by field, every page it
names must be one of the index's own page paths (``index.html``, ``<project>/index.html``,
``torchX.Y/index.html``, ``torchX.Y/<project>/index.html``), and every wheel a plain ``*.whl`` file name. A
state that is anything else is ``InvalidIndexState``, and the run changes nothing; removing the file makes the
next run rebuild the index from the wheels.

Each wheel's entry also keeps the stat identity (size, mtime_ns, ctime_ns, inode) of the wheel and of its
``.metadata`` file as they were when last hashed, or null for a file changed too recently to be told apart from a
later change (``racy``: the same test git's index makes). ``kernelwheel.index.writer`` says what it trusts them
for. A variant wheel's entry keeps its checked ``variant.json`` (``variants_json``), checked again when read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from kernelwheel.index.indexed_wheel import IndexedWheel
from kernelwheel.index.variants_json import variant_document
from kernelwheel.io.errors import InvalidIndexState, InvalidWheel, InvalidWheelName
from kernelwheel.io.file_lock import file_lock
from kernelwheel.io.limited_read import read_limited
from kernelwheel.wheels.variant_names import VariantWheelName, parse_any_wheel_filename

STATE_FILE = ".index-state.json"
LOCK_FILE = ".index.lock"
# 1: the same without "identity" (read too: such a state's wheels are all hashed once more); 2: without "variant"
_STATE_VERSION = 3
_MAX_STATE_BYTES = 64 << 20
_PROJECT = r"[a-z0-9]+(?:-[a-z0-9]+)*"  # a canonical (PEP 503) name
PAGE_PATH = re.compile(rf"(?:torch[0-9]{{1,4}}\.[0-9]{{1,4}}/)?(?:{_PROJECT}/)?index\.html", re.ASCII)
_SHA256 = re.compile(r"[0-9a-f]{64}", re.ASCII)


# A file whose ctime is this close to the moment it was stat'ed may still change within the same timestamp tick
# without its stat changing (coarse clocks, file systems that keep whole seconds): its identity is not recorded.
RACY_WINDOW_NS = 2_000_000_000


@dataclass(frozen=True)
class StatIdentity:
    """What ``os.stat`` says of a file, as git's index compares it: any write changes ctime (no call sets it back),
    a replacement changes the inode."""

    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int

    @classmethod
    def of(cls, stat: os.stat_result) -> StatIdentity:
        return cls(stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)

    def racy(self, now_ns: int) -> bool:
        """Changed so recently (before ``now_ns``, the moment of the stat) that a later change might not show."""
        return self.ctime_ns >= now_ns - RACY_WINDOW_NS or self.mtime_ns >= now_ns - RACY_WINDOW_NS


@dataclass(frozen=True)
class Identities:
    """The stat identities of a wheel and of its ``.metadata`` file when they were last hashed (None: not trusted)."""

    wheel: StatIdentity | None = None
    metadata: StatIdentity | None = None


@dataclass(frozen=True)
class IndexState:
    """The wheels the last run indexed (by file name), their stat identities and the pages it wrote (relative to
    ``simple/``)."""

    wheels: dict[str, IndexedWheel] = field(default_factory=dict)
    pages: frozenset[str] = frozenset()
    identities: dict[str, Identities] = field(default_factory=dict)


def _invalid(path: Path, problem: str) -> InvalidIndexState:
    return InvalidIndexState(
        f"{path}: {problem}; expected the JSON object this tool writes "
        '({"version": 3, "wheels": [...], "pages": [...]}). Nothing was changed; remove the file to rebuild '
        "the index from the wheels"
    )


def _identity(value: Any, path: Path, where: str) -> StatIdentity | None:
    if value is None:
        return None
    if (not isinstance(value, list) or len(value) != 4
            or not all(type(item) is int and item >= 0 for item in value)):
        raise _invalid(path, f"{where} is {value!r:.100}, not null or 4 non-negative integers")
    return StatIdentity(*value)


def _identities(entry: dict[str, Any], path: Path, where: str) -> Identities:
    value = entry.pop("identity")
    if value is None:
        return Identities()
    if not isinstance(value, dict) or set(value) != {"wheel", "metadata"}:
        raise _invalid(path, f"{where}.identity is {value!r:.100}, not null or an object with wheel and metadata")
    return Identities(_identity(value["wheel"], path, f"{where}.identity.wheel"),
                      _identity(value["metadata"], path, f"{where}.identity.metadata"))


def _wheel(entry: Any, path: Path, position: int, version: int) -> tuple[IndexedWheel, Identities]:
    where = f"wheels[{position}]"
    if not isinstance(entry, dict):
        raise _invalid(path, f"{where} is {type(entry).__name__}, not an object")
    expected = ({f.name for f in fields(IndexedWheel)} - ({"variant"} if version < 3 else set())
                | ({"identity"} if version >= 2 else set()))
    if set(entry) != expected:
        raise _invalid(path, f"{where} has the keys {sorted(entry)}, not {sorted(expected)}")
    filename = entry["filename"]
    if not isinstance(filename, str) or "/" in filename or "\\" in filename or "\0" in filename:
        raise _invalid(path, f"{where}.filename {filename!r} is not a plain file name")
    try:
        parsed = parse_any_wheel_filename(filename)
    except InvalidWheelName:
        raise _invalid(path, f"{where}.filename {filename!r} is not a wheel file name") from None
    _check_variant(entry.get("variant"), parsed, filename, path, where)
    for name in ("size", "mtime_ns"):
        if type(entry[name]) is not int or entry[name] < 0:
            raise _invalid(path, f"{where}.{name} is {entry[name]!r}, not a non-negative integer")
    for name in ("sha256", "metadata_sha256"):
        if not isinstance(entry[name], str) or not _SHA256.fullmatch(entry[name]):
            raise _invalid(path, f"{where}.{name} is {entry[name]!r}, not 64 lowercase hex digits")
    for name in ("requires_python", "torch"):
        value = entry[name]
        if value is None:
            continue
        if not isinstance(value, str):
            raise _invalid(path, f"{where}.{name} is {value!r}, not a string or null")
        try:
            SpecifierSet(value)
        except InvalidSpecifier:
            raise _invalid(path, f"{where}.{name} {value!r} is not a version specifier") from None
    entry = dict(entry)
    identities = _identities(entry, path, where) if version >= 2 else Identities()
    return IndexedWheel(**entry), identities


def _check_variant(variant: Any, name: object, filename: str, path: Path, where: str) -> None:
    """A variant wheel's recorded variant.json, checked as when the wheel was indexed; null for any other wheel."""
    if not isinstance(name, VariantWheelName):
        if variant is not None:
            raise _invalid(path, f"{where}.variant is {variant!r:.80}; expected null for a wheel without a label")
        return
    if not isinstance(variant, str):
        raise _invalid(path, f"{where}.variant is {variant!r:.80}; expected the variant wheel's variant.json")
    try:
        variant_document(variant.encode(), filename, name.label)
    except InvalidWheel as exc:
        raise _invalid(path, f"{where}.variant: {exc}") from None


def read_state(simple: Path) -> IndexState:
    """The last run's state; empty when there is none (first run) or it was written by another state version."""
    path = simple / STATE_FILE
    try:
        data = read_limited(path, _MAX_STATE_BYTES)
    except FileNotFoundError:
        return IndexState()
    except OSError as exc:
        raise _invalid(path, f"cannot be read ({exc.strerror or exc})") from None
    if len(data) > _MAX_STATE_BYTES:
        raise _invalid(path, f"is over {_MAX_STATE_BYTES >> 20} MiB")
    try:
        state = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise _invalid(path, f"is not JSON ({type(exc).__name__}: {str(exc)[:200]})") from None
    if not isinstance(state, dict):
        raise _invalid(path, f"is a JSON {type(state).__name__}, not an object")
    version = state.get("version")
    if version not in (1, 2, _STATE_VERSION):
        return IndexState()  # another format: rebuilt from the wheels, as on a first run
    wheels, pages = state.get("wheels"), state.get("pages")
    if not isinstance(wheels, list):
        raise _invalid(path, f"wheels is {type(wheels).__name__}, not a list")
    if not isinstance(pages, list):
        raise _invalid(path, f"pages is {type(pages).__name__}, not a list")
    for position, page in enumerate(pages):
        if not isinstance(page, str) or not PAGE_PATH.fullmatch(page):
            raise _invalid(
                path, f"pages[{position}] is {page!r}, not one of the index's pages ([torchX.Y/][<project>/]index.html)"
            )
    known = [_wheel(entry, path, position, version) for position, entry in enumerate(wheels)]
    return IndexState({w.filename: w for w, _ in known}, frozenset(pages), {w.filename: i for w, i in known})


def _identity_json(identity: StatIdentity | None) -> list[int] | None:
    return None if identity is None else [identity.size, identity.mtime_ns, identity.ctime_ns, identity.inode]


def state_bytes(wheels: Sequence[IndexedWheel], pages: Sequence[str],
                identities: Mapping[str, Identities] | None = None) -> bytes:
    identities = identities or {}
    entries = []
    for wheel in wheels:
        known = identities.get(wheel.filename, Identities())
        identity = None if known == Identities() else {"wheel": _identity_json(known.wheel),
                                                       "metadata": _identity_json(known.metadata)}
        entries.append({**asdict(wheel), "identity": identity})
    state = {"version": _STATE_VERSION, "wheels": entries, "pages": sorted(pages)}
    return (json.dumps(state, indent=2, sort_keys=True) + "\n").encode()


@contextmanager
def locked(simple: Path) -> Iterator[None]:
    """Hold ``simple/.index.lock`` (never through a symlink: O_NOFOLLOW) for the duration of the block."""
    simple.mkdir(parents=True, exist_ok=True)
    with file_lock(simple / LOCK_FILE):  # waits for a run in progress; released by the kernel if its holder dies
        yield
