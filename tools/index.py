"""A static private index for a wheelhouse: PEP 503 pages, PEP 658 metadata, one sub-index per torch minor.

``python -m tools.index wheelhouse`` turns ``wheelhouse/*.whl`` into a tree any static file server can serve::

    wheelhouse/
      img2gray_cu130-0.1.0+torch2.14-cp39-abi3-manylinux_2_28_x86_64.whl
      img2gray_cu130-0.1.0+torch2.14-cp39-abi3-manylinux_2_28_x86_64.whl.metadata   (PEP 658: METADATA as is)
      simple/index.html                          every project
      simple/img2gray-cu130/index.html           every wheel of the project (all torch builds)
      simple/torch2.14/index.html                only the projects that have a build for torch 2.14
      simple/torch2.14/img2gray-cu130/index.html only the wheels whose ``Requires-Dist: torch`` admits torch 2.14

Links carry ``#sha256=``, ``data-requires-python`` and ``data-core-metadata`` (plus the PEP 658 spelling
``data-dist-info-metadata`` for older pips). ``simple/torch2.14/`` is to this index what
``download.pytorch.org/whl/cu130`` is to PyTorch's: point ``--index-url`` at it and a resolver never even
sees a wheel built for another torch. ``torch2.14`` cannot clash with a project page: project names are
normalized (PEP 503), and a normalized name has no dot.

Re-running is incremental and atomic: wheels whose size and mtime are unchanged are not re-read (their
hashes are kept in ``simple/.index-state.json``), every file is written under a temporary name and moved
into place, ``.metadata`` files are written before the pages that link to them, pages before the root
pages, and stale pages are removed last, so a client reading the tree mid-update never follows a link to
a missing or half-written file. A lock file keeps two runs from interleaving.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import html
import json
import os
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import quote

from packaging.metadata import parse_email
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from tools.errors import InvalidWheel, ToolError
from tools.wheelfile import read_wheel
from tools.wheelname import WheelName, labelled_torch, torch_label, torch_minor

STATE_FILE = ".index-state.json"
LOCK_FILE = ".index.lock"
_STATE_VERSION = 1
# PEP 629: the API version of the pages we write (1.0: PEP 503 + PEP 658/714 attributes, no JSON).
REPOSITORY_VERSION = "1.0"
# Highest patch release probed when asking "does this specifier admit some release of torch X.Y".
_MAX_PATCH = 99


def admits_torch_minor(specifier: SpecifierSet | None, minor: Version) -> bool:
    """Whether a wheel requiring ``torch<specifier>`` can be installed next to some torch ``X.Y.*`` release."""
    if specifier is None:
        return True
    return any(
        specifier.contains(Version(f"{minor.major}.{minor.minor}.{patch}"), prereleases=True)
        for patch in range(_MAX_PATCH + 1)
    )


@dataclass(frozen=True)
class IndexedWheel:
    """What the index knows about one wheel; kept in the state file so unchanged wheels are not re-read."""

    filename: str
    size: int
    mtime_ns: int
    sha256: str
    metadata_sha256: str
    requires_python: str | None
    torch: str | None  # the specifier of ``Requires-Dist: torch`` ("==2.14.*", ">=2.10"), None without one

    @property
    def name(self) -> WheelName:
        return WheelName.parse(self.filename)

    @property
    def project(self) -> str:
        return canonicalize_name(self.name.distribution)

    @property
    def torch_specifier(self) -> SpecifierSet | None:
        return None if self.torch is None else SpecifierSet(self.torch)

    def torch_minors(self) -> set[Version]:
        """The torch minors this wheel names: its ``+torchX.Y`` label and every version in its torch specifier."""
        minors = {label} if (label := labelled_torch(self.name.version)) else set()
        for spec in self.torch_specifier or ():
            try:
                version = Version(spec.version.removesuffix(".*"))
            except InvalidVersion:
                continue
            minors.add(torch_minor(version))
        return minors


@dataclass
class IndexReport:
    """What one run did; ``torch_indexes`` lists the sub-index folders under ``simple/``."""

    root: Path
    wheels: list[IndexedWheel]
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    files_written: int = 0
    torch_indexes: list[str] = field(default_factory=list)

    @property
    def projects(self) -> list[str]:
        return sorted({w.project for w in self.wheels})


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _metadata_bytes(path: Path) -> bytes:
    """The wheel's ``METADATA`` exactly as stored (PEP 658 serves it byte for byte)."""
    with zipfile.ZipFile(path) as archive:
        candidates = [
            n for n in archive.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")
        ]
        if len(candidates) != 1:
            raise InvalidWheel(f"{path.name}: expected one top-level .dist-info/METADATA, found {candidates}")
        return archive.read(candidates[0])


def torch_requirement_from(requires_dist: Iterable[str], filename: str) -> SpecifierSet | None:
    """The specifier of the one unconditional ``Requires-Dist: torch`` line; None without one."""
    found: list[SpecifierSet] = []
    for line in requires_dist:
        try:
            requirement = Requirement(line)
        except InvalidRequirement as exc:
            raise InvalidWheel(f"{filename}: Requires-Dist {line!r} is invalid: {exc}") from None
        if canonicalize_name(requirement.name) == "torch" and requirement.marker is None:
            found.append(requirement.specifier)
    if len(found) > 1:
        raise InvalidWheel(f"{filename}: Requires-Dist names torch {len(found)} times; expected at most once")
    return found[0] if found else None


