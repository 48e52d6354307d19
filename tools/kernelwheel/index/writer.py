"""A static private index for a wheelhouse: PEP 503 pages, PEP 658 metadata, one sub-index per torch minor.

``kernelwheel index wheelhouse`` turns ``wheelhouse/*.whl`` into a tree any static file server can serve::

    wheelhouse/
      img2gray_cu130-0.1.0+torch2.14-cp39-abi3-manylinux_2_28_x86_64.whl
      img2gray_cu130-0.1.0+torch2.14-cp39-abi3-manylinux_2_28_x86_64.whl.metadata   (PEP 658: METADATA as is)
      simple/index.html                          every project
      simple/img2gray-cu130/index.html           every wheel of the project (all torch builds)
      simple/torch2.14/index.html                only the projects that have a build for torch 2.14
      simple/torch2.14/img2gray-cu130/index.html only the wheels whose ``Requires-Dist: torch`` admits torch 2.14

A wheel is in the sub-index of every torch minor its ``Requires-Dist: torch`` admits, from its lower bound on, among
the minors torch has released (``torch_minors.json``, ``kernelwheel.index.torch_minors``), those a wheel names and those
``--torch`` adds: a stable-ABI ``torch>=2.10`` build in ``torch2.10/`` up to the newest released minor, a classic
``+torch2.14`` build (``torch==2.14.*``) in ``torch2.14/`` alone.

Variant wheels (``hub2wheel --variant-wheels``, PEP 825 draft, experimental) are indexed as any wheel, on their
kernel's project page (``img2gray``) and the sub-indexes their torch requirement admits, and each version of them gets
``<name>-<version>-variants.json`` beside the wheels (``variants_json``: their variant.json files merged), linked from
every page that lists one of them, as uv 0.13.9 needs it. pip skips both kinds of file.

Links carry ``#sha256=``, ``data-requires-python`` and ``data-core-metadata`` (plus the PEP 658 spelling
``data-dist-info-metadata`` for older pips). ``simple/torch2.14/`` is to this index what
``download.pytorch.org/whl/cu130`` is to PyTorch's: point ``--index-url`` at it and a resolver never even
sees a wheel built for another torch. ``torch2.14`` cannot clash with a project page: project names are
normalized (PEP 503), and a normalized name has no dot.

Re-running is incremental and atomic, and costs what is new, not every byte: a wheel whose stat identity (size,
mtime_ns, ctime_ns, inode: what git's index trusts) is the one ``simple/.index-state.json`` recorded when it was
last hashed is not read again, nor is its ``.metadata`` file when its own identity matches (else that small file
alone is hashed). Any write to a file changes its ctime, which no system call sets back, and a replacement (``mv``,
``cp``, ``rsync``) gives it another inode: so a file under an old name with changed bytes has another identity, is
hashed, and is refused as before (a published file never changes). A file changed within ``RACY_WINDOW_NS`` of being
stat'ed has no identity recorded (its next change might keep the same timestamps): it is hashed again on the next
run. What the fast path trusts is the state file, which lives in ``simple/`` next to the pages it produced: whoever
can forge it can rewrite those pages too. ``verify=True`` (``kernelwheel index --verify``) ignores the identities:
every wheel is hashed and re-validated, and every ``.metadata`` compared with the wheel's own METADATA, as for a
wheelhouse restored from elsewhere. A wheel whose sha256 matches the state is not re-validated either way. Every
file is written under a temporary name and moved into place, ``.metadata`` files are written before the pages that
link to them, pages before the root pages, and stale pages are removed last, so a client reading the tree mid-update
never follows a link to a missing or half-written file. A lock file keeps two runs from interleaving; temporaries a
killed run left behind are swept at the start of the next.

Nothing outside the wheelhouse is written or removed: the state file is checked before use
(``kernelwheel.index.state``), and every path is resolved and checked to lie inside the wheelhouse (or
``simple/``) before it is written or removed, so a symlinked folder or a crafted state cannot redirect a write.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from stat import S_ISREG

from packaging.version import Version

from kernelwheel.index.indexed_wheel import (
    IndexedWheel,
    admits_torch_minor,
    inspect_wheel,
    metadata_bytes,
    normalised_collisions,
    sha256_file,
    torch_floor,
)
from kernelwheel.index.overlap import overlapping_builds
from kernelwheel.index.pages import project_page, root_page
from kernelwheel.index.state import (
    STATE_FILE,
    Identities,
    IndexState,
    StatIdentity,
    locked,
    read_state,
    state_bytes,
)
from kernelwheel.index.torch_minors import released_torch_minors
from kernelwheel.index.variants_json import merged_documents, variants_file_name
from kernelwheel.io.atomic import sweep_stale_temporaries, write_atomic
from kernelwheel.io.errors import IndexWriteFailed, InvalidWheel, ToolError
from kernelwheel.io.limited_read import read_limited
from kernelwheel.wheels.naming import torch_label, torch_minor
from kernelwheel.wheels.variant_names import VariantWheelName
from kernelwheel.wheels.wheel_reader import MAX_METADATA_BYTES


@dataclass
class IndexReport:
    """What one run did; ``torch_indexes`` lists the sub-index folders under ``simple/``."""

    root: Path
    wheels: list[IndexedWheel]
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    files_written: int = 0
    torch_indexes: list[str] = field(default_factory=list)
    swept: list[Path] = field(default_factory=list)  # temporaries of killed runs removed at the start
    warnings: list[str] = field(default_factory=list)  # one line per version with builds that overlap (overlap.py)
    hashed: int = 0  # wheels read and hashed in this run (the others matched their recorded stat identity)
    variants_files: list[str] = field(default_factory=list)  # <name>-<version>-variants.json beside variant wheels

    @property
    def projects(self) -> list[str]:
        return sorted({w.project for w in self.wheels})


def write_index(wheelhouse: Path, *, extra_torch: Iterable[Version] = (), verify: bool = False) -> IndexReport:
    """(Re)write ``wheelhouse/simple/`` and the ``.whl.metadata`` files for every ``wheelhouse/*.whl``.

    Every released torch minor (``torch_minors.json``) from a wheel's lower bound on that the wheel admits gets a
    sub-index (``_sub_index_minors``); ``extra_torch`` adds sub-indexes for minors neither released nor named by a
    wheel (e.g. ``2.16`` before its release, for a stable-ABI ``torch>=2.10`` build that should also be found under
    ``simple/torch2.16/``). ``IndexReport.warnings`` names the versions whose builds one machine would install alike
    (``overlap.py``). ``verify`` hashes every wheel, trusting no recorded stat identity.
    Raises ``InvalidWheel`` (every bad wheel, listed), ``InvalidIndexState`` or ``IndexWriteFailed``; in each
    case the index already in place is left whole.
    """
    if not os.path.isdir(wheelhouse):  # False, not OSError, for a name too long
        raise ToolError(f"{wheelhouse} is not a folder; pass the folder that holds the .whl files")
    simple = wheelhouse / "simple"
    try:
        _inside(simple, wheelhouse.resolve())
        with locked(simple):
            swept = _sweep(wheelhouse, simple)
            report = _write_index_locked(wheelhouse, simple, extra_torch, verify)
    except OSError as exc:
        if isinstance(exc, ToolError):
            raise
        where = exc.filename or wheelhouse
        raise IndexWriteFailed(f"{where}: {exc.strerror or exc}; the index already in place is unchanged") from None
    report.swept = swept
    return report


def _inside(path: Path, root: Path) -> Path:
    """``path`` resolved (symlinks followed), refused unless it lies in ``root`` (already resolved)."""
    resolved = path.resolve()
    if resolved != root and not resolved.is_relative_to(root):
        raise IndexWriteFailed(f"{path} leads to {resolved}, outside {root}; refusing to write or remove it")
    return resolved


def _sweep(wheelhouse: Path, simple: Path) -> list[Path]:
    """Temporaries (``.<name>.<pid>.<random>.part``) of runs that were killed, in every folder this tool writes."""
    folders = [wheelhouse, simple]
    for child in sorted(simple.iterdir()):
        if child.is_dir() and not child.is_symlink():
            folders.append(child)
            folders.extend(g for g in sorted(child.iterdir()) if g.is_dir() and not g.is_symlink())
    return [path for folder in folders for path in sweep_stale_temporaries(folder)]


def _identity(path: Path, now_ns: int) -> StatIdentity | None:
    """``path``'s stat identity; None when it is no regular file (a symlink included) or was changed too recently."""
    try:
        stat = path.lstat()
    except OSError:
        return None
    identity = StatIdentity.of(stat)
    return identity if S_ISREG(stat.st_mode) and not identity.racy(now_ns) else None


def _unchanged(path: Path, known: IndexedWheel | None, recorded: Identities,
               now_ns: int) -> tuple[IndexedWheel, Identities] | None:
    """The fast path: the state's record of ``path`` when the wheel's stat identity is the one recorded when it was
    hashed, and its ``.metadata`` file's too (or that small file still hashes as recorded); None otherwise."""
    if known is None or recorded.wheel is None:
        return None
    try:
        stat = path.lstat()
    except OSError:
        return None
    if not S_ISREG(stat.st_mode) or StatIdentity.of(stat) != recorded.wheel:
        return None
    metadata = path.with_name(path.name + ".metadata")
    metadata_identity = _identity(metadata, now_ns)
    changed = recorded.metadata is None or metadata_identity != recorded.metadata
    if changed and (not metadata.is_file() or metadata.is_symlink() or sha256_file(metadata) != known.metadata_sha256):
        return None
    return known, Identities(recorded.wheel, metadata_identity)


def _current(path: Path, known: IndexedWheel | None) -> IndexedWheel | None:
    """The state's record of ``path`` when the wheel and its ``.metadata`` still hold the content it names."""
    if known is None:
        return None
    metadata = path.with_name(path.name + ".metadata")
    if not metadata.is_file() or metadata.is_symlink() or sha256_file(metadata) != known.metadata_sha256:
        return None
    if sha256_file(path) != known.sha256:
        return None
    _check_metadata_file(path, metadata)
    stat = path.stat()
    return replace(known, size=stat.st_size, mtime_ns=stat.st_mtime_ns)


def _check_metadata_file(wheel: Path, metadata: Path) -> None:
    """Refuse a ``.metadata`` file that is not the wheel's own METADATA, byte for byte (PEP 658), even though the state
    records its hash: the state is a cache anyone with write access can edit, and installers resolve with what the
    ``.metadata`` says (its Requires-Dist) while installing the wheel."""
    served = read_limited(metadata, MAX_METADATA_BYTES)
    if served != metadata_bytes(wheel):
        raise InvalidWheel(
            f"{metadata.name}: differs from the METADATA inside {wheel.name}, though {STATE_FILE} records its hash; "
            f"expected the wheel's own METADATA. Remove {metadata.name} (it is rewritten from the wheel) and rerun"
        )


def _replaced(path: Path, known: IndexedWheel | None, wheel: IndexedWheel) -> str | None:
    """A problem line when ``path`` is a file the index already serves, now holding other bytes. As on PyPI, a
    published file never changes: installers cache it by name, and a lock file's hash would stop matching."""
    if known is None or known.sha256 == wheel.sha256:
        return None
    return (f"{path.name}: the index already serves this file name with other bytes (sha256 {known.sha256[:16]}..., "
            f"now {wheel.sha256[:16]}...); expected a published file never to change: give the new build another "
            "version, or remove the file, rerun the index, then add the new one")


def _sub_index_minors(wheels: Iterable[IndexedWheel], extra_torch: Iterable[Version],
                      released: Iterable[Version]) -> set[Version]:
    """Every torch minor that gets a sub-index: those ``--torch`` adds, and for each wheel the minors its
    ``Requires-Dist: torch`` admits among those it names and, from its lower bound on (``torch>=2.10``,
    ``==2.14.*``), the ``released`` ones, ``--torch``'s and those other wheels name; so that "use the sub-index of
    your torch minor" finds every wheel that supports it. Only minors of these lists are ever tried: ``torch>=0``
    gets one sub-index per released minor, from the first listed, and ``torch<2.13`` none."""
    wheels = list(wheels)
    extra = {torch_minor(v) for v in extra_torch}
    known = sorted(extra | set(released) | {m for w in wheels for m in w.torch_minors()})
    minors = set(extra)
    for wheel in wheels:
        specifier, named, floor = wheel.torch_specifier, wheel.torch_minors(), torch_floor(wheel.torch_specifier)
        minors.update(m for m in known if (m in named or (floor is not None and m >= floor))
                      and admits_torch_minor(specifier, m))
    return minors


def _write_index_locked(wheelhouse: Path, simple: Path, extra_torch: Iterable[Version], verify: bool) -> IndexReport:
    state: IndexState = read_state(simple)  # raises InvalidIndexState before anything is changed
    previous = state.wheels
    report = IndexReport(root=wheelhouse, wheels=[])
    problems: list[str] = []
    wheels: list[IndexedWheel] = []
    identities: dict[str, Identities] = {}
    metadata_files: dict[Path, bytes] = {}
    for path in sorted(wheelhouse.glob("*.whl")):
        if not path.is_file():
            problems.append(f"{path.name}: not a regular file")
            continue
        metadata_path = path.with_name(path.name + ".metadata")
        known = previous.get(path.name)
        now_ns = time.time_ns()
        try:
            fast = None if verify else _unchanged(path, known, state.identities.get(path.name, Identities()), now_ns)
            if fast is not None:
                wheels.append(fast[0])  # its stat identity is the one recorded when it was hashed
                identities[path.name] = fast[1]
                continue
            before = _identity(path, now_ns)  # taken before hashing: a change while it is read shows next time
            report.hashed += 1
            unchanged = _current(path, known)
            if unchanged is not None:
                wheels.append(unchanged)  # same content as last run: not re-validated, its .metadata is in place
                identities[path.name] = Identities(before, _identity(metadata_path, now_ns))
                continue
            wheel, metadata = inspect_wheel(path)
            identities[path.name] = Identities(before, None)  # its .metadata is written below
        except ToolError as exc:
            problems.append(str(exc))
            continue
        except OSError as exc:
            problems.append(f"{path.name}: cannot be read ({exc.strerror or exc})")
            continue
        if (problem := _replaced(path, known, wheel)) is not None:
            problems.append(problem)
            continue
        wheels.append(wheel)
        metadata_files[metadata_path] = metadata
        if known is None or known.sha256 != wheel.sha256:
            report.added.append(path.name)
    problems.extend(normalised_collisions(wheels))
    variants_files: dict[str, bytes] = {}
    try:
        variants_files = merged_documents(
            (w.name, w.filename, w.variant) for w in wheels if isinstance(w.name, VariantWheelName) and w.variant)
    except InvalidWheel as exc:  # two variant wheels of one version that disagree
        problems.append(str(exc))
    if problems:
        # Collect every bad wheel, then refuse to touch the index: a half-updated index is worse than a stale one.
        raise InvalidWheel("cannot index " + str(wheelhouse) + ":\n  " + "\n  ".join(problems))
    report.wheels = wheels
    report.warnings = overlapping_builds(wheels)
    report.removed = sorted(set(previous) - {w.filename for w in wheels})

    by_project: dict[str, list[IndexedWheel]] = {}
    for wheel in wheels:
        by_project.setdefault(wheel.project, []).append(wheel)
    minors = _sub_index_minors(wheels, extra_torch, released_torch_minors())

    variants_links = {name: hashlib.sha256(data).hexdigest() for name, data in variants_files.items()}
    report.variants_files = sorted(variants_files)
    project_pages: dict[str, bytes] = {}
    root_pages: dict[str, bytes] = {}
    for minor in sorted(minors):
        sub = torch_label(minor)
        sub_projects = []
        for project, project_wheels in sorted(by_project.items()):
            fitting = [w for w in project_wheels if admits_torch_minor(w.torch_specifier, minor)]
            if fitting:
                sub_projects.append(project)
                project_pages[f"{sub}/{project}/index.html"] = project_page(
                    project, fitting, depth=3, files=_variants_links(fitting, variants_links))
        root_pages[f"{sub}/index.html"] = root_page(sub_projects, f"Simple index: builds for torch {minor}")
    for project, project_wheels in sorted(by_project.items()):
        project_pages[f"{project}/index.html"] = project_page(
            project, project_wheels, depth=2, files=_variants_links(project_wheels, variants_links))
    root_pages["index.html"] = root_page(by_project)
    report.torch_indexes = [torch_label(m) for m in sorted(minors)]

    pages = {**project_pages, **root_pages}
    stale_pages = [simple / relative for relative in sorted(state.pages - set(pages))]
    stale_metadata = [wheelhouse / (filename + ".metadata") for filename in report.removed]
    stale_metadata += [wheelhouse / name for name in sorted(_variants_names(previous.values()) - set(variants_files))]
    # Every path is checked before the first write: a symlinked folder that leads out of the index fails the run
    # with nothing changed.
    house, root = wheelhouse.resolve(), simple.resolve()
    for path in [*metadata_files, *(wheelhouse / name for name in variants_files), *stale_metadata]:
        _inside(path, house)
    for path in [*(simple / relative for relative in pages), *stale_pages]:
        _inside(path, root)

    # 1. PEP 658 and variants.json files, 2. project pages, 3. root pages: nothing links to a file before it exists.
    for path, metadata in metadata_files.items():
        report.files_written += write_atomic(path, metadata)
    for name, data in variants_files.items():
        report.files_written += write_atomic(wheelhouse / name, data)
    for group in (project_pages, root_pages):
        for relative, data in sorted(group.items()):
            report.files_written += write_atomic(simple / relative, data)
    now_ns = time.time_ns()
    for path in metadata_files:  # written just now: racy, so hashed once more next run, unless stat'ed much later
        wheel_name = path.name.removesuffix(".metadata")
        identities[wheel_name] = replace(identities[wheel_name], metadata=_identity(path, now_ns))
    write_atomic(simple / STATE_FILE, state_bytes(wheels, list(pages), identities))

    # 4. Only now remove what no page links to any more: only pages an earlier run wrote (named by the state, in the
    #    index's own page layout, checked above to lie inside simple/), .metadata files of removed wheels, and the
    #    variants.json of a version whose variant wheels are all gone.
    for stale in stale_pages:
        stale.unlink(missing_ok=True)
        _remove_empty_dirs(stale.parent, simple)
    for stale in stale_metadata:
        stale.unlink(missing_ok=True)
    return report


def _variants_names(wheels: Iterable[IndexedWheel]) -> set[str]:
    """The variants.json files the variant wheels among ``wheels`` need."""
    return {variants_file_name(w.name) for w in wheels if isinstance(w.name, VariantWheelName)}


def _variants_links(wheels: Iterable[IndexedWheel], links: dict[str, str]) -> list[tuple[str, str]]:
    """``(file name, sha256)`` of the variants.json files a page listing ``wheels`` links to."""
    return [(name, links[name]) for name in sorted(_variants_names(wheels)) if name in links]


def _remove_empty_dirs(folder: Path, stop: Path) -> None:
    while folder != stop and folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
