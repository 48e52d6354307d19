"""One kernel ``build/`` tree → wheels: the pipeline's run, each selected variant checked on its own and written.

The run is four plain steps over one executor; a bad variant is reported with its reason, never stopping the others:

1. select (``selection.select_variants``, ``noarch.plan_noarch``): the name parses (``variants``) and is something
   this run produces wheels for; noarch folders that are one build give one wheel;
2. check (``checked_variant.check_variant_dir``): the variant's files, lock, signature, metadata.json, digests,
   layout and ELF files (``CheckedVariant``);
3. plan (``wheel_plan.plan_wheel``): the wheel it becomes, name, tags, requirements, description and files
   (``naming``, ``elf``, the entry package); ``plan_variant`` is steps 2 and 3 for one variant, nothing written;
4. write (``wheel_writer.write_wheel_if_changed``): the archive (reproducible, atomic); with
   ``Options.variant_wheels`` (experimental) also its variant wheel (``variant_wheels``) beside it.

Here: the order results are taken in (two variants giving one wheel, or one build id, the first in order keeps it),
the ``Report`` (``Report.skip`` is the one place a skip and its reason are recorded), and ``RunCaches``, the
run-to-run caches loaded before a run and saved after it. A skip caused by bad input or an I/O error (ENOSPC, EFBIG,
EACCES, ...) has a ``FailureReason``: the command's exit code tells it from a variant that is merely not for this run
(another OS, ``--variant``, a duplicate).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from packaging.version import Version
from rich.console import Console
from rich.markup import escape

from kernelwheel.format.build_ids import BuildIdentity, BuildIds, identity_of
from kernelwheel.format.digests import load_digest_cache, save_digest_cache
from kernelwheel.format.signatures import SignatureOptions
from kernelwheel.format.variants import Variant
from kernelwheel.hub.sources import Source
from kernelwheel.io.console import ActivityTask, activity, print_step, print_warning
from kernelwheel.io.errors import InvalidVariant, InvalidWheel, ToolError
from kernelwheel.wheels import elf, wheel_contents
from kernelwheel.wheels.checked_variant import check_variant_dir
from kernelwheel.wheels.dependency_wheels import ConvertedKernel
from kernelwheel.wheels.noarch import NoarchPlan, plan_noarch
from kernelwheel.wheels.selection import VariantFilter, select_variants
from kernelwheel.wheels.variant_wheels import NoVariant, variant_wheel
from kernelwheel.wheels.wheel_contents import WheelContents
from kernelwheel.wheels.wheel_plan import plan_wheel
from kernelwheel.wheels.wheel_writer import WrittenWheel, write_wheel_if_changed

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")
_Contents = WheelContents[wheel_contents.Source]
# (variant, its wheel, the write in flight, whether it is the variant wheel)
_Writes = list[tuple[str, _Contents, Future[WrittenWheel], bool]]


@dataclass(frozen=True)
class Options:
    out_dir: Path = Path("wheelhouse")
    dist_name: str | None = None
    kernel_version: Version | None = None
    variants: VariantFilter = field(default_factory=VariantFilter)
    allow_unknown_deps: bool = False  # pass python-depends kernels does not know through as pip requirements
    signatures: SignatureOptions = field(default_factory=SignatureOptions)  # trust root, signer workflows
    jobs: int | None = None  # variants checked and wheels written at once (default: one per CPU core)
    digest_cache: Path | None = None  # file digests kept between runs (digests.save_digest_cache): reruns hash nothing
    verdict_cache: Path | None = None  # ELF verdicts by content sha256 (elf.save_verdicts): reruns parse nothing
    variant_wheels: bool = False  # also write each wheel's variant wheel (PEP 825 draft, experimental: variant_wheels)


class FailureReason(str):
    """A skip reason that is a failure (bad input, an I/O error), not a variant outside this run. A ``str``, so every
    report that copies reasons (``dependency_tree``) keeps the distinction."""


def _failure(where: str, exc: ToolError | OSError) -> FailureReason:
    if isinstance(exc, OSError):
        code = errno.errorcode.get(exc.errno or 0, "")
        target = f" ({exc.filename})" if exc.filename else ""
        return FailureReason(f"{where}: {exc.strerror or exc}{f' [{code}]' if code else ''}{target}")
    return FailureReason(str(exc))


@dataclass
class Report:
    converted: list[tuple[str, Path]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)  # variants whose wheel was already there, byte for byte
    variant_wheels: list[tuple[str, Path]] = field(default_factory=list)  # (variant, its variant wheel) when asked

    @property
    def failed(self) -> list[str]:
        """The skipped variants whose reason is a failure (``FailureReason``)."""
        return [name for name, reason in self.skipped if isinstance(reason, FailureReason)]

    def skip(self, name: str, reason: str | ToolError | OSError, *, failed: bool = False, where: str = "") -> None:
        """The one place a variant is recorded as skipped: ``reason`` as given (a ``FailureReason`` when ``failed``),
        or an error raised by a step (a failure, ``where`` naming what failed for an ``OSError``)."""
        if isinstance(reason, (ToolError, OSError)):
            self.skipped.append((name, _failure(where or f"build/{name}", reason)))
        else:
            self.skipped.append((name, FailureReason(reason) if failed else reason))


@dataclass(frozen=True)
class RunCaches:
    """The run-to-run caches of one conversion, loaded before its first variant and saved after its last (not after
    an error). What they fill is process-wide memory, each a pure function of its key (``digests``, ``elf``)."""

    digests: Path | None = None  # file digests kept between runs (digests.save_digest_cache): reruns hash nothing
    verdicts: Path | None = None  # ELF verdicts by content sha256 (elf.save_verdicts): reruns parse nothing

    @classmethod
    def of(cls, options: Options) -> RunCaches:
        return cls(options.digest_cache, options.verdict_cache)

    @contextlib.contextmanager
    def kept(self) -> Iterator[None]:
        if self.digests is not None:
            load_digest_cache(self.digests)
        if self.verdicts is not None:
            elf.load_verdicts(self.verdicts)
        yield
        if self.digests is not None:
            save_digest_cache(self.digests)
        if self.verdicts is not None:
            elf.save_verdicts(self.verdicts)


@dataclass(frozen=True)
class Planned:
    """The wheel a checked variant becomes (nothing written yet) and the build it is (``build_ids``)."""

    contents: _Contents
    identity: BuildIdentity | None


def plan_variant(variant: Variant, source: Source, options: Options, *, per_backend: bool = False,
                 converted: Mapping[str, ConvertedKernel] | None = None) -> Planned:
    """Steps 2 and 3 for ``build/<variant>/`` of ``source`` (nothing is written): a variant folder that is itself a
    symlink is refused, then ``check_variant_dir`` and ``plan_wheel``. ``per_backend``: a noarch variant that differs
    from its siblings, so its project is ``<kernel>-<backend>``; ``converted``: the kernel-depends converted in this
    run (``dependency_tree``)."""
    variant_dir = source.build_dir / str(variant)
    if variant_dir.is_symlink():
        raise InvalidVariant(f"build/{variant}: the variant directory itself is a symlink")
    checked = check_variant_dir(variant, variant_dir, source, options.signatures, dist_name=options.dist_name)
    contents = plan_wheel(checked, source, kernel_version=options.kernel_version,
                          allow_unknown_deps=options.allow_unknown_deps, per_backend=per_backend, converted=converted)
    return Planned(contents, identity_of(checked.metadata))


class _Stopped(Exception):
    """A worker gives up because the run was interrupted (its temporary files are removed on the way out)."""


@dataclass
class _Run:
    """What one run's steps share: its input, options, noarch plan and the stop signal an interrupt sets."""

    source: Source
    options: Options
    converted: Mapping[str, ConvertedKernel] | None
    noarch: NoarchPlan
    stop: threading.Event = field(default_factory=threading.Event)

    def go_on(self) -> None:
        if self.stop.is_set():
            raise _Stopped()

    def check(self, variant: Variant) -> Planned:
        """Steps 2 and 3 on a worker, once the variant's files are all in (``Source.arrivals``)."""
        if self.source.arrivals is not None:
            self.source.arrivals.wait(str(variant))
        self.go_on()
        return plan_variant(variant, self.source, self.options, per_backend=variant in self.noarch.per_backend,
                            converted=self.converted)

    def write(self, contents: _Contents, progress: ActivityTask) -> WrittenWheel:
        """Step 4 on a worker: the wheel written, or left alone when already there byte for byte."""
        self.go_on()
        try:
            return write_wheel_if_changed(contents, self.options.out_dir, functools.partial(self._wrote, progress))
        except OSError as exc:  # disk full, read-only --out, a file gone from the cache: one line, not a traceback
            raise InvalidWheel(f"{contents.name.filename}: cannot be written to {self.options.out_dir}: "
                               f"{exc.strerror or exc}") from None

    def _wrote(self, progress: ActivityTask, nbytes: int) -> None:
        """A chunk of a wheel written: counted, unless the run stopped (the write gives up, removing its temporary)."""
        self.go_on()
        progress.advance(nbytes=nbytes)