def inspect_wheel(path: Path) -> tuple[IndexedWheel, bytes]:
    """Validate a wheel (RECORD hashes, METADATA name/version = filename, torch label = torch requirement)."""
    try:
        contents = read_wheel(path)  # raises InvalidWheel on a bad RECORD or METADATA
    except zipfile.BadZipFile as exc:  # read_wheel lets this one through
        raise InvalidWheel(f"{path.name}: not a zip file ({exc})") from None
    name = contents.name
    metadata = _metadata_bytes(path)
    raw, _ = parse_email(metadata)
    meta_name, meta_version = raw.get("name", ""), raw.get("version", "")
    if canonicalize_name(meta_name) != canonicalize_name(name.distribution) or meta_version != str(name.version):
        # pip discards such a wheel as "inconsistent"; refuse to publish it instead.
        raise InvalidWheel(
            f"{path.name}: METADATA says {meta_name} {meta_version}, the filename says "
            f"{name.distribution} {name.version}; rebuild the wheel so that both agree"
        )
    torch = torch_requirement_from(raw.get("requires_dist", []), path.name)
    label = labelled_torch(name.version)
    if label is not None and not admits_torch_minor(torch, label):
        raise InvalidWheel(
            f"{path.name}: its version is labelled for torch {label} but it requires "
            f"torch{torch if torch is not None else ' (nothing)'}; expected Requires-Dist: torch=={label}.*"
        )
    stat = path.stat()
    wheel = IndexedWheel(
        filename=path.name,
        size=stat.st_size,
        mtime_ns=stat.st_mtime_ns,
        sha256=_sha256_file(path),
        metadata_sha256=hashlib.sha256(metadata).hexdigest(),
        requires_python=raw.get("requires_python"),
        torch=None if torch is None else str(torch),
    )
    return wheel, metadata


