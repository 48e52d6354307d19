"""A kernel converted from what a user names: a Hub repository at a revision or a version, a local folder holding
``build/``, or a ``kernels.lock``; its kernel-depends first, from the same Hub. This is hub2wheel without its command
line (``hub2wheel`` parses its arguments into a ``KernelRequest`` and ``Options`` and calls ``convert_kernel``)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from kernelwheel.format.dependency import Dependency
from kernelwheel.hub.settings import HubSettings
from kernelwheel.hub.sources import Source, dependency_source, hub_source, local_source, lock_sources
from kernelwheel.hub.trust import TrustPolicy
from kernelwheel.io.atomic import check_writable_directory, stale_temporary_owner, sweep_stale_temporaries
from kernelwheel.io.console import activity, make_console, print_step
from kernelwheel.io.errors import ToolError
from kernelwheel.wheels.convert import Options, Report
from kernelwheel.wheels.dependency_tree import convert_with_dependencies


@dataclass(frozen=True)
class KernelRequest:
    """What to convert. ``source``: a Hub repository id (org/name) or a directory holding ``build/``; with ``lock``,
    the lock's entries (``source`` then picks one of them). ``revision`` (a branch, tag or commit) or ``version``
    (a PEP 440 specifier on the ``vX.Y.Z`` release tags) apply to a Hub repository only. ``trust``: the publishers
    trusted beyond those the Hub lists (kernels' ``trust_remote_code``)."""

    source: str | None = None
    revision: str | None = None
    version: str | None = None
    lock: Path | None = None
    trust: TrustPolicy = field(default_factory=TrustPolicy)


def is_local(source: str) -> bool:
    """``source`` names a directory (it exists, or it is spelled as a path), not a Hub repository."""
    return os.path.isdir(source) or source.startswith((".", "/"))  # os.path: False, not OSError, for a name too long


def convert_kernel(request: KernelRequest, options: Options, console: Console | None = None,
                   settings: HubSettings | None = None) -> Report:
    """Convert ``request``'s kernel (and its kernel-depends) into ``options.out_dir``; one variant's failure never
    stops the others (see the report). Raises ``ToolError`` for what stops the whole run: an unknown repository or
    revision, an untrusted publisher, a bad lock, an ``out_dir`` that cannot be written. Settings default to the
    environment's (``HF_ENDPOINT``, ``HF_HUB_OFFLINE``, the cache)."""
    console = console or make_console()
    settings = settings or HubSettings.from_env()
    if request.source is None and request.lock is None:
        raise ToolError("nothing to convert: give a source (org/name or a directory) or a lock file")
    out = options.out_dir
    check_writable_directory(out, "--out")
    for stale in sweep_stale_temporaries(out):
        print_step(console, f"removed {stale.name} from {out}: a temporary left by process "
                            f"{stale_temporary_owner(stale.name)}, which is gone")
    options.signatures.validate()
    given = options.kernel_version is not None  # the version is named: no tag listing needed for it
    with activity(console):  # one progress display for every download and wheel of the run
        return convert_sources(_sources(request, settings, options.variants.patterns, given, console), options,
                               request.trust, settings, console)


def convert_sources(sources: Iterable[Source], options: Options, trust: TrustPolicy, settings: HubSettings,
                    console: Console) -> Report:
    """Convert ``sources``, each kernel's kernel-depends first, fetched from the same Hub with the same variant globs
    and trust (the mirror converts its release tags through this too)."""
    given = options.kernel_version is not None

    def resolve(dependency: Dependency) -> Source:  # a kernel-depends entry, from the same Hub
        return dependency_source(settings, dependency, variant_globs=options.variants.patterns, trust=trust,
                                 console=console, kernel_version_given=given)

    return convert_with_dependencies(sources, options, resolve, console)


def _sources(request: KernelRequest, settings: HubSettings, globs: tuple[str, ...], given: bool,
             console: Console) -> Iterable[Source]:
    if request.lock is not None:
        return lock_sources(settings, request.lock, repo_id=request.source, trust=request.trust, console=console,
                            kernel_version_given=given)
    assert request.source is not None  # checked by convert_kernel
    if is_local(request.source):
        if request.revision or request.version:
            raise ToolError("--revision/--version apply to Hub repositories, not to a local directory")
        return [local_source(Path(request.source))]
    return [hub_source(settings, request.source, revision=request.revision, version_spec=request.version,
                       variant_globs=globs, trust=request.trust, console=console, kernel_version_given=given)]
