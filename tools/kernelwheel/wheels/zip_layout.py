"""A variant in kernels 0.19's ``"zip"`` build layout, turned into the files of an ordinary (``"files"``) package.

kernels 0.19.1 (``importer._zip_spec``) imports such a build as the package ``<id>``: ``__init__.py`` and the other
Python files from the root of ``<id>.zip`` (``zipimport``), submodules from the variant folder first and the zip
second, so extension modules (which ``zipimport`` cannot load) lie beside the archive. A wheel cannot install a
package that lives in a zip, so the archive is unpacked into the package folder, in memory, with the checks
``layout.collect_files`` applies to a folder's files:

* every member name is relative and inside the package (no absolute path, ``..``, backslash or character a RECORD
  cannot hold), appears once, and is neither a file beside the archive nor metadata.json;
* no symlink, no other special file, no encrypted member, no compiled (ELF) file: kernels could not load one;
* at most ``MAX_MEMBERS`` members and ``MAX_UNPACKED_BYTES`` in all, counted before anything is decompressed (and
  enforced while reading: a member's declared size cannot be exceeded), so a zip bomb costs nothing.

The installed folder is then a files layout: its metadata.json says ``"build-layout": "files"``, and its digest is
recomputed over the installed files (see ``installed_metadata``). The original digest, which covers the archive,
is verified before anything here runs (``checked_variant.check_variant_dir``).
"""

from __future__ import annotations

import json
import stat
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelwheel.format.digests import make_digest_of
from kernelwheel.format.metadata import zip_archive_name
from kernelwheel.format.variant_folder import SIGSTORE_BUNDLE, check_relpath
from kernelwheel.io.errors import InvalidVariant
from kernelwheel.wheels.elf import is_elf, looks_like_shared_object

MAX_MEMBERS = 10_000
# A kernel's Python package is kilobytes; its large files (the extension modules) lie beside the archive.
MAX_UNPACKED_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class UnpackedVariant:
    """The files of a zip layout variant as an ordinary flat package: ``{relative path: file or contents}``."""

    files: dict[str, Path | bytes]
    archive: str  # "<id>.zip", for messages


def unpack_variant(files: Mapping[str, Path], metadata: Mapping[str, Any], where: str) -> UnpackedVariant:
    """The archive's members beside the variant's other files, metadata.json rewritten (``installed_metadata``).
    The variant's signature bundle is left out: it signs the zip layout's metadata.json, which is not installed."""
    archive = zip_archive_name(metadata, where)
    path = files.get(archive)
    if path is None:
        raise InvalidVariant(f"{where}: 'build-layout' is 'zip' but the variant has no {archive} (the archive of "
                             "its Python package, named after metadata.json's 'id')")
    beside = {rel: p for rel, p in files.items() if rel not in (archive, "metadata.json", SIGSTORE_BUNDLE)}
    members = read_members(path, f"{where}/{archive}", taken=set(beside) | {"metadata.json", SIGSTORE_BUNDLE})
    if "__init__.py" not in members:
        raise InvalidVariant(f"{where}/{archive}: no __init__.py at the archive's root (kernels imports the package "
                             "from there)")
    unpacked: dict[str, Path | bytes] = {**beside, **members}
    unpacked["metadata.json"] = installed_metadata(metadata, unpacked)
    return UnpackedVariant(unpacked, archive)


def installed_metadata(metadata: Mapping[str, Any], files: Mapping[str, Path | bytes]) -> bytes:
    """metadata.json for the unpacked package: ``"build-layout": "files"``, so that kernels (or this toolkit) loading
    the installed folder imports it as files; and, when the variant had a digest, a digest of the installed files with
    the same algorithm. The digest is recomputed rather than dropped: kernels 0.19.1 checks it at every load (a
    missing one warns), and the original, which named the archive, was verified before unpacking."""
    rewritten = dict(metadata)
    rewritten["build-layout"] = "files"
    digest = metadata.get("digest")
    if isinstance(digest, dict):
        rewritten["digest"] = make_digest_of(files, str(digest.get("algorithm", "sha256")))
    return (json.dumps(rewritten, indent=2) + "\n").encode()


def read_members(path: Path, where: str, taken: set[str]) -> dict[str, bytes]:
    """Every file of the archive at ``path``, checked (see the module's docstring); ``taken``: names already used."""
    try:
        with zipfile.ZipFile(path) as archive:
            infos = [info for info in archive.infolist() if not info.is_dir()]
            _check_sizes(infos, where)
            members: dict[str, bytes] = {}
            for info in infos:
                name = _member_name(info, where, taken | set(members))
                if name is None:
                    continue
                data = _read_member(archive, info, where)
                if is_elf(data) or looks_like_shared_object(name):
                    raise InvalidVariant(f"{where}: {name} is a compiled file inside the archive; kernels can load "
                                         "extension modules only from beside it")
                members[name] = data
            return members
    except (zipfile.BadZipFile, zlib.error, NotImplementedError, EOFError) as exc:
        raise InvalidVariant(f"{where}: expected a readable zip archive: {str(exc).splitlines()[0][:200]}") from None
    except OSError as exc:
        raise InvalidVariant(f"{where}: cannot be read: {exc.strerror or exc}") from None


def _check_sizes(infos: list[zipfile.ZipInfo], where: str) -> None:
    if len(infos) > MAX_MEMBERS:
        raise InvalidVariant(f"{where}: {len(infos)} members, expected at most {MAX_MEMBERS}")
    total = sum(info.file_size for info in infos)
    if total > MAX_UNPACKED_BYTES:
        raise InvalidVariant(f"{where}: unpacks to {total} bytes, expected at most {MAX_UNPACKED_BYTES}")


def _member_name(info: zipfile.ZipInfo, where: str, taken: set[str]) -> str | None:
    """The member's checked name, or None for one the package does not install (bytecode, as ``collect_files``)."""
    name = check_relpath(info.filename, where)
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise InvalidVariant(f"{where}: {name} is a symlink (not allowed in a kernel archive)")
    if mode and stat.S_IFMT(mode) and not stat.S_ISREG(mode):
        raise InvalidVariant(f"{where}: {name} is not a regular file (mode {oct(mode)})")
    if info.flag_bits & 0x1:
        raise InvalidVariant(f"{where}: {name} is encrypted")
    if name.endswith(".pyc") or "__pycache__" in name.split("/"):
        return None
    if name in taken:
        raise InvalidVariant(f"{where}: {name} appears twice (in the archive and beside it, or twice in the archive)")
    return name


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> bytes:
    """The member's bytes, never more than its declared size (zipfile also checks the CRC at the end)."""
    with archive.open(info) as member:
        data = member.read(info.file_size + 1)
    if len(data) != info.file_size:
        raise InvalidVariant(f"{where}: {info.filename} holds {len(data)} bytes, its header says {info.file_size}")
    return data
