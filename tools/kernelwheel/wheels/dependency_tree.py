"""A kernel converted together with its ``kernel-depends``: every dependency first, once per run, cycles refused.

kernels resolves the dependency tree before it loads a kernel (``deps.resolve_kernel_tree``: depth first, a cycle
is an error). Here each dependency kernel is fetched (``resolve``) and converted into the same output folder before
the kernel that needs it, so that its wheel can name the dependency's project and version (``kernel_depends``). A
dependency that cannot be fetched or converted makes only the variants that need it fail, with the reason.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from rich.console import Console

from kernelwheel.format.dependency import Dependency
from kernelwheel.format.kernel_depends import parse_kernel_info
from kernelwheel.format.variant_folder import metadata_file, read_metadata
from kernelwheel.hub.sources import Source, cancelled_on_error
from kernelwheel.io.console import print_step
from kernelwheel.io.errors import ToolError
from kernelwheel.wheels.convert import Options, Report, convert
from kernelwheel.wheels.dependency_wheels import ConvertedKernel, ConvertedWheel, top_level_package
from kernelwheel.wheels.naming import WheelName
from kernelwheel.wheels.selection import select_variants

Resolve = Callable[[Dependency], Source]


@dataclass
class _Run:
    done: dict[str, ConvertedKernel] = field(default_factory=dict)
    chain: list[str] = field(default_factory=list)  # the kernels being converted, outermost first


def declared_dependencies(source: Source, options: Options) -> list[Dependency]:
    """The ``kernel-depends`` of every variant this run converts, from its ``metadata.json`` alone (a variant whose
    metadata cannot be read declares none here; its conversion says why, as it does for any other bad file)."""
    if source.arrivals is not None:
        # Fetched before any variant's other files; a variant whose metadata did not come fails with the reason.
        with contextlib.suppress(ToolError):
            source.arrivals.wait_metadata()
        names = list(source.arrivals.variants)
    elif not source.build_dir.is_dir():
        return []
    else:
        names = [p.name for p in source.build_dir.iterdir() if p.is_dir() and not p.is_symlink()]
    found: dict[str, Dependency] = {}
    for variant in select_variants(names, options.variants).accepted:
        where = f"build/{variant}"
        try:
            files = metadata_file(source.build_dir / str(variant), where, source.trusted_roots)
            if not read_metadata(files, where).get("kernel-depends"):
                continue
            info = parse_kernel_info(files["metadata.json"].read_bytes(), where)
        except (ToolError, OSError):
            continue
        for dep in info.dependencies:
            found.setdefault(dep.repo_id, dep)
    return [found[k] for k in sorted(found)]


def _prefixed(report: Report, repo_id: str, into: Report) -> None:
    into.converted.extend((f"{repo_id} {variant}", path) for variant, path in report.converted)
    into.skipped.extend((f"{repo_id} {variant}", reason) for variant, reason in report.skipped)
    into.unchanged.extend(f"{repo_id} {variant}" for variant in report.unchanged)
    into.variant_wheels.extend((f"{repo_id} {variant}", path) for variant, path in report.variant_wheels)


def _convert_dependency(dep: Dependency, options: Options, resolve: Resolve, console: Console, run: _Run,
                        into: Report) -> ConvertedKernel:
    if dep.repo_id in run.chain:
        cycle = " → ".join([*run.chain[run.chain.index(dep.repo_id):], dep.repo_id])
        return ConvertedKernel(dep, failure=f"cyclic kernel-depends ({cycle})")
    if dep.repo_id in run.done:
        return run.done[dep.repo_id]
    print_step(console, f"{run.chain[-1] if run.chain else 'kernel'} needs {dep}: converting it first")
    try:
        source = resolve(dep)
    except ToolError as exc:
        result = ConvertedKernel(dep, failure=str(exc))
    else:
        report = _convert(source, replace(options, dist_name=None, kernel_version=None), resolve, console, run)
        _prefixed(report, dep.repo_id, into)
        wheels = tuple(ConvertedWheel(variant, WheelName.parse(path.name), top_level_package(path))
                       for variant, path in report.converted)
        reasons = "; ".join(reason for _, reason in report.skipped[:1]) or "it has no variant for this run"
        result = ConvertedKernel(dep, wheels=wheels, failure=None if wheels else f"no wheel converted ({reasons})")
    run.done[dep.repo_id] = result
    return result


def _convert(source: Source, options: Options, resolve: Resolve, console: Console, run: _Run) -> Report:
    report = Report()
    converted: dict[str, ConvertedKernel] = {}
    with cancelled_on_error(source.arrivals):  # Ctrl-C before convert() took the source over
        dependencies = declared_dependencies(source, options)
        if dependencies:
            run.chain.append(source.repo_id or source.label)
            try:
                for dep in dependencies:
                    converted[dep.repo_id] = _convert_dependency(dep, options, resolve, console, run, report)
            finally:
                run.chain.pop()
    own = convert(source, options, console, converted=converted)
    report.converted[:0] = own.converted  # the kernel's own wheels first, then its dependencies'
    report.skipped[:0] = own.skipped
    report.unchanged[:0] = own.unchanged
    report.variant_wheels[:0] = own.variant_wheels
    return report


def convert_with_dependencies(sources: Iterable[Source], options: Options, resolve: Resolve,
                              console: Console) -> Report:
    """Convert each source and, first, every kernel it depends on (each kernel once per run)."""
    run = _Run()
    total = Report()
    for source in sources:
        if source.repo_id is not None and source.repo_id in run.done:
            if source.arrivals is not None:
                source.arrivals.close()
            continue  # already converted as a dependency of an earlier source
        report = _convert(source, options, resolve, console, run)
        total.converted.extend(report.converted)
        total.skipped.extend(report.skipped)
        total.unchanged.extend(report.unchanged)
        total.variant_wheels.extend(report.variant_wheels)
    return total
