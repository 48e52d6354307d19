"""One mirror run: for each kernel of the configuration (this shard's share), list its release tags, convert those not
converted yet exactly as hub2wheel does (``hub.sources.hub_source`` → ``wheels.kernel_conversion.convert_sources``),
record each in the kernel's state as soon as it is done, then update the index (``index.writer``, which reads only
what changed).

A kernel that fails (the Hub, its publisher not trusted, every variant refused) is reported and the run goes on with
the next; a release tag with a failed variant is not recorded, so the next run tries it again. A run with nothing new
asks the Hub for listings only, and downloads and writes no wheel.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from rich.console import Console

from kernelwheel.format.signatures import SignatureOptions
from kernelwheel.hub import versions
from kernelwheel.hub.ref_listing import RefListing
from kernelwheel.hub.settings import REPO_TYPES, HubSettings, digest_cache_file, elf_verdict_file
from kernelwheel.hub.sources import hub_source
from kernelwheel.hub.trust import TrustPolicy
from kernelwheel.index.writer import IndexReport, write_index
from kernelwheel.io.atomic import check_writable_directory, sweep_stale_temporaries
from kernelwheel.io.console import activity, print_step
from kernelwheel.io.errors import HubError, OfflineCacheMiss, OutputNotWritable, ToolError
from kernelwheel.mirror.config import KernelEntry, MirrorConfig
from kernelwheel.mirror.lock import mirror_lock
from kernelwheel.mirror.plan import Release, Shard, pending, releases, repositories
from kernelwheel.mirror.state import STATE_FOLDER, Converted, KernelState, load_state, save_state
from kernelwheel.wheels.convert import Options, Report
from kernelwheel.wheels.kernel_conversion import convert_sources
from kernelwheel.wheels.selection import VariantFilter

if TYPE_CHECKING:
    from huggingface_hub import HfApi

_LISTING_THREADS = 8


@dataclass
class KernelResult:
    """What the run did for one kernel (a repository; an ``org`` entry whose listing failed is one row too)."""

    kernel: str
    converted: list[str] = field(default_factory=list)  # release versions converted in this run
    wheels: list[str] = field(default_factory=list)  # their wheel files (dependencies' included)
    up_to_date: int = 0  # release tags converted by an earlier run
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (version or variant, reason)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (version, or "" for the kernel, error)


@dataclass
class MirrorReport:
    kernels: list[KernelResult] = field(default_factory=list)
    index: IndexReport | None = None
    index_error: str | None = None
    swept: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.index_error is not None or any(result.failed for result in self.kernels)


def signature_options(config: MirrorConfig, warn: Callable[[str], None]) -> SignatureOptions:
    """The configuration's signature settings, as hub2wheel's options of the same names give them."""
    return SignatureOptions(trusted_root=config.sigstore_trusted_root, signer_workflows=config.signer_workflows,
                            require_signature=config.require_signature, warn=warn)


def run_mirror(config: MirrorConfig, settings: HubSettings, console: Console, *, signatures: SignatureOptions,
               shard: Shard | None = None, index: bool = True, wait: float | None = 0) -> MirrorReport:
    """Convert what is new for every kernel of ``config`` (``shard``'s alone when given), then (``index``) update the
    index. Another run using the wheelhouse is waited for up to ``wait`` seconds (None: as long as it takes), then
    ``LockHeld`` (``mirror.lock``). Raises ``ToolError`` only for what stops every kernel (the wheelhouse cannot be
    written, another run holds it)."""
    house = config.wheelhouse
    check_writable_directory(house, "wheelhouse")
    try:
        (house / STATE_FOLDER).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputNotWritable(f"wheelhouse {house}: {exc.strerror or exc}") from None
    with mirror_lock(house, config.path, shard, wait):
        return _run_locked(config, settings, console, signatures, shard, index)


def _run_locked(config: MirrorConfig, settings: HubSettings, console: Console, signatures: SignatureOptions,
                shard: Shard | None, index: bool) -> MirrorReport:
    house = config.wheelhouse
    report = MirrorReport(swept=[p.name for folder in (house, house / STATE_FOLDER)
                                 for p in sweep_stale_temporaries(folder)])
    options = Options(out_dir=house, jobs=config.jobs, signatures=signatures, variant_wheels=config.variant_wheels,
                      digest_cache=digest_cache_file(settings), verdict_cache=elf_verdict_file(settings))
    api = None if settings.offline else settings.api()
    with activity(console):  # one progress display for every listing, download and wheel of the run
        kernels = _kernels(config, api, settings, shard, report)
        listings = _listings([repo for repo, _ in kernels], api, settings)
        for repo, entry in kernels:
            report.kernels.append(_mirror_kernel(repo, entry, listings[repo], settings, options, console))
    if index:
        try:
            report.index = write_index(house)
        except ToolError as exc:
            report.index_error = str(exc)
    return report


def _online(api: HfApi | None, settings: HubSettings) -> HfApi:
    if api is None:
        raise OfflineCacheMiss(f"{settings.offline_reason}: an org entry needs the Hub's list of its repositories")
    return api


def _kernels(config: MirrorConfig, api: HfApi | None, settings: HubSettings, shard: Shard | None,
             report: MirrorReport) -> list[tuple[str, KernelEntry]]:
    """Every repository of the configuration (this shard's), with the entry that named it first; an ``org`` whose
    listing fails is a failed row of ``report``."""
    kernels: dict[str, KernelEntry] = {}
    for entry in config.kernels:
        try:
            repos = [entry.repo] if entry.repo is not None else repositories(_online(api, settings), entry)
        except ToolError as exc:
            report.kernels.append(KernelResult(entry.name, failed=[("", str(exc))]))
            continue
        for repo in repos:
            if shard is None or shard.holds(repo):
                kernels.setdefault(repo, entry)  # a repository named twice: its first entry
    return list(kernels.items())


def _listings(repos: list[str], api: HfApi | None,
              settings: HubSettings) -> dict[str, RefListing | ToolError]:
    """Each repository's tags, asked of the Hub at once, ``_LISTING_THREADS`` at a time (a rerun is mostly these
    round trips); a failure is kept as that repository's answer."""
    def one(repo: str) -> RefListing | ToolError:
        try:
            return _listing(api, settings, repo)
        except ToolError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=_LISTING_THREADS, thread_name_prefix="listing") as pool:
        return dict(zip(repos, pool.map(one, repos)))


