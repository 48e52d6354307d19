"""A build variant's folder on disk: which files it holds (safely), its ``metadata.json`` and its Python package.

Every file path is checked before use: relative, inside the variant, no ``..``, no backslash, valid UTF-8, no
character a wheel's RECORD cannot hold (installers read RECORD with ``str.splitlines``, which also breaks lines at
U+2028, U+0085 and other control characters), and symlinks may only point inside the variant or at the Hugging Face
cache's ``blobs/`` (``trusted_roots``).

``metadata.json`` is read within limits (size, nesting depth) before ``json.loads``, and every field the
conversion uses is type-checked here, so a wrong type is one clear reason, never a traceback or a dropped field.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernelwheel.format.metadata import build_layout
from kernelwheel.io.atomic import NAME_MAX
from kernelwheel.io.errors import InvalidVariant, ToolError
from kernelwheel.io.limited_read import read_limited
from kernelwheel.io.untrusted_json import loads_limited

SIGSTORE_BUNDLE = "metadata.json.sigstore"  # a detached signature over metadata.json: not part of the digest
_SKIPPED_NAMES = {SIGSTORE_BUNDLE}
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Cc: C0/C1 controls and DEL (line breaks among them); Zl/Zp: U+2028/U+2029; Cs: lone surrogates, which is how
# Python spells a file name whose bytes are not UTF-8.
_UNRECORDABLE = {"Cc": "a control character", "Zl": "a line separator", "Zp": "a paragraph separator",
                 "Cs": "bytes that are not UTF-8"}
# kernel-builder's metadata.json is a few kB (a digest line per file) and 3 levels deep.
MAX_METADATA_BYTES = 4 * 1024 * 1024
MAX_METADATA_DEPTH = 32
# os.walk recurses once per level (3.11): a tree 1,000 folders deep was a RecursionError.
MAX_FOLDER_DEPTH = 32


def check_relpath(rel: str, where: str, *, inside: str = "the variant directory",
                  error: type[ToolError] = InvalidVariant) -> str:
    """Refuse absolute paths, ``..``, backslashes, and characters a RECORD cannot hold, in a file name.

    One rule for every file name the tools take from outside: a variant's files (``inside`` the variant directory,
    ``InvalidVariant``) and a wheel's members and RECORD entries (``inside`` the wheel, ``InvalidWheel``), so that
    what hub2wheel would refuse to write, the index and upload refuse to serve."""
    if not rel or rel.startswith("/") or re.match(r"^[A-Za-z]:", rel):
        raise error(f"{where}: absolute path {rel!r} is not allowed")
    if "\\" in rel:
        raise error(f"{where}: file name {rel!r} has a backslash")
    for char in rel:
        kind = _UNRECORDABLE.get(unicodedata.category(char))
        if kind:
            raise error(
                f"{where}: file name {rel!r} holds {kind} ({char!r}, U+{ord(char):04X}), which a wheel's RECORD "
                "cannot hold"
            )
    parts = rel.split("/")  # not PurePosixPath(rel).parts, which drops "." segments before they can be seen
    if ".." in parts or "." in parts or "" in parts:
        raise error(f"{where}: path {rel!r} leaves {inside} (path traversal)")
    return rel


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def collect_files(variant_dir: Path, where: str, trusted_roots: Sequence[Path] = ()) -> dict[str, Path]:
    """``{relative posix path: file}`` for every file of the variant, after the path and symlink checks."""
    try:
        return _collect_files(variant_dir, where, trusted_roots)
    except OSError as exc:  # a folder that cannot be listed or a path past PATH_MAX: never silently left out
        shown = Path(exc.filename or variant_dir)
        rel = shown.relative_to(variant_dir).as_posix() if _inside(shown, variant_dir) else str(shown)
        raise InvalidVariant(f"{where}: {rel[:300]!r} cannot be read: {exc.strerror or exc}") from None


def _raise(exc: OSError) -> None:
    raise exc


def _collect_files(variant_dir: Path, where: str, trusted_roots: Sequence[Path]) -> dict[str, Path]:
    allowed = _allowed_roots(variant_dir, trusted_roots)
    files: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(variant_dir, onerror=_raise):  # os.walk's default: skip silently
        here = Path(dirpath)
        if dirnames and len(here.relative_to(variant_dir).parts) >= MAX_FOLDER_DEPTH:
            raise InvalidVariant(f"{where}: folders nested deeper than {MAX_FOLDER_DEPTH} levels "
                                 f"({here.relative_to(variant_dir).as_posix()[:80]}...)")
        for d in list(dirnames):
            if d == "__pycache__":
                dirnames.remove(d)
                continue
            if (here / d).is_symlink():
                rel = (here / d).relative_to(variant_dir).as_posix()
                raise InvalidVariant(f"{where}: {rel} is a symlinked directory (not allowed in a variant)")
        dirnames.sort()
        for name in sorted(filenames):
            path = here / name
            rel = check_relpath(path.relative_to(variant_dir).as_posix(), where)
            if name.endswith(".pyc") or name in _SKIPPED_NAMES:
                continue
            _check_file(path, rel, where, allowed)
            files[rel] = path
    return files


def _allowed_roots(variant_dir: Path, trusted_roots: Sequence[Path]) -> list[Path]:
    return [Path(os.path.realpath(variant_dir)), *(Path(os.path.realpath(r)) for r in trusted_roots)]


def _check_file(path: Path, rel: str, where: str, allowed: Sequence[Path]) -> None:
    """A regular file, or a symlink to one inside ``allowed`` (the variant, or a trusted root such as the Hub
    cache's blobs)."""
    if path.is_symlink():
        target = Path(os.path.realpath(path))
        if not any(_inside(target, r) for r in allowed):
            raise InvalidVariant(f"{where}: {rel} is a symlink pointing outside the variant ({target})")
        if not target.is_file():
            raise InvalidVariant(f"{where}: {rel} is a symlink to a missing or non-regular file")
    elif not path.is_file():
        raise InvalidVariant(f"{where}: {rel} is not a regular file")


def metadata_file(variant_dir: Path, where: str, trusted_roots: Sequence[Path] = ()) -> dict[str, Path]:
    """``{"metadata.json": file}`` as ``collect_files`` would give it for that one name (``{}`` when there is none),
    with the same checks, without listing the rest of the variant: for reading a variant's metadata alone."""
    path = variant_dir / "metadata.json"
    try:
        if not os.path.lexists(path):
            return {}
        _check_file(path, "metadata.json", where, _allowed_roots(variant_dir, trusted_roots))
    except OSError as exc:
        raise InvalidVariant(f"{where}: 'metadata.json' cannot be read: {exc.strerror or exc}") from None
    return {"metadata.json": path}


def _expect(value: object, types: tuple[type, ...], field: str, expected: str, where: str) -> None:
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise InvalidVariant(f"{where}/metadata.json: {field!r} must be {expected}, got {type(value).__name__} "
                             f"{value!r:.60}")


def _check_fields(data: Mapping[str, Any], where: str) -> None:
    """The type of every field hub2wheel reads (``python-depends``: ``python_depends.read_depends``; ``digest``:
    ``digests``). kernels' own parser is stricter (``version`` an integer); these are what the wheel needs."""
    for field in ("name", "id", "license", "kernels-minver", "upstream", "source"):
        if field in data:
            _expect(data[field], (str,), field, "a string", where)
    build_layout(data, where)  # "files" or "zip" (kernels 0.19), refused otherwise
    if "version" in data:
        _expect(data["version"], (int, str), "version", "an integer or a version string", where)
    backend = data.get("backend")
    if backend is not None:
        _expect(backend, (dict,), "backend", 'an object {"type": ..., "archs": [...]}', where)
        if "type" in backend:
            _expect(backend["type"], (str,), "backend.type", "a string", where)
        archs = backend.get("archs")
        if archs is not None and not (isinstance(archs, list) and all(isinstance(a, str) for a in archs)):
            raise InvalidVariant(f"{where}/metadata.json: 'backend.archs' must be a list of strings, got "
                                 f"{archs!r:.60}")
    provenance = data.get("provenance")
    if provenance is not None:
        _expect(provenance, (dict,), "provenance", "an object", where)
        for part in ("kernel-builder", "kernel"):
            if provenance.get(part) is not None:
                _expect(provenance[part], (dict,), f"provenance.{part}", "an object", where)
        kernel = provenance.get("kernel") or {}
        if kernel.get("commit") is not None:
            _expect(kernel["commit"], (str,), "provenance.kernel.commit", "a string", where)
        if kernel.get("dirty") is not None:
            _expect(kernel["dirty"], (bool,), "provenance.kernel.dirty", "true or false", where)


def read_metadata(files: Mapping[str, Path], where: str) -> dict[str, Any]:
    """``metadata.json`` as a dict (``{}`` when there is none), after the size, depth and field-type checks."""
    path = files.get("metadata.json")
    if path is None:
        return {}
    shown = f"{where}/metadata.json"
    try:
        raw = read_limited(path, MAX_METADATA_BYTES)
    except OSError as exc:  # collect_files checked it; it can still be unreadable (permissions) or replaced since
        raise InvalidVariant(f"{shown}: cannot be read: {exc.strerror or exc}") from None
    data = loads_limited(raw, shown, max_bytes=MAX_METADATA_BYTES, max_depth=MAX_METADATA_DEPTH, error=InvalidVariant)
    if not isinstance(data, dict):
        raise InvalidVariant(f"{shown}: expected a JSON object, got {type(data).__name__}")
    _check_fields(data, where)
    return data


def find_package(files: Mapping[str, object], metadata: Mapping[str, Any], kernel: str, where: str) -> tuple[str, str]:
    """``(import name, prefix inside the variant)``: flat → ``(name, "")``, nested → ``(pkg, "pkg/")``."""
    if "__init__.py" in files:
        name = str(metadata.get("name") or kernel).replace("-", "_")
        if not _IDENTIFIER.fullmatch(name):
            raise InvalidVariant(f"{where}: package name {name!r} (from the kernel name) is not a Python identifier")
        if len(name) > NAME_MAX:  # the folder it installs as (a nested package's folder exists already)
            raise InvalidVariant(f"{where}: package name {name[:40]!r}... (from the kernel name) is {len(name)} "
                                 f"characters; a folder name holds at most {NAME_MAX}")
        return name, ""
    packages = sorted({rel.split("/")[0] for rel in files if rel.count("/") == 1 and rel.endswith("/__init__.py")})
    packages = [p for p in packages if _IDENTIFIER.fullmatch(p)]
    if not packages:
        raise InvalidVariant(
            f"{where}: no Python package (neither {where}/__init__.py, flat layout, nor {where}/<pkg>/__init__.py, "
            "nested layout)"
        )
    wanted = kernel.replace("-", "_")
    if len(packages) > 1 and wanted not in packages:
        raise InvalidVariant(f"{where}: several packages ({', '.join(packages)}) and none is named {wanted!r}")
    name = wanted if wanted in packages else packages[0]
    return name, f"{name}/"