def _variant_names(source: Source) -> list[str]:
    if source.arrivals is not None:
        return list(source.arrivals.variants)
    return [p.name for p in source.build_dir.iterdir() if p.is_dir() or p.is_symlink()]


def convert(source: Source, options: Options, console: Console | None = None, *,
            converted: Mapping[str, ConvertedKernel] | None = None) -> Report:
    """Convert every selected variant of ``source.build_dir``; one failure never stops the others.

    Variants are checked ``options.jobs`` at a time (threads: hashing, deflate and file I/O run outside the GIL), and
    each one's wheel is written as soon as it and every variant before it are checked, on the same executor (which
    has ``options.jobs`` more threads than checks: a check waiting for its download never holds up a write): so,
    while ``source.arrivals`` still downloads, the first wheels are written as the last files come. Reports, names
    and wheels do not depend on the order work finishes in."""
    console = console or Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        return _convert(source, options, console, converted)
    finally:
        if source.arrivals is not None:
            source.arrivals.close()


def _select(source: Source, options: Options, report: Report) -> tuple[list[Variant], NoarchPlan] | None:
    """Step 1: the variants to check, in order, and the noarch plan; every other one skipped with its reason."""
    arrivals = source.arrivals
    if arrivals is None and not source.build_dir.is_dir():
        report.skip("build/", f"{source.label} has no build/ directory", failed=True)
        return None
    names = _variant_names(source)
    if source.locks is not None:
        for missing in sorted(set(source.locks) - set(names)):
            report.skip(missing, f"locked in kernels.lock but absent from {source.label}", failed=True)
        names = [n for n in names if n in source.locks]
    selection = select_variants(names, options.variants)
    for rejected in selection.rejected:
        report.skip(rejected.name, rejected.reason, failed=rejected.invalid)
    if arrivals is not None:  # the noarch plan compares the noarch variants' files: they are fetched first
        for variant in selection.accepted:
            if variant.arch is None:
                with contextlib.suppress(ToolError):  # a noarch variant that did not come: its check says why
                    arrivals.wait(str(variant))
    noarch = plan_noarch(source.build_dir, selection.accepted, source.trusted_roots)
    for variant, same in sorted(noarch.same_as.items(), key=lambda item: str(item[0])):
        report.skip(str(variant), f"the same build as {same} (same files and dependencies): one noarch wheel")
    return [v for v in selection.accepted if v not in noarch.same_as], noarch