def write_atomic(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` through a temporary file and ``os.replace``; False when it was already so."""
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def _page(title: str, links: Iterable[str]) -> bytes:
    body = "\n".join(f"    {link}<br>" for link in links)
    return (
        "<!DOCTYPE html>\n<html>\n  <head>\n"
        f'    <meta name="pypi:repository-version" content="{REPOSITORY_VERSION}">\n'
        f"    <title>{html.escape(title)}</title>\n  </head>\n  <body>\n"
        f"    <h1>{html.escape(title)}</h1>\n{body}\n  </body>\n</html>\n"
    ).encode()


def project_page(project: str, wheels: Sequence[IndexedWheel], depth: int) -> bytes:
    """The PEP 503 page of one project; ``depth`` is how many folders below the wheelhouse the page lies."""
    up = "../" * depth
    links = []
    for wheel in sorted(wheels, key=lambda w: (w.name.version, w.filename)):
        attributes = [f'href="{up}{quote(wheel.filename)}#sha256={wheel.sha256}"']
        if wheel.requires_python:
            attributes.append(f'data-requires-python="{html.escape(wheel.requires_python)}"')
        metadata = f"sha256={wheel.metadata_sha256}"
        attributes.append(f'data-core-metadata="{metadata}" data-dist-info-metadata="{metadata}"')
        links.append(f"<a {' '.join(attributes)}>{html.escape(wheel.filename)}</a>")
    return _page(f"Links for {project}", links)


def root_page(projects: Iterable[str], title: str = "Simple index") -> bytes:
    return _page(title, (f'<a href="{quote(p)}/">{html.escape(p)}</a>' for p in sorted(projects)))


def _read_state(simple: Path) -> dict[str, IndexedWheel]:
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


def _state_bytes(wheels: Sequence[IndexedWheel], pages: Sequence[str]) -> bytes:
    state = {"version": _STATE_VERSION, "wheels": [asdict(w) for w in wheels], "pages": sorted(pages)}
    return (json.dumps(state, indent=2, sort_keys=True) + "\n").encode()


def _previous_pages(simple: Path) -> set[str]:
    try:
        return set(json.loads((simple / STATE_FILE).read_text()).get("pages", []))
    except (OSError, ValueError, AttributeError):
        return set()


@contextmanager
def _locked(simple: Path) -> Iterator[None]:
    simple.mkdir(parents=True, exist_ok=True)
    with (simple / LOCK_FILE).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def write_index(wheelhouse: Path, *, extra_torch: Iterable[Version] = ()) -> IndexReport:
    """(Re)write ``wheelhouse/simple/`` and the ``.whl.metadata`` files for every ``wheelhouse/*.whl``.

    ``extra_torch`` adds sub-indexes for torch minors no wheel names (e.g. ``2.15`` for a stable-ABI
    ``torch>=2.10`` build that should also be found under ``simple/torch2.15/``).
    """
    if not wheelhouse.is_dir():
        raise ToolError(f"{wheelhouse} is not a folder; pass the folder that holds the .whl files")
    simple = wheelhouse / "simple"
    with _locked(simple):
        return _write_index_locked(wheelhouse, simple, extra_torch)


def _write_index_locked(wheelhouse: Path, simple: Path, extra_torch: Iterable[Version]) -> IndexReport:
    previous = _read_state(simple)
    previous_pages = _previous_pages(simple)
    report = IndexReport(root=wheelhouse, wheels=[])
    problems: list[str] = []
    wheels: list[IndexedWheel] = []
    metadata_files: dict[Path, bytes] = {}
    for path in sorted(wheelhouse.glob("*.whl")):
        stat = path.stat()
        known = previous.get(path.name)
        metadata_path = path.with_name(path.name + ".metadata")
        if (
            known is not None
            and (known.size, known.mtime_ns) == (stat.st_size, stat.st_mtime_ns)
            and metadata_path.is_file()
        ):
            wheels.append(known)  # unchanged since the last run: not re-read, its .metadata is in place
            continue
        try:
            wheel, metadata = inspect_wheel(path)
        except ToolError as exc:
            problems.append(str(exc))
            continue
        wheels.append(wheel)
        metadata_files[metadata_path] = metadata
        if known is None or known.sha256 != wheel.sha256:
            report.added.append(path.name)
    if problems:
        # Collect every bad wheel, then refuse to touch the index: a half-updated index is worse than a stale one.
        raise InvalidWheel("cannot index " + str(wheelhouse) + ":\n  " + "\n  ".join(problems))
    report.wheels = wheels
    report.removed = sorted(set(previous) - {w.filename for w in wheels})

    by_project: dict[str, list[IndexedWheel]] = {}
    for wheel in wheels:
        by_project.setdefault(wheel.project, []).append(wheel)
    minors = {m for w in wheels for m in w.torch_minors()} | {torch_minor(v) for v in extra_torch}

    project_pages: dict[str, bytes] = {}
    root_pages: dict[str, bytes] = {}
    for minor in sorted(minors):
        sub = torch_label(minor)
        sub_projects = []
        for project, project_wheels in sorted(by_project.items()):
            fitting = [w for w in project_wheels if admits_torch_minor(w.torch_specifier, minor)]
            if fitting:
                sub_projects.append(project)
                project_pages[f"{sub}/{project}/index.html"] = project_page(project, fitting, depth=3)
        root_pages[f"{sub}/index.html"] = root_page(sub_projects, f"Simple index: builds for torch {minor}")
    for project, project_wheels in sorted(by_project.items()):
        project_pages[f"{project}/index.html"] = project_page(project, project_wheels, depth=2)
    root_pages["index.html"] = root_page(by_project)
    report.torch_indexes = [torch_label(m) for m in sorted(minors)]

    # 1. PEP 658 files, 2. project pages, 3. root pages: nothing links to a file before it exists.
    for path, metadata in metadata_files.items():
        report.files_written += write_atomic(path, metadata)
    for pages in (project_pages, root_pages):
        for relative, data in sorted(pages.items()):
            report.files_written += write_atomic(simple / relative, data)
    pages = {**project_pages, **root_pages}
    write_atomic(simple / STATE_FILE, _state_bytes(wheels, list(pages)))

    # 4. Only now remove what no page links to any more; only what an earlier run wrote is ever removed.
    for relative in sorted(previous_pages - set(pages)):
        stale = simple / relative
        stale.unlink(missing_ok=True)
        _remove_empty_dirs(stale.parent, simple)
    for filename in report.removed:
        (wheelhouse / (filename + ".metadata")).unlink(missing_ok=True)
    return report


def _remove_empty_dirs(folder: Path, stop: Path) -> None:
    while folder != stop and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.index",
        description="Write a static PEP 503 index (with PEP 658 metadata and per-torch sub-indexes) "
        "for the wheels in a folder.",
    )
    parser.add_argument("wheelhouse", type=Path, help="folder holding the .whl files (e.g. wheelhouse)")
    parser.add_argument(
        "--torch",
        action="append",
        default=[],
        type=Version,
        metavar="X.Y",
        help="also write simple/torchX.Y/ for this torch minor (repeatable), e.g. for stable-ABI builds",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    print(f"* Indexing {args.wheelhouse}/ ...", file=sys.stderr)
    try:
        report = write_index(args.wheelhouse, extra_torch=args.torch)
    except ToolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        summary = {
            "version": 1,
            "wheels": [w.filename for w in report.wheels],
            "added": report.added,
            "removed": report.removed,
            "projects": report.projects,
            "torch_indexes": report.torch_indexes,
        }
        print(json.dumps(summary, indent=2))
        return 0
    print(
        f"Indexed {len(report.wheels)} wheels of {len(report.projects)} projects in {args.wheelhouse / 'simple'}/ "
        f"({len(report.added)} new, {len(report.removed)} removed, {report.files_written} files written)"
    )
    if report.torch_indexes:
        print("Per-torch indexes: " + ", ".join(f"simple/{name}/" for name in report.torch_indexes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
