"""A build variant's folder on disk: which files it holds (safely), its ``metadata.json`` and its Python package.

Every file path is checked before use: relative, inside the variant, no ``..``, no backslash or control character,
and symlinks may only point inside the variant or at the Hugging Face cache's ``blobs/`` (``trusted_roots``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tools.kernelwheel.errors import InvalidVariant

SIGSTORE_BUNDLE = "metadata.json.sigstore"  # a detached signature over metadata.json: not part of the digest
_SKIPPED_NAMES = {SIGSTORE_BUNDLE}
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_relpath(rel: str, where: str) -> str:
    """Refuse absolute paths, ``..``, backslashes and control characters in a file name."""
    if not rel or rel.startswith("/") or re.match(r"^[A-Za-z]:", rel):
        raise InvalidVariant(f"{where}: absolute path {rel!r} is not allowed")
    if "\\" in rel or any(ord(c) < 32 for c in rel):
        raise InvalidVariant(f"{where}: file name {rel!r} has a backslash or control character")
    parts = rel.split("/")  # not PurePosixPath(rel).parts, which drops "." segments before they can be seen
    if ".." in parts or "." in parts or "" in parts:
        raise InvalidVariant(f"{where}: path {rel!r} leaves the variant directory (path traversal)")
    return rel


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def collect_files(variant_dir: Path, where: str, trusted_roots: Sequence[Path] = ()) -> dict[str, Path]:
    """``{relative posix path: file}`` for every file of the variant, after the path and symlink checks."""
    root = Path(os.path.realpath(variant_dir))
    allowed = [root, *(Path(os.path.realpath(r)) for r in trusted_roots)]
    files: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(variant_dir):
        here = Path(dirpath)
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
            if path.is_symlink():
                target = Path(os.path.realpath(path))
                if not any(_inside(target, r) for r in allowed):
                    raise InvalidVariant(f"{where}: {rel} is a symlink pointing outside the variant ({target})")
                if not target.is_file():
                    raise InvalidVariant(f"{where}: {rel} is a symlink to a missing or non-regular file")
            elif not path.is_file():
                raise InvalidVariant(f"{where}: {rel} is not a regular file")
            files[rel] = path
    return files


def read_metadata(files: Mapping[str, Path], where: str) -> dict[str, Any]:
    path = files.get("metadata.json")
    if path is None:
        return {}
    try:
        data = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidVariant(f"{where}/metadata.json: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidVariant(f"{where}/metadata.json: expected a JSON object")
    return data


def find_package(files: Mapping[str, Path], metadata: Mapping[str, Any], kernel: str, where: str) -> tuple[str, str]:
    """``(import name, prefix inside the variant)``: flat → ``(name, "")``, nested → ``(pkg, "pkg/")``."""
    if "__init__.py" in files:
        name = str(metadata.get("name") or kernel).replace("-", "_")
        if not _IDENTIFIER.match(name):
            raise InvalidVariant(f"{where}: package name {name!r} (from the kernel name) is not a Python identifier")
        return name, ""
    packages = sorted({rel.split("/")[0] for rel in files if rel.count("/") == 1 and rel.endswith("/__init__.py")})
    packages = [p for p in packages if _IDENTIFIER.match(p)]
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