def _listing(api: HfApi | None, settings: HubSettings, repo: str) -> RefListing:
    """``repo``'s tags, asked of the Hub (and recorded, as hub2wheel records them; the repo type the last listing found
    asked first); offline, the recorded listing."""
    recorded = versions.recorded_refs(settings, repo)
    if api is not None:
        known = () if recorded is None else (recorded.repo_type,)
        order = [*known, *(kind for kind in REPO_TYPES if kind not in known)]
        return versions.list_refs(api, settings, repo, order)
    if recorded is None:
        raise OfflineCacheMiss(f"{repo}: {settings.offline_reason} and no listing of its tags is recorded")
    return recorded


def _mirror_kernel(repo: str, entry: KernelEntry, listing: RefListing | ToolError, settings: HubSettings,
                   options: Options, console: Console) -> KernelResult:
    result = KernelResult(repo)
    try:
        if isinstance(listing, ToolError):
            raise listing
        state = load_state(options.out_dir, repo)
        todo = pending(state, releases(listing, entry))
    except ToolError as exc:
        result.failed.append(("", str(exc)))
        return result
    result.up_to_date = len(todo.up_to_date)
    result.skipped.extend((str(release.version), why) for release, why in todo.moved)
    if todo.new:
        print_step(console, f"* {repo}: {len(todo.new)} new release(s): {', '.join(r.tag for r in todo.new)}")
    trust = TrustPolicy(repo_ids=frozenset({repo} if entry.trust else ()))
    variants = VariantFilter(patterns=entry.variants)
    for release in todo.new:
        try:
            converted = _convert(repo, release, entry, trust, settings, replace(options, variants=variants), console)
        except HubError as exc:  # the repository or its publisher: every other tag would fail alike
            result.failed.append((str(release.version), str(exc)))
            break
        except ToolError as exc:
            result.failed.append((str(release.version), str(exc)))
            continue
        _record(result, state, release, converted, options)
    return result


def _convert(repo: str, release: Release, entry: KernelEntry, trust: TrustPolicy, settings: HubSettings,
             options: Options, console: Console) -> Report:
    """One release tag, converted as ``hub2wheel REPO --revision TAG --variant ... --trust-repo ...`` would."""
    source = hub_source(settings, repo, revision=release.tag, variant_globs=entry.variants, trust=trust,
                        console=console)
    return convert_sources([source], options, trust, settings, console)


def _record(result: KernelResult, state: KernelState, release: Release, converted: Report, options: Options) -> None:
    """Record a converted tag in the kernel's state at once (a killed run resumes after it), unless a variant failed:
    then the next run tries the tag again."""
    version = str(release.version)
    failures = [f"build/{name}: {reason}" for name, reason in converted.skipped if name in converted.failed]
    if failures:
        written = f" ({len(converted.converted)} wheel(s) written)" if converted.converted else ""
        result.failed.append((version, "; ".join(failures) + written))
        return
    wheels = tuple(path.name for _, path in [*converted.converted, *converted.variant_wheels])
    state.converted[release.tag] = Converted(release.commit, wheels, tuple(converted.skipped))
    save_state(options.out_dir, state)
    result.converted.append(version)
    result.wheels.extend(wheels)
    result.skipped.extend((f"{version} {name}", reason) for name, reason in converted.skipped)
