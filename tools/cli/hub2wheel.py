"""``python -m tools.hub2wheel``: repackage every build variant of a Hub kernel (or a local ``build/``) as wheels.

The work is ``tools.kernelwheel.convert``; where the ``build/`` tree comes from is ``tools.kernelwheel.sources``.
Wheel paths go to stdout, progress and errors to stderr; the exit code is 1 when nothing was converted.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from pathlib import Path

from packaging.version import InvalidVersion, Version
from rich.console import Console

from tools.kernelwheel import hub
from tools.kernelwheel.console import activity, make_console, print_error, print_skipped, print_warning
from tools.kernelwheel.convert import Options, Report, Source
from tools.kernelwheel.dependency_tree import convert_with_dependencies
from tools.kernelwheel.errors import ToolError
from tools.kernelwheel.kernel_depends import Dependency
from tools.kernelwheel.selection import VariantFilter
from tools.kernelwheel.signatures import SignatureOptions, add_trust_arguments
from tools.kernelwheel.sources import dependency_source, hub_source, local_source, lock_sources
from tools.kernelwheel.trust import TrustPolicy

EPILOG = """\
examples:
  # every variant of the newest v1.x of a Hub kernel, into ./wheelhouse
  python -m tools.hub2wheel kernels-community/img2gray --version 1
  # one commit, CUDA 13.0 variants only, from a private endpoint
  HF_ENDPOINT=https://hub.internal python -m tools.hub2wheel org/img2gray --revision 3f2a9c1 --variant '*-cu130-*'
  # everything a kernels.lock pins, hashes verified
  python -m tools.hub2wheel --lock kernels.lock --out /srv/wheels
  # a kernel whose publisher the Hub does not list as trusted (kernels' trust_remote_code allow-list)
  python -m tools.hub2wheel my-org/my-kernel --trust-repo my-org/my-kernel
  # signatures checked against a private Sigstore and the org's own build workflow
  python -m tools.hub2wheel my-org/my-kernel --require-signature --sigstore-trusted-root trusted_root.json \\
      --signer-workflow https://github.com/my-org/kernels/.github/workflows/build.yaml@refs/heads/main
  # a local checkout holding build/
  python -m tools.hub2wheel ./img2gray --kernel-version 0.1.0
then: pip install --find-links wheelhouse img2gray-cu130
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.hub2wheel",
        description="Repackage the build variants of a Hub kernel repository (or a local build/) as wheels.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("source", nargs="?", help="Hub repo id (org/name) or a local directory holding build/")
    ref = parser.add_mutually_exclusive_group()
    ref.add_argument("--revision", help="branch, tag or commit to convert (default: main)")
    ref.add_argument("--version", help="PEP 440 specifier or bare major, matched against v<version> tags/branches")
    parser.add_argument("--variant", action="append", default=[], metavar="GLOB",
                        help="only variants matching this glob (repeatable)")
    parser.add_argument("--lock", metavar="KERNELS_LOCK", help="convert every kernel a kernels.lock pins, verified")
    parser.add_argument("--out", type=Path, default=Path("wheelhouse"), help="output directory (default: wheelhouse)")
    parser.add_argument("--dist-name", help="distribution base name (default: the kernel's name)")
    parser.add_argument("--kernel-version", help="kernel version when neither the ref nor metadata.json gives one")
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="convert Hub repositories whose publisher is not a trusted kernel publisher "
                             "(kernels' trust_remote_code; default: refused with the reason)")
    parser.add_argument("--trust-repo", action="append", default=[], metavar="ORG/NAME",
                        help="trust this one Hub repository (repeatable; kernels' trust_remote_code allow-list)")
    parser.add_argument("--allow-unknown-deps", action="store_true",
                        help="pass python-depends names kernels does not know through as pip requirements "
                             "(default: such a variant is skipped with the reason)")
    parser.add_argument("--require-signature", action="store_true",
                        help="skip variants without metadata.json.sigstore (default: converted with a warning); "
                             "a signature that does not verify always skips the variant")
    parser.add_argument("--jobs", type=int, metavar="N",
                        help="variants checked and wheels written at once (default: one per CPU core)")
    add_trust_arguments(parser)
    return parser


def _sources(args: argparse.Namespace, parser: argparse.ArgumentParser, settings: hub.HubSettings,
             trust: TrustPolicy, console: Console) -> Iterable[Source]:
    if args.lock:
        return lock_sources(settings, Path(args.lock), repo_id=args.source, trust=trust, console=console)
    local = Path(args.source)
    if local.is_dir() or args.source.startswith((".", "/")):
        if args.revision or args.version:
            parser.error("--revision/--version apply to Hub repositories, not to a local directory")
        return [local_source(local)]
    return [hub_source(settings, args.source, revision=args.revision, version_spec=args.version,
                       variant_globs=args.variant, trust=trust, console=console)]


def _print_report(report: Report, console: Console) -> None:
    for name, reason in report.skipped:
        print_skipped(console, name, reason)
    unchanged = f" ({len(report.unchanged)} already up to date)" if report.unchanged else ""
    console.print(f"{len(report.converted)} wheel(s) written{unchanged}, {len(report.skipped)} variant(s) skipped")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    console = make_console()
    if not args.source and not args.lock:
        parser.error("give a SOURCE (org/name or a directory) or --lock kernels.lock")
    try:
        kernel_version = Version(args.kernel_version) if args.kernel_version else None
    except InvalidVersion:
        parser.error(f"--kernel-version {args.kernel_version!r} is not a PEP 440 version")
    if args.jobs is not None and args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    options = Options(out_dir=args.out, dist_name=args.dist_name, kernel_version=kernel_version,
                      variants=VariantFilter(patterns=tuple(args.variant)), allow_unknown_deps=args.allow_unknown_deps,
                      jobs=args.jobs, digest_cache=hub.digest_cache_file(hub.HubSettings.from_env()),
                      signatures=SignatureOptions(
                          trusted_root=args.sigstore_trusted_root, signer_workflows=tuple(args.signer_workflow),
                          require_signature=args.require_signature, warn=lambda m: print_warning(console, m)))
    total = Report()
    try:
        options.signatures.validate()
        with activity(console):  # one progress display for every download and wheel of the run
            settings = hub.HubSettings.from_env()
            trust = TrustPolicy(trust_all=args.trust_remote_code, repo_ids=frozenset(args.trust_repo))

            def resolve(dependency: Dependency) -> Source:  # a kernel-depends entry, from the same Hub
                return dependency_source(settings, dependency, variant_globs=args.variant, trust=trust,
                                         console=console)

            total = convert_with_dependencies(_sources(args, parser, settings, trust, console), options, resolve,
                                              console)
    except ToolError as exc:
        print_error(console, exc)
        return 1
    except KeyboardInterrupt:  # every temporary is gone by now (convert waits for its workers to clean up)
        print_error(console, f"interrupted; wheels already in {args.out} are complete, nothing partial was left")
        return 130
    for _, path in total.converted:
        print(path)
    _print_report(total, console)
    return 0 if total.converted else 1


if __name__ == "__main__":
    raise SystemExit(main())
