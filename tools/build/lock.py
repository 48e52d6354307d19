"""The locked build environment: requirements/*.lock, read back.

``make lock`` writes them with ``uv pip compile --generate-hashes`` from the ranges in requirements/build.txt (the build
tools) and requirements/torch.txt (the torch to build against): every package the build imports or runs, its exact
version and the sha256 of each of its files. ``make venv`` and the release workflow install them with
``pip install --require-hashes``. The build compares the running environment with them (``environment_differences``),
and so does ``--reproduce`` with the lock files of the commit it rebuilds.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, canonicalize_version

from kernelwheel.io.errors import InvalidLockfile

LOCKS = ("build.lock", "torch.lock")  # in requirements/, installed in this order
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


@dataclass(frozen=True)
class LockedPackage:
    name: str  # canonical
    version: str
    hashes: tuple[str, ...]  # sha256 hex digests of the files pip may install


def lock_files(source: Path) -> list[Path]:
    return [source / "requirements" / name for name in LOCKS if (source / "requirements" / name).is_file()]


def parse_lock(text: str, where: str) -> list[LockedPackage]:
    """The ``name==version --hash=sha256:...`` entries of a requirements file in hash-checking form, as
    ``uv pip compile --generate-hashes`` and pip-compile write it; entries whose marker excludes this interpreter are
    left out. Anything else (a range, an entry without a hash) makes the file no lock."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        pending += line
        if pending.strip():
            logical.append(pending.strip())
        pending = ""
    packages = []
    for entry in logical:
        spec = entry.split(" --", 1)[0].strip()
        try:
            requirement = Requirement(spec)
        except InvalidRequirement as exc:
            raise InvalidLockfile(f"{where}: {spec!r:.80} is not a requirement: {exc}") from None
        pins = [s for s in requirement.specifier if s.operator == "=="]
        hashes = tuple(_HASH.findall(entry))
        if len(pins) != 1 or len(requirement.specifier) != 1 or "*" in pins[0].version or not hashes:
            raise InvalidLockfile(f"{where}: {spec!r:.80} is not locked: expected name==version and its hashes")
        if requirement.marker is None or requirement.marker.evaluate():
            packages.append(LockedPackage(canonicalize_name(requirement.name), pins[0].version, hashes))
    return packages


def read_lock(path: Path) -> list[LockedPackage]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidLockfile(f"{path}: cannot be read: {exc}") from None
    return parse_lock(text, str(path))


def environment_differences(locks: Iterable[Path | tuple[str, str]]) -> list[str]:
    """``name installed-version (locked version)`` for every locked package this interpreter has in another version
    or not at all. Each lock is a path, or ``(where, text)`` for one read from git."""
    differences = []
    for lock in locks:
        packages = read_lock(lock) if isinstance(lock, Path) else parse_lock(lock[1], lock[0])
        for package in packages:
            try:
                installed = importlib.metadata.version(package.name)
            except importlib.metadata.PackageNotFoundError:
                differences.append(f"{package.name} missing (locked {package.version})")
                continue
            if canonicalize_version(installed, strip_trailing_zero=False) != canonicalize_version(
                    package.version, strip_trailing_zero=False):
                differences.append(f"{package.name} {installed} (locked {package.version})")
    return differences
