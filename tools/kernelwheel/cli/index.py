"""``kernelwheel index WHEELHOUSE``: write a static PEP 503 index with PEP 658 metadata and per-torch
sub-indexes for the wheels in a folder (``kernelwheel.index.writer`` says what it writes, and in which order): one for
every released torch minor (``kernelwheel.index.torch_minors``) a wheel admits from its lower bound on, and one for each
``--torch X.Y``. A rerun reads only the wheels whose stat identity changed since they were last hashed; ``--verify``
hashes every wheel again.
Exit status: 0 indexed; 1 a bad wheel (all listed), a bad state file or a write that failed (one ``error:`` line,
the index already in place unchanged)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from packaging.version import Version
from rich.console import Console

from kernelwheel.cli.arguments import path_argument
from kernelwheel.cli.command import command_parser, run_command
from kernelwheel.index.torch_minors import minor_version
from kernelwheel.index.writer import write_index
from kernelwheel.io.console import print_step, print_warning


def _torch_minor(text: str) -> Version:
    version = minor_version(text)  # no patch, pre, post, dev or local
    if version is None:
        raise argparse.ArgumentTypeError(f"expected a torch minor version X.Y (e.g. 2.14), got {text!r}")
    return version


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "index", "index",
        "Write a static PEP 503 index (with PEP 658 metadata and per-torch sub-indexes) for the wheels in a folder.",
    )
    parser.add_argument("wheelhouse", type=path_argument, help="folder holding the .whl files (e.g. wheelhouse)")
    parser.add_argument(
        "--torch",
        action="append",
        default=[],
        type=_torch_minor,
        metavar="X.Y",
        help="also write simple/torchX.Y/ for this torch minor (repeatable): one not yet released, for stable-ABI "
        "builds; every released minor a wheel admits gets its sub-index without it",
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="hash every wheel and check every .metadata file again, trusting no stat identity the last run recorded "
        "(size, mtime, ctime, inode); e.g. for a wheelhouse restored from elsewhere",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(build_parser(), _index, argv)


def _index(args: argparse.Namespace, parser: argparse.ArgumentParser, console: Console) -> int:
    print_step(console, f"* Indexing {args.wheelhouse}/ ...")
    report = write_index(args.wheelhouse, extra_torch=args.torch, verify=args.verify)
    for warning in report.warnings:  # indexed all the same: the owner decides which build to keep
        print_warning(console, warning)
    if args.json:
        summary = {
            "version": 1,
            "wheels": [w.filename for w in report.wheels],
            "added": report.added,
            "removed": report.removed,
            "hashed": report.hashed,
            "projects": report.projects,
            "torch_indexes": report.torch_indexes,
            "swept": [str(path) for path in report.swept],
            "warnings": report.warnings,
            "variants_files": report.variants_files,
        }
        print(json.dumps(summary, indent=2))
        return 0
    print(
        f"Indexed {len(report.wheels)} wheels of {len(report.projects)} projects in {args.wheelhouse / 'simple'}/ "
        f"({len(report.added)} new, {len(report.removed)} removed, {report.hashed} hashed, "
        f"{report.files_written} files written)"
    )
    if report.swept:
        print_step(console, f"* Removed {len(report.swept)} temporaries left by an interrupted run: "
                            + ", ".join(path.name for path in report.swept))
    if report.torch_indexes:
        print("Per-torch indexes: " + ", ".join(f"simple/{name}/" for name in report.torch_indexes))
    if report.variants_files:
        print("Wheel variants (experimental, uv --preview-features wheel-variants): "
              + ", ".join(report.variants_files))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
