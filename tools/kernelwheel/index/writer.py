"""A static private index for a wheelhouse: PEP 503 pages, PEP 658 metadata, one sub-index per torch minor.

``python -m tools.cli.index wheelhouse`` turns ``wheelhouse/*.whl`` into a tree any static file server can serve::

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

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from tools.kernelwheel.atomic import write_atomic
from tools.kernelwheel.errors import InvalidWheel, ToolError
from tools.kernelwheel.index.pages import project_page, root_page
from tools.kernelwheel.index.state import STATE_FILE, locked, previous_pages, read_state, state_bytes
from tools.kernelwheel.index.wheels import IndexedWheel, admits_torch_minor, inspect_wheel
from tools.kernelwheel.naming import torch_label, torch_minor


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


def write_index(wheelhouse: Path, *, extra_torch: Iterable[Version] = ()) -> IndexReport:
    """(Re)write ``wheelhouse/simple/`` and the ``.whl.metadata`` files for every ``wheelhouse/*.whl``.

    ``extra_torch`` adds sub-indexes for torch minors no wheel names (e.g. ``2.15`` for a stable-ABI
    ``torch>=2.10`` build that should also be found under ``simple/torch2.15/``).
    """
    if not wheelhouse.is_dir():
        raise ToolError(f"{wheelhouse} is not a folder; pass the folder that holds the .whl files")
    simple = wheelhouse / "simple"
    with locked(simple):
        return _write_index_locked(wheelhouse, simple, extra_torch)


def _write_index_locked(wheelhouse: Path, simple: Path, extra_torch: Iterable[Version]) -> IndexReport:
    previous = read_state(simple)
    pages_before = previous_pages(simple)
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
    write_atomic(simple / STATE_FILE, state_bytes(wheels, list(pages)))

    # 4. Only now remove what no page links to any more; only what an earlier run wrote is ever removed.
    for relative in sorted(pages_before - set(pages)):
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
