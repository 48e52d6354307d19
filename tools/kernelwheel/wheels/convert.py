"""One kernel ``build/`` tree → wheels: the pipeline's run, each selected variant checked on its own and written.

Each variant goes through the steps in order, and a bad variant is reported with its reason, never stopping the
others:

1. ``selection.select_variants``: the name parses (``variants``) and is something this run produces wheels for;
2. ``checked_variant.check_variant_dir``: the variant's files, lock, signature, metadata.json, digests, layout and
   ELF files (``CheckedVariant``);
3. ``wheel_plan.plan_wheel``: the wheel it becomes, name, tags, requirements, description and files (``naming``,
   ``elf``, the entry package);
4. ``wheel_writer.write_wheel_if_changed``: the archive (reproducible, atomic).

Here: the threads that check and write, the order results are taken in (two variants giving one wheel, or one
build id, the first in order keeps it), and the ``Report``. A skip caused by bad input or an I/O error (ENOSPC,
EFBIG, EACCES, ...) has a ``FailureReason``: the command's exit code tells it from a variant that is merely not for
this run (another OS, ``--variant``, a duplicate).
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version
from rich.console import Console
from rich.markup import escape

from kernelwheel.format.build_ids import BuildIdentity, BuildIds, identity_of
from kernelwheel.format.digests import load_digest_cache, save_digest_cache
from kernelwheel.format.signatures import SignatureOptions
from kernelwheel.format.variants import Variant
from kernelwheel.hub.sources import Source
from kernelwheel.io.console import activity, print_warning
from kernelwheel.io.errors import InvalidVariant, InvalidWheel, ToolError
from kernelwheel.wheels import elf, wheel_contents
from kernelwheel.wheels.checked_variant import check_variant_dir
from kernelwheel.wheels.dependency_wheels import ConvertedKernel
from kernelwheel.wheels.noarch import plan_noarch
from kernelwheel.wheels.selection import VariantFilter, select_variants
from kernelwheel.wheels.wheel_contents import WheelContents
from kernelwheel.wheels.wheel_plan import plan_wheel
from kernelwheel.wheels.wheel_writer import WrittenWheel, write_wheel_if_changed


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

    @property
    def failed(self) -> list[str]:
        """The skipped variants whose reason is a failure (``FailureReason``)."""
        return [name for name, reason in self.skipped if isinstance(reason, FailureReason)]


def build_variant(variant: Variant, variant_dir: Path, source: Source, options: Options, *,
                  per_backend: bool = False, converted: Mapping[str, ConvertedKernel] | None = None,
                  ) -> WheelContents[wheel_contents.Source]:
    """Check one variant directory and return the wheel it becomes (nothing is written): ``check_variant_dir``, then
    ``plan_wheel``. ``per_backend``: a noarch variant that differs from its siblings, so its project is
    ``<kernel>-<backend>``; ``converted``: the kernel-depends converted in this run (``dependency_tree``)."""
    checked = check_variant_dir(variant, variant_dir, source, options.signatures, dist_name=options.dist_name)
    return plan_wheel(checked, source, kernel_version=options.kernel_version,
                      allow_unknown_deps=options.allow_unknown_deps, per_backend=per_backend, converted=converted)


class _Stopped(Exception):
    """A worker gives up because the run was interrupted (its temporary files are removed on the way out)."""


def _variant_names(source: Source) -> list[str]:
    if source.arrivals is not None:
        return list(source.arrivals.variants)
    return [p.name for p in source.build_dir.iterdir() if p.is_dir() or p.is_symlink()]


def convert(source: Source, options: Options, console: Console | None = None, *,
            converted: Mapping[str, ConvertedKernel] | None = None) -> Report:
    """Convert every selected variant of ``source.build_dir``; one failure never stops the others.

    Variants are checked ``options.jobs`` at a time (threads: hashing, deflate and file I/O run outside the GIL), and
    each one's wheel is written (``options.jobs`` at a time too) as soon as it and every variant before it are
    checked: so, while ``source.arrivals`` still downloads, the first wheels are written as the last files come.
    Reports, names and wheels do not depend on the order work finishes in."""
    console = console or Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        return _convert(source, options, console, converted)
    finally:
        if source.arrivals is not None:
            source.arrivals.close()


def _convert(source: Source, options: Options, console: Console,
             converted: Mapping[str, ConvertedKernel] | None) -> Report:
    report = Report()
    arrivals = source.arrivals
    if arrivals is None and not source.build_dir.is_dir():
        report.skipped.append(("build/", FailureReason(f"{source.label} has no build/ directory")))
        return report
    names = _variant_names(source)
    if source.locks is not None:
        for missing in sorted(set(source.locks) - set(names)):
            report.skipped.append((missing, FailureReason(f"locked in kernels.lock but absent from {source.label}")))
        names = [n for n in names if n in source.locks]
    selection = select_variants(names, options.variants)
    report.skipped.extend((r.name, FailureReason(r.reason) if r.invalid else r.reason) for r in selection.rejected)
    if arrivals is not None:  # the noarch plan compares the noarch variants' files: they are fetched first
        for variant in selection.accepted:
            if variant.arch is None:
                with contextlib.suppress(ToolError):  # a noarch variant that did not come: its check says why
                    arrivals.wait(str(variant))
    noarch = plan_noarch(source.build_dir, selection.accepted, source.trusted_roots)
    for variant, same in sorted(noarch.same_as.items(), key=lambda item: str(item[0])):
        report.skipped.append((str(variant), f"the same build as {same} (same files and dependencies): "
                                             "one noarch wheel"))
    accepted = [v for v in selection.accepted if v not in noarch.same_as]
    stop = threading.Event()

    def check(variant: Variant) -> tuple[WheelContents[wheel_contents.Source], BuildIdentity | None]:
        if arrivals is not None:
            arrivals.wait(str(variant))
        if stop.is_set():
            raise _Stopped()
        variant_dir = source.build_dir / str(variant)
        if variant_dir.is_symlink():
            raise InvalidVariant(f"build/{variant}: the variant directory itself is a symlink")
        checked = check_variant_dir(variant, variant_dir, source, options.signatures, dist_name=options.dist_name)
        contents = plan_wheel(checked, source, kernel_version=options.kernel_version,
                              allow_unknown_deps=options.allow_unknown_deps,
                              per_backend=variant in noarch.per_backend, converted=converted)
        return contents, identity_of(checked.metadata)

    def on_bytes(n: int) -> None:
        if stop.is_set():
            raise _Stopped()
        writing.advance(nbytes=n)

    def write(contents: WheelContents[wheel_contents.Source]) -> WrittenWheel:
        if stop.is_set():
            raise _Stopped()
        try:
            return write_wheel_if_changed(contents, options.out_dir, on_bytes)
        except OSError as exc:  # disk full, read-only --out, a file gone from the cache: one line, not a traceback
            raise InvalidWheel(f"{contents.name.filename}: cannot be written to {options.out_dir}: "
                               f"{exc.strerror or exc}") from None

    jobs = max(1, options.jobs or os.cpu_count() or 1)
    if options.digest_cache is not None:
        load_digest_cache(options.digest_cache)
    if options.verdict_cache is not None:
        elf.load_verdicts(options.verdict_cache)
    # Two pools: a check waiting for its variant's download must not hold up the writing of one already checked.
    with activity(console) as display, ThreadPoolExecutor(jobs, thread_name_prefix="check") as checkers, \
            ThreadPoolExecutor(jobs, thread_name_prefix="convert") as writers:
        checking = display.task("checking", source.label, files_total=len(accepted))
        writing = display.task("writing", source.label, files_total=0, bytes_total=0)
        try:
            # 1. Check every variant (digests, ELF, signatures), in parallel; results taken in variant order, so a
            #    variant's claim on its wheel's filename is settled once every variant before it is checked: two
            #    variants giving one wheel, the first one in order keeps it.
            claimed: dict[str, str] = {}
            build_ids = BuildIds()  # kernels' rule for two builds with one metadata.json id (build_ids)
            writes: list[tuple[str, WheelContents[wheel_contents.Source], Future[WrittenWheel]]] = []
            bytes_total = 0
            for variant, future in [(v, checkers.submit(check, v)) for v in accepted]:
                try:
                    contents, identity = future.result()
                except (ToolError, OSError) as exc:  # OSError: a file that cannot be read (EACCES, EIO, ...)
                    report.skipped.append((str(variant), _failure(f"build/{variant}", exc)))
                    continue
                finally:
                    checking.advance(files=1)
                same_id = build_ids.claim(str(variant), identity)
                if same_id is not None:
                    report.skipped.append((str(variant), FailureReason(same_id)))
                    continue
                filename = contents.name.filename
                if filename in claimed:
                    report.skipped.append((str(variant), FailureReason(f"build/{variant}: gives the same wheel as "
                                                                       f"{claimed[filename]} ({filename})")))
                    continue
                claimed[filename] = str(variant)
                # 2. Write its wheel (left alone when it is already there, byte for byte).
                bytes_total += _payload_bytes(contents)
                writing.update(files_total=len(writes) + 1, bytes_total=bytes_total)
                writes.append((str(variant), contents, writers.submit(write, contents)))
            checking.finish()
            for variant_name, contents, pending in writes:
                try:
                    written = pending.result()
                except (ToolError, OSError) as exc:  # OSError: ENOSPC, EFBIG, EISDIR, ... (nothing partial is left)
                    report.skipped.append((variant_name, _failure(f"build/{variant_name}: writing its wheel", exc)))
                    continue
                finally:
                    writing.advance(files=1)
                report.converted.append((variant_name, written.path))
                if not written.written:
                    report.unchanged.append(variant_name)
                    writing.advance(nbytes=_payload_bytes(contents))
                note = "" if written.written else " (up to date)"
                console.print(f"[green]✓[/] {escape(variant_name)} → {escape(written.path.name)}{note}")
                if written.replaced:  # never silent: an index or pip cache may hold the old bytes under this name
                    print_warning(console, f"{written.path} held a different build with the same name and version; "
                                  "replaced (a local folder has no commit to version by: --kernel-version keeps both)")
            writing.finish()
        except BaseException:
            # Ctrl-C or SIGTERM (atomic.sigterm_exits) in this thread: downloads not started are dropped, workers
            # stop at their next chunk and remove their temporaries; nothing partial is left when this returns.
            stop.set()
            if arrivals is not None:
                arrivals.cancel()
            for pool in (checkers, writers):
                pool.shutdown(wait=True, cancel_futures=True)
            raise
    if options.digest_cache is not None:
        save_digest_cache(options.digest_cache)
    if options.verdict_cache is not None:
        elf.save_verdicts(options.verdict_cache)
    return report


def _payload_bytes(contents: WheelContents[wheel_contents.Source]) -> int:
    return sum(len(s) if isinstance(s, bytes) else s.stat().st_size for s in contents.files.values())
