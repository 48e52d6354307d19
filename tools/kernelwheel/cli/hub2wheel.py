"""``hub2wheel``: repackage every build variant of a Hub kernel (or a local ``build/``) as wheels.

The work is ``kernelwheel.wheels.convert``; where the ``build/`` tree comes from is ``kernelwheel.hub.sources``.
Wheel paths go to stdout, progress and errors to stderr. Exit codes (EXIT_CODES in the epilog): 0 every selected
variant converted, 1 nothing converted or a fatal error, 2 a usage error, 3 some converted and some failed,
130 Ctrl-C, 143 SIGTERM; stale temporaries of killed runs in --out are removed first (``atomic``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from kernelwheel.cli.arguments import add_trust_arguments, check_repo_id_argument, path_argument
from kernelwheel.cli.command import EXIT_OK, command_parser, run_command
from kernelwheel.format.signatures import SignatureOptions
from kernelwheel.hub.settings import HubSettings, digest_cache_file, elf_verdict_file
from kernelwheel.hub.trust import TrustPolicy
from kernelwheel.hub.versions import parse_version_spec
from kernelwheel.io import answer_deadline
from kernelwheel.io.atomic import (
    Terminated,
    sigterm_exits,
)
from kernelwheel.io.console import print_error, print_skipped, print_warning
from kernelwheel.io.errors import ToolError
from kernelwheel.wheels.convert import Options, Report
from kernelwheel.wheels.kernel_conversion import KernelRequest, convert_kernel, is_local
from kernelwheel.wheels.naming import parse_version, validate_kernel_name
from kernelwheel.wheels.selection import VariantFilter

EPILOG = """\
examples:
  # every variant of the newest v1.x of a Hub kernel, into ./wheelhouse
  hub2wheel kernels-community/img2gray --version 1
  # one commit, CUDA 13.0 variants only, from a private endpoint
  HF_ENDPOINT=https://hub.internal hub2wheel org/img2gray --revision 3f2a9c1 --variant '*-cu130-*'
  # everything a kernels.lock pins, hashes verified
  hub2wheel --lock kernels.lock --out /srv/wheels
  # a kernel whose publisher the Hub does not list as trusted (kernels' trust_remote_code allow-list)
  hub2wheel my-org/my-kernel --trust-repo my-org/my-kernel
  # signatures checked against a private Sigstore and the org's own build workflow
  hub2wheel my-org/my-kernel --require-signature --sigstore-trusted-root trusted_root.json \\
      --signer-workflow https://github.com/my-org/kernels/.github/workflows/build.yaml@refs/heads/main
  # a local checkout holding build/
  hub2wheel ./img2gray --kernel-version 0.1.0
  # also variant wheels (PEP 825 draft, experimental) that uv --preview-features wheel-variants picks by GPU
  hub2wheel ./img2gray --kernel-version 0.1.0 --variant-wheels
then, with your torch pinned so that pip keeps it or fails (never replaces it):
  pip install --find-links wheelhouse img2gray-cu130 "torch==$(python -c 'import torch; print(torch.__version__)')"
  (from an index: kernelwheel index wheelhouse; kernelwheel install-command prints the command)

exit codes:
  0    every selected variant became a wheel (variants for another OS, outside --variant, or duplicates are
       skipped with the reason and do not count)
  1    no wheel written: nothing converted, or a fatal error (unknown repo or revision, bad lock file, --out not
       a writable folder)
  2    usage error (bad arguments)
  3    some wheels written, and some variants failed (bad input, a file that could not be downloaded, or an I/O
       error such as ENOSPC): see "skipped"
  130  interrupted (Ctrl-C); 143 terminated (SIGTERM): no partial file is left either way
