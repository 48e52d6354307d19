"""One kernel ``build/`` tree → wheels: each selected variant checked on its own and written as one wheel.

A bad variant is reported with its reason and never stops the others:

* the name parses (``variants``) and is something this run produces wheels for (``selection``);
* every path is relative and inside the variant, symlinks stay inside it or point at the Hub cache's blobs
  (``layout``);
* ``metadata.json.sigstore`` verifies over metadata.json before it is parsed (``signatures``; an unsigned variant
  warns, or is skipped under ``require_signature``), and the bundle ships beside metadata.json in the package;
* ``metadata.json``'s per-file digests (``digests``) and the ``kernels.lock`` hash (``lockfile``) match, when present;
* every file that is ELF by its magic (whatever its name) and every ``*.so`` is ELF for the variant's CPU, and a noarch
  variant holds none; tags come from those files (``elf``);
* there is a Python package: ``build/<v>/__init__.py`` (flat layout) or ``build/<v>/<pkg>/__init__.py`` (nested).

Names, versions and requirements come from ``naming``; the archive from ``wheelfile`` (reproducible, atomic).
A skip caused by bad input or an I/O error (ENOSPC, EFBIG, EACCES, ...) has a ``FailureReason``: the command's
exit code tells it from a variant that is merely not for this run (another OS, ``--variant``, a duplicate).
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
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from rich.console import Console
from rich.markup import escape

from kernelwheel.format import lockfile
from kernelwheel.format.build_ids import BuildIdentity, BuildIds, identity_of
from kernelwheel.format.digests import file_digest, load_digest_cache, save_digest_cache, verify_digest
from kernelwheel.format.kernel_depends import imports_kernels, kernels_requirement, parse_kernel_info
from kernelwheel.format.metadata import build_layout
from kernelwheel.format.python_depends import depends_requirements, read_depends
from kernelwheel.format.signatures import SignatureOptions, check_variant
from kernelwheel.format.variant_folder import collect_files, find_package, metadata_file, read_metadata
from kernelwheel.format.variants import Variant
from kernelwheel.hub.sources import Source
from kernelwheel.io.console import activity, print_warning
from kernelwheel.io.errors import InvalidVariant, InvalidWheel, InvalidWheelName, ToolError
from kernelwheel.wheels import elf, wheelfile
from kernelwheel.wheels.dependency_wheels import ConvertedKernel, dependency_requirements
from kernelwheel.wheels.entry_package import CHECKED_BACKENDS, Entry, checked_archs, entry_source, usable_build_id
from kernelwheel.wheels.entry_runtime import SKIP_ARCH_CHECK
from kernelwheel.wheels.naming import WheelName, framework_requirements, parse_version, wheel_name_for
from kernelwheel.wheels.noarch import backend_of, plan_noarch
from kernelwheel.wheels.selection import VariantFilter, select_variants
from kernelwheel.wheels.wheelfile import WheelContents, build_metadata, write_wheel_if_changed
from kernelwheel.wheels.zip_layout import unpack_variant


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


def _requirements(variant: Variant, metadata: Mapping[str, Any], where: str, options: Options) -> list[Requirement]:
    """The framework (torch / tvm-ffi / mlx; none for an SDK) first, then ``python-depends`` mapped for the variant's
    backend."""
    names = read_depends(metadata.get("python-depends"), where)
    return [*framework_requirements(variant),
            *depends_requirements(names, variant.depends_backend, where, allow_unknown=options.allow_unknown_deps)]


def _base_version(source: Source, options: Options, metadata: Mapping[str, Any], where: str) -> Version:
    """--kernel-version, else a release ref's version, else (a Hub branch or commit) ``<major>.<YYYYMMDD>.<HHMMSS>``
    of the commit's date, else (a local folder) metadata.json's ``version``."""
    if options.kernel_version is not None:
        return options.kernel_version
    if source.version is not None:
        return source.version
    declared = _metadata_version(metadata, where)
    if source.commit_date is not None:
        major = source.series.major if source.series is not None else (declared.major if declared else 0)
        return Version(f"{major}.{source.commit_date:%Y%m%d}.{source.commit_date:%H%M%S}")
    if source.trusted_roots:  # a Hub snapshot whose commit date could not be read (offline, never seen online)
        raise InvalidVariant(f"{where}: {source.label} is not a release tag and its commit date is unknown (see the "
                             "warning above); run once online or pass --kernel-version")
    if declared is not None:
        return declared
    raise InvalidVariant(
        f"{where}: no kernel version (no metadata.json 'version', no version tag/branch); pass --kernel-version"
    )


def _metadata_version(metadata: Mapping[str, Any], where: str) -> Version | None:
    value = metadata.get("version")
    if value is None:
        return None
    try:
        return parse_version(value, "version")
    except InvalidWheelName as exc:
        raise InvalidVariant(f"{where}/metadata.json: {exc}") from None


def _build_facts(metadata: Mapping[str, Any]) -> list[str]:
    """What kernels reads from metadata.json beyond the files, as Markdown list items for the wheel's description:
    the GPU architectures the binaries hold, the oldest kernels that loads them, where they were built from."""
    facts: list[str] = []
    backend = metadata.get("backend")
    if isinstance(backend, dict):
        archs = backend.get("archs")
        if isinstance(archs, list) and archs:
            listed = ", ".join(str(a) for a in archs)
            if backend.get("type") in CHECKED_BACKENDS and isinstance(metadata.get("id"), str):
                facts.append(f"- Backend `{backend['type']}`, compiled for architectures {listed}: importing it on a "
                             "GPU outside this list raises an ImportError that says so (kernels' check; "
                             f"`{SKIP_ARCH_CHECK}=1` skips it).")
            else:
                facts.append(f"- Backend `{backend.get('type', '?')}`, compiled for architectures {listed}: on a GPU "
                             "outside this list the op fails with a \"no kernel image\" error at its first call.")
    minver = metadata.get("kernels-minver")
    if isinstance(minver, str):
        facts.append(f"- Loading it through `kernels` needs kernels >= {minver}.")
    for key in ("upstream", "source"):
        if isinstance(metadata.get(key), str):
            facts.append(f"- {key.capitalize()}: {metadata[key]}")
    provenance = metadata.get("provenance")
    if isinstance(provenance, dict):
        builder = provenance.get("kernel-builder")
        kernel = provenance.get("kernel")
        if isinstance(builder, dict):
            facts.append(f"- Built by kernel-builder {builder.get('version', '?')}.")
        if isinstance(kernel, dict) and kernel.get("commit"):
            dirty = " with uncommitted changes (a dirty build)" if kernel.get("dirty") else ""
            facts.append(f"- Kernel source: commit {kernel['commit']}{dirty}.")
    return facts


def _description(kernel: str, package: str, variant: Variant, source: Source, name: WheelName,
                 metadata: Mapping[str, Any]) -> str:
    facts = _build_facts(metadata)
    build = ("\n## Build\n\n" + "\n".join(facts) + "\n") if facts else ""
    return (
        f"# {name.distribution} {name.version}\n\n"
        f"The `{kernel}` kernel's build variant `{variant}`, repackaged as a wheel by `tools.hub2wheel` from "
        f"{source.label}. Import it as `import {package}`; its files are the variant's, unchanged.\n{build}"
    )


def build_variant(variant: Variant, variant_dir: Path, source: Source, options: Options, *,
                  per_backend: bool = False, converted: Mapping[str, ConvertedKernel] | None = None,
                  ) -> WheelContents[wheelfile.Source]:
    """Check one variant directory and return the wheel it becomes (nothing is written). ``per_backend``: a noarch
    variant that differs from its siblings, so its project is ``<kernel>-<backend>``; ``converted``: the
    kernel-depends converted in this run (``dependency_tree``)."""
    where = f"build/{variant}"
    files = collect_files(variant_dir, where, source.trusted_roots)
    if source.locks is not None:
        lock = source.locks.get(str(variant))
        if lock is None:
            raise InvalidVariant(f"{where}: not in kernels.lock for {source.label}")
        lockfile.verify_variant(variant_dir, lock, label=f"{source.label} {where}")
    signed = check_variant(variant_dir, files, where, options.signatures, source.trusted_roots)  # before parsing
    metadata = read_metadata(files, where)
    verify_digest(files, metadata, where)  # the variant as published: a zip layout's archive, before it is unpacked
    zipped = build_layout(metadata, where) == "zip"
    sources: Mapping[str, wheelfile.Source] = unpack_variant(files, metadata, where).files if zipped else files
    kernel = options.dist_name or str(metadata.get("name") or source.kernel_name)
    package, prefix = find_package(sources, metadata, kernel, where)
    if prefix and not options.dist_name and "name" not in metadata:
        kernel = package.replace("_", "-")  # nested layout: the package is named after the kernel

    info = parse_kernel_info(files["metadata.json"].read_bytes(), where) if metadata.get("kernel-depends") else None
    dependencies = info.dependencies if info is not None else ()
    if dependencies and (prefix or zipped):  # the entry hands the installed build folder to get_local_kernel
        raise InvalidVariant(f"{where}: kernel-depends is converted for the flat build layout only (metadata.json "
                             f"beside __init__.py); this variant uses the {'zip' if zipped else 'nested'} layout")
    archs = checked_archs(metadata, variant.depends_backend) if variant.arch is not None else ()
    # A build with dependencies, or GPU archs to check, installs under its unique id behind an entry package named
    # after the kernel that does what kernels does before importing it (entry_runtime); any other build is the
    # package itself.
    build_id = info.build_id if info is not None else usable_build_id(metadata, package)
    build_package = build_id if build_id is not None and (dependencies or archs) else package
    payload = {f"{build_package}/{rel[len(prefix):]}": p for rel, p in sources.items() if rel.startswith(prefix)}
    elfs = []
    for arcname, path in sorted(payload.items()):
        if isinstance(path, bytes):  # unpacked from a zip layout's archive, which holds no ELF (zip_layout)
            continue
        if elf.looks_like_shared_object(arcname) or elf.has_elf_magic(path):  # by content: any name may hide one
            real = Path(os.path.realpath(path))
            elfs.append(elf.read_elf(real, display=f"{where}/{arcname[len(package)+1:]}", sha256=file_digest(real)))
    if elfs and variant.arch is None:
        raise InvalidVariant(f"{where}: a noarch variant must not contain compiled files ({elfs[0].path})")
    if variant.arch is not None:
        wrong = [e for e in elfs if e.cpu != variant.arch.cpu]
        if wrong:
            raise InvalidVariant(f"{where}: {wrong[0].path} is built for {wrong[0].cpu}, not {variant.arch.cpu}")

    tags = elf.python_tags(elfs, variant.python)
    platform = elf.platform_tag(elfs, variant.arch.cpu) if elfs and variant.arch else "any"
    name = wheel_name_for(
        variant,
        kernel,
        _base_version(source, options, metadata, where),
        python_tag=tags.python_tag,
        abi_tag=tags.abi_tag,
        platform_tag=platform,
        noarch_backend=backend_of(variant) if per_backend else None,
    )
    requires = _requirements(variant, metadata, where, options)
    packages: dict[str, str] = {}
    if dependencies and info is not None:
        needed, packages = dependency_requirements(variant, info, converted or {}, where)
        requires += [*needed, kernels_requirement(info.kernels_minver, has_dependencies=True,
                                                       where=f"{where}/metadata.json")]
    elif imports_kernels([_contents(p) for arc, p in payload.items() if arc.endswith(".py")]):
        minver = metadata.get("kernels-minver")
        requires.append(kernels_requirement(minver if isinstance(minver, str) else None, has_dependencies=False))
    raw = build_metadata(
        name,
        requires_dist=requires,
        requires_python=SpecifierSet(tags.requires_python) if tags.requires_python else None,
        summary=f"{kernel} kernel, build variant {variant}, repackaged from {source.label}",
        description=_description(kernel, package, variant, source, name, metadata),
    )
    if isinstance(metadata.get("license"), str):
        raw["license"] = metadata["license"]
    contents: dict[str, wheelfile.Source] = dict(payload)  # streamed from disk when the wheel is written
    if not zipped:  # a zip layout's bundle signs a metadata.json that is not installed (zip_layout.unpack_variant)
        on_disk = {arc: p for arc, p in payload.items() if isinstance(p, Path)}
        contents.update(signed.wheel_files(build_package, on_disk))  # metadata.json + its bundle beside the build
    if build_package != package:
        entry = Entry(build_package, kernel, str(variant), variant.depends_backend, archs, packages)
        contents[f"{package}/__init__.py"] = entry_source(entry)
    return WheelContents(name=name, metadata=raw, files=contents, root_is_purelib=not elfs)


def _contents(source: wheelfile.Source) -> bytes:
    return source if isinstance(source, bytes) else source.read_bytes()


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

    def check(variant: Variant) -> tuple[WheelContents[wheelfile.Source], BuildIdentity | None]:
        if arrivals is not None:
            arrivals.wait(str(variant))
        if stop.is_set():
            raise _Stopped()
        variant_dir = source.build_dir / str(variant)
        if variant_dir.is_symlink():
            raise InvalidVariant(f"build/{variant}: the variant directory itself is a symlink")
        contents = build_variant(variant, variant_dir, source, options, per_backend=variant in noarch.per_backend,
                                     converted=converted)
        where = f"build/{variant}"
        return contents, identity_of(read_metadata(metadata_file(variant_dir, where, source.trusted_roots), where))

    def on_bytes(n: int) -> None:
        if stop.is_set():
            raise _Stopped()
        writing.advance(nbytes=n)

    def write(contents: WheelContents[wheelfile.Source]) -> wheelfile.WrittenWheel:
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
            writes: list[tuple[str, WheelContents[wheelfile.Source], Future[wheelfile.WrittenWheel]]] = []
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


def _payload_bytes(contents: WheelContents[wheelfile.Source]) -> int:
    return sum(len(s) if isinstance(s, bytes) else s.stat().st_size for s in contents.files.values())