def _in_order(executor: Executor, step: Callable[[_Item], _Result], items: Sequence[_Item],
              width: int) -> Iterator[tuple[_Item, Future[_Result]]]:
    """``step`` over ``items`` on ``executor``, started in order and at most ``width`` at a time; each item with its
    finished future, in order."""
    futures: list[Future[_Result]] = []
    running: set[Future[_Result]] = set()
    for index, item in enumerate(items):
        while True:
            running = {f for f in running if not f.done()}
            while len(futures) < len(items) and len(running) < width:
                futures.append(executor.submit(step, items[len(futures)]))
                running.add(futures[-1])
            if futures[index].done():
                break
            wait(running, return_when=FIRST_COMPLETED)
        yield item, futures[index]


def _convert(source: Source, options: Options, console: Console,
             converted: Mapping[str, ConvertedKernel] | None) -> Report:
    report = Report()
    selected = _select(source, options, report)
    if selected is None:
        return report
    accepted, noarch = selected
    run = _Run(source, options, converted, noarch)
    jobs = max(1, options.jobs or os.cpu_count() or 1)
    # One executor, twice ``jobs`` threads: checks take at most half (``_in_order``), so a check waiting for its
    # variant's download never holds up the writing of one already checked.
    with RunCaches.of(options).kept(), activity(console) as display, \
            ThreadPoolExecutor(2 * jobs, thread_name_prefix="convert") as executor:
        checking = display.task("checking", source.label, files_total=len(accepted))
        writing = display.task("writing", source.label, files_total=0, bytes_total=0)
        try:
            writes = _check_and_claim(run, executor, accepted, jobs, report, console, checking, writing)
            checking.finish()
            _take_written(writes, report, console, writing)
            writing.finish()
        except BaseException:
            # Ctrl-C or SIGTERM (atomic.sigterm_exits) in this thread: downloads not started are dropped, workers
            # stop at their next chunk and remove their temporaries; nothing partial is left when this returns.
            run.stop.set()
            if source.arrivals is not None:
                source.arrivals.cancel()
            executor.shutdown(wait=True, cancel_futures=True)
            raise
    return report