"""
EXIT_NOTHING, EXIT_SOME_FAILED = 1, 3  # and EXIT_OK (0), EXIT_INTERRUPTED (130), as every command


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "hub2wheel", "convert",
        "Repackage the build variants of a Hub kernel repository (or a local build/) as wheels.", EPILOG,
    )
    parser.add_argument("source", nargs="?", help="Hub repo id (org/name) or a local directory holding build/")
    ref = parser.add_mutually_exclusive_group()
    ref.add_argument("--revision", help="branch, tag or commit to convert (default: main)")
    ref.add_argument("--version", help="PEP 440 specifier or bare major, matched against v<version> tags/branches")
    parser.add_argument("--variant", action="append", default=[], metavar="GLOB",
                        help="only variants matching this glob (repeatable)")
    parser.add_argument("--lock", type=path_argument, metavar="KERNELS_LOCK",
                        help="convert every kernel a kernels.lock pins, verified")
    parser.add_argument("--out", type=path_argument, default=Path("wheelhouse"),
                        help="output directory (default: wheelhouse)")
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
    parser.add_argument("--variant-wheels", action="store_true",
                        help="experimental: beside each backend-named wheel, also write its variant wheel (PEP 825 "
                             "draft: one distribution per kernel, chosen by uv --preview-features wheel-variants from "
                             "the GPU and CUDA driver; pip ignores them). See docs/gpu-targets.md")
    parser.add_argument("--jobs", type=int, metavar="N",
                        help="variants checked and wheels written at once (default: one per CPU core)")
    add_trust_arguments(parser)
    return parser


def _print_report(report: Report, console: Console) -> None:
    for name, reason in report.skipped:
        print_skipped(console, name, reason)
    # report.converted counts every wheel the run stands for; those already there byte for byte were not written.
    written = len(report.converted) - len(report.unchanged)
    unchanged = f", {len(report.unchanged)} already up to date" if report.unchanged else ""
    failed = f" ({len(report.failed)} failed)" if report.failed else ""
    variants = f", {len(report.variant_wheels)} variant wheel(s)" if report.variant_wheels else ""
    console.print(f"{written} wheel(s) written{unchanged}{variants}, {len(report.skipped)} variant(s) "
                  f"skipped{failed}")


def main(argv: Sequence[str] | None = None) -> int:
    # Ctrl-C: every temporary is gone by now (convert waits for its workers to clean up)
    return run_command(build_parser(), _convert, argv, interrupted=lambda args: (
        f"interrupted; wheels already in {args.out} are complete, nothing partial was left"))


def _convert(args: argparse.Namespace, parser: argparse.ArgumentParser, console: Console) -> int:
    if not args.source and not args.lock:
        parser.error("give a SOURCE (org/name or a directory) or --lock kernels.lock")
    try:
        kernel_version = parse_version(args.kernel_version, "--kernel-version") if args.kernel_version else None
        if args.dist_name is not None:
            validate_kernel_name(args.dist_name)
    except ToolError as exc:
        parser.error(str(exc))
    # Repository ids are usage errors, so they are checked before --out is swept or anything is fetched.
    if args.lock and args.source is not None:
        check_repo_id_argument(parser, "SOURCE (with --lock)", args.source)
    elif not args.lock and not is_local(args.source):
        check_repo_id_argument(parser, "SOURCE", args.source, " (and no directory of that name exists)")
    for repo_id in args.trust_repo:
        check_repo_id_argument(parser, "--trust-repo", repo_id)
    if args.revision == "":
        parser.error("--revision: expected a branch, tag or commit, got ''")
    if args.version is not None:
        try:
            parse_version_spec(args.version)
        except ToolError as exc:
            parser.error(str(exc))
    if args.jobs is not None and args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    answer_deadline.forget_unanswered()  # a Hub that did not answer an earlier run in this process is asked again
    settings = HubSettings.from_env()
    _quiet_huggingface_hub()  # after from_env: importing huggingface_hub parses the HF_ENDPOINT it refuses
    options = Options(out_dir=args.out, dist_name=args.dist_name, kernel_version=kernel_version,
                      variants=VariantFilter(patterns=tuple(args.variant)),
                      allow_unknown_deps=args.allow_unknown_deps, jobs=args.jobs,
                      variant_wheels=args.variant_wheels,
                      digest_cache=digest_cache_file(settings), verdict_cache=elf_verdict_file(settings),
                      signatures=SignatureOptions(
                          trusted_root=args.sigstore_trusted_root, signer_workflows=tuple(args.signer_workflow),
                          require_signature=args.require_signature, warn=lambda m: print_warning(console, m)))
    if args.source is not None and is_local(args.source) and not args.lock and (args.revision or args.version):
        parser.error("--revision/--version apply to Hub repositories, not to a local directory")
    request = KernelRequest(source=args.source, revision=args.revision, version=args.version, lock=args.lock,
                            trust=TrustPolicy(trust_all=args.trust_remote_code, repo_ids=frozenset(args.trust_repo)))
    try:
        with sigterm_exits():
            total = convert_kernel(request, options, console, settings)
    except Terminated as exc:
        print_error(console, f"terminated (SIGTERM); wheels already in {args.out} are complete, nothing partial was "
                             "left")
        return int(exc.code or 1)
    for _, path in [*total.converted, *total.variant_wheels]:
        _print_path(path)
    _print_report(total, console)
    if not total.converted:
        return EXIT_NOTHING
    return EXIT_SOME_FAILED if total.failed else EXIT_OK


def _quiet_huggingface_hub() -> None:
    """huggingface_hub's warnings ("No files matched ...", "Retrying in 1s ...") are not this command's output: its
    own lines say what happened, once. Set through huggingface_hub's public logging API."""
    from huggingface_hub.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]  # huggingface_hub leaves it unannotated


def _print_path(path: Path) -> None:
    """One wheel path on stdout, as the file system spells it (an --out whose bytes are not UTF-8 included)."""
    sys.stdout.flush()
    sys.stdout.buffer.write(os.fsencode(path) + b"\n")
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    raise SystemExit(main())
