"""``kernelwheel mirror CONFIG``: keep a private index in sync with the Hub. Each run converts the release tags not
converted yet (``kernelwheel.mirror.run``), then updates the index; ``--shard K/N`` and ``--no-index`` split the work
over the jobs of a CI matrix (docs/mirror.md).

Exit status: 0 everything converted (or nothing was new); 1 some kernel, release or the index failed (each named in
the summary; the others were done); 2 a usage error (arguments, the configuration file, the signature settings);
75 another run was using the wheelhouse (nothing done; ``--wait`` waits for it); 130 interrupted, 143 terminated
(what was converted is recorded, the next run resumes after it).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from kernelwheel.cli.arguments import path_argument
from kernelwheel.cli.command import EXIT_FAILED, EXIT_OK, EXIT_USAGE, command_parser, run_command
from kernelwheel.hub.settings import HubSettings
from kernelwheel.io import answer_deadline
from kernelwheel.io.atomic import Terminated, sigterm_exits
from kernelwheel.io.console import print_error, print_step, print_warning
from kernelwheel.io.errors import LockHeld, ToolError
from kernelwheel.mirror.config import MirrorConfig, load_config
from kernelwheel.mirror.plan import Shard
from kernelwheel.mirror.run import MirrorReport, run_mirror, signature_options

EXIT_BUSY = 75  # sysexits.h's EX_TEMPFAIL: try again later (cron and CI read it apart from a failure)

EPILOG = """\
example configuration (mirror.toml):
  wheelhouse = "wheelhouse"          # relative to this file
  [[kernels]]
  repo = "kernels-community/relu"
  versions = ">=0.1"                 # PEP 440 on release tags vX.Y.Z, or "latest"; default: every release
  variants = ["*-cu130-*"]           # default: every variant
  [[kernels]]
  org = "my-org"                     # every repository the Hub lists for it
  trust = true                       # as hub2wheel --trust-repo

exit codes: 0 all converted (or nothing new), 1 some kernel or the index failed (the others done),
2 usage (arguments or the configuration), 75 another run was using the wheelhouse (nothing done),
130 interrupted, 143 terminated
"""


def _shard(text: str) -> Shard:
    try:
        return Shard.parse(text)
    except ToolError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--shard: ")) from None


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= 7 * 24 * 3600:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"expected a number of seconds from 0 to 604800, got {text!r:.40}")
    return seconds


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "mirror", "mirror",
        "Keep a private index in sync with Hub kernels: convert the release tags not converted yet, then update the "
        "index.", EPILOG,
    )
    parser.add_argument("config", type=path_argument, help="the configuration file (TOML; docs/mirror.md)")
    parser.add_argument("--shard", type=_shard, metavar="K/N",
                        help="convert only the K-th of N shares of the kernels (1 <= K <= N, split by a hash of each "
                             "repository id): one job of a CI matrix")
    parser.add_argument("--no-index", action="store_true",
                        help="convert only; leave the index to a last job (kernelwheel index WHEELHOUSE)")
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead of the table")
    parser.add_argument("--wait", type=_seconds, default=0.0, metavar="SECONDS",
                        help="when another run is using the wheelhouse, wait up to SECONDS for it to end (default 0: "
                             "refuse at once, exit 75)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(build_parser(), _mirror, argv, interrupted=lambda args: (
        "interrupted; every release converted so far is recorded, the next run goes on from there"))


def _mirror(args: argparse.Namespace, parser: argparse.ArgumentParser, console: Console) -> int:
    answer_deadline.forget_unanswered()  # a Hub that did not answer an earlier run in this process is asked again
    try:
        config = load_config(args.config)
        signatures = signature_options(config, lambda message: print_warning(console, message))
        signatures.validate()
        settings = HubSettings.from_env()
    except ToolError as exc:  # the configuration is this command's input: a usage error
        print_error(console, exc)
        return EXIT_USAGE
    _quiet_huggingface_hub()
    try:
        with sigterm_exits():
            report = run_mirror(config, settings, console, signatures=signatures, shard=args.shard,
                                index=not args.no_index, wait=args.wait)
    except LockHeld as exc:
        waited = f"waited {args.wait:g} s; " if args.wait else ""
        print_error(console, f"{exc}; {waited}nothing was done. Run again when it has ended, or pass --wait SECONDS "
                             "to wait for it")
        return EXIT_BUSY
    except Terminated as exc:
        print_error(console, "terminated (SIGTERM); every release converted so far is recorded, the next run goes on "
                             "from there")
        return int(exc.code or 1)
    if report.swept:
        print_step(console, f"* Removed {len(report.swept)} temporaries left by an interrupted run")
    print(json.dumps(summary(report, config), indent=2) if args.json else table(report, config))
    if report.index_error is not None:
        print_error(console, report.index_error)
    return EXIT_FAILED if report.failed else EXIT_OK


def summary(report: MirrorReport, config: MirrorConfig) -> dict[str, object]:
    """The ``--json`` summary: one object per kernel, and the index."""
    index = None if report.index is None else {
        "wheels": len(report.index.wheels), "added": report.index.added, "removed": report.index.removed,
        "hashed": report.index.hashed, "torch_indexes": report.index.torch_indexes}
    return {
        "version": 1,
        "wheelhouse": str(config.wheelhouse),
        "kernels": [{
            "kernel": result.kernel,
            "converted": result.converted,
            "wheels": result.wheels,
            "up_to_date": result.up_to_date,
            "skipped": [{"what": what, "reason": reason} for what, reason in result.skipped],
            "failed": [{"version": version or None, "error": error} for version, error in result.failed],
        } for result in report.kernels],
        "index": index,
        "index_error": report.index_error,
    }


def table(report: MirrorReport, config: MirrorConfig) -> str:
    """One row per kernel (converted, up to date, skipped, failed), the reasons below it, then the index line."""
    rows = [("kernel", "converted", "up to date", "skipped", "failed")]
    notes: list[str] = []
    for result in report.kernels:
        rows.append((result.kernel, ", ".join(result.converted) or "-", str(result.up_to_date),
                     str(len(result.skipped)), str(len(result.failed))))
        notes += [f"  skipped {result.kernel} {what}: {reason}" for what, reason in result.skipped]
        notes += [f"  FAILED {result.kernel}{' ' + version if version else ''}: {error}"
                  for version, error in result.failed]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines += notes
    if report.index is not None:
        simple = Path(config.wheelhouse) / "simple"
        lines.append(f"Indexed {len(report.index.wheels)} wheels in {simple}/ ({len(report.index.added)} new, "
                     f"{len(report.index.removed)} removed, {report.index.hashed} hashed)")
    return "\n".join(lines)


def _quiet_huggingface_hub() -> None:
    """huggingface_hub's own warnings are not this command's output (hub2wheel does the same)."""
    from huggingface_hub.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]  # huggingface_hub leaves it unannotated


if __name__ == "__main__":
    raise SystemExit(main())