def _check_and_claim(run: _Run, executor: Executor, accepted: Sequence[Variant], jobs: int, report: Report,
                     console: Console, checking: ActivityTask, writing: ActivityTask) -> _Writes:
    """Steps 2 and 3 for every variant, results taken in variant order, so a variant's claim on its wheel's filename
    (and on its build id) is settled once every variant before it is checked: two variants giving one wheel, the
    first one in order keeps it. Each wheel that stays is handed to step 4 at once."""
    claimed: dict[str, str] = {}
    build_ids = BuildIds()  # kernels' rule for two builds with one metadata.json id (build_ids)
    writes: _Writes = []
    bytes_total = 0
    for variant, future in _in_order(executor, run.check, accepted, jobs):
        try:
            planned = future.result()
        except (ToolError, OSError) as exc:  # OSError: a file that cannot be read (EACCES, EIO, ...)
            report.skip(str(variant), exc)
            continue
        finally:
            checking.advance(files=1)
        same_id = build_ids.claim(str(variant), planned.identity)
        if same_id is not None:
            report.skip(str(variant), same_id, failed=True)
            continue
        contents = planned.contents
        filename = contents.name.filename
        if filename in claimed:
            report.skip(str(variant), f"build/{variant}: gives the same wheel as {claimed[filename]} ({filename})",
                        failed=True)
            continue
        claimed[filename] = str(variant)
        wheels = [(contents, False)]
        if run.options.variant_wheels:
            wheels += [(v, True) for v in _variant_of(str(variant), contents, claimed, report, console)]
        for wheel, is_variant in wheels:
            bytes_total += _payload_bytes(wheel)
            writing.update(files_total=len(writes) + 1, bytes_total=bytes_total)
            writes.append((str(variant), wheel, executor.submit(run.write, wheel, writing), is_variant))
    return writes


def _variant_of(variant: str, contents: _Contents, claimed: dict[str, str], report: Report,
                console: Console) -> list[_Contents]:
    """The variant wheel of ``contents`` (``variant_wheels``), claimed as the backend-named wheels are: none, with
    a note, for a build that has no variant (another backend, noarch); a variant wheel that another variant already
    gives (the same label and tags) is skipped with the reason."""
    try:
        derived = variant_wheel(contents)
    except NoVariant as exc:
        print_step(console, f"{variant}: no variant wheel ({exc})")
        return []
    filename = derived.name.filename
    if filename in claimed:
        report.skip(f"{variant} (variant wheel)", f"build/{variant}: gives the same variant wheel as "
                    f"{claimed[filename]} ({filename})", failed=True)
        return []
    claimed[filename] = variant
    return [derived]


def _take_written(writes: _Writes, report: Report, console: Console,
                  writing: ActivityTask) -> None:
    """Step 4's results in variant order: one line per wheel, and the report."""
    for variant_name, contents, pending, is_variant in writes:
        try:
            written = pending.result()
        except (ToolError, OSError) as exc:  # OSError: ENOSPC, EFBIG, EISDIR, ... (nothing partial is left)
            what = "variant wheel" if is_variant else "wheel"
            report.skip(f"{variant_name} ({what})" if is_variant else variant_name, exc,
                        where=f"build/{variant_name}: writing its {what}")
            continue
        finally:
            writing.advance(files=1)
        if is_variant:
            report.variant_wheels.append((variant_name, written.path))
        else:
            report.converted.append((variant_name, written.path))
        if not written.written:
            if not is_variant:
                report.unchanged.append(variant_name)
            writing.advance(nbytes=_payload_bytes(contents))
        note = ("" if written.written else " (up to date)") + (" (variant wheel, experimental)" if is_variant else "")
        console.print(f"[green]✓[/] {escape(variant_name)} → {escape(written.path.name)}{note}")
        if written.replaced:  # never silent: an index or pip cache may hold the old bytes under this name
            print_warning(console, f"{written.path} held a different build with the same name and version; "
                          "replaced (a local folder has no commit to version by: --kernel-version keeps both)")


def _payload_bytes(contents: _Contents) -> int:
    return sum(len(s) if isinstance(s, bytes) else s.stat().st_size for s in contents.files.values())
