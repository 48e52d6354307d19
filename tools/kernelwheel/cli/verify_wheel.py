"""``kernelwheel verify WHEEL | DISTRIBUTION``: re-verify a wheel hub2wheel wrote (``wheels/verify``, printed).

The wheel's package folder holds the variant's ``metadata.json`` and ``metadata.json.sigstore``: the bundle is
verified over metadata.json (kernels' signer policies by default, ``--signer-workflow`` and
``--sigstore-trusted-root`` as in hub2wheel), then metadata.json's digest over the package's files. A ``.whl`` path is
unpacked into a temporary folder a chunk at a time, each file checked against its RECORD hash; any other argument is a
distribution installed in the Python running this command, its installed files checked against RECORD. A wheel from an
unsigned variant gets the same RECORD and digest checks, then fails for want of a signature unless
``--allow-unsigned``. Exit 0 and one line per package on success; one ``error:`` line and exit 1 otherwise.

``--json`` prints one JSON object instead of the lines: ``{"target": ..., "verified": [the lines], "gpu_targets":
{"cuda_sass": [...], "cuda_ptx": [...], "rocm": [...]}}``, the GPU code hub2wheel read from the wheel's binaries
(``.dist-info/gpu_targets.json``, checked; ``null`` for a wheel without one: no binaries, or an older hub2wheel).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from rich.console import Console

from kernelwheel.cli.arguments import add_trust_arguments
from kernelwheel.cli.command import command_parser, run_command
from kernelwheel.format.signatures import SignatureOptions
from kernelwheel.io.console import print_warning
from kernelwheel.wheels.verify import verify_wheel


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "verify_wheel", "verify",
        "Re-verify the signature (metadata.json.sigstore) and digests of a hub2wheel wheel, as a .whl file or as a "
        "distribution installed in this Python. Its RECORD hashes and metadata.json's digest are checked whether it "
        "is signed or not.",
    )
    parser.add_argument("target", help="a .whl file, or the name of an installed distribution (img2gray-cu130)")
    parser.add_argument("--allow-unsigned", action="store_true",
                        help="exit 0 for a wheel built from an unsigned variant whose RECORD and digests match "
                             "(default: no signature is an error)")
    parser.add_argument("--json", action="store_true",
                        help="print a JSON object: the verification lines and the GPU code the binaries hold")
    add_trust_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(build_parser(), _verify, argv)


def _verify(args: argparse.Namespace, parser: argparse.ArgumentParser, console: Console) -> int:
    options = SignatureOptions(trusted_root=args.sigstore_trusted_root, signer_workflows=tuple(args.signer_workflow),
                               require_signature=True, warn=lambda m: print_warning(console, m))
    result = verify_wheel(args.target, options, allow_unsigned=args.allow_unsigned)
    if args.json:
        gpu = result.gpu_targets
        print(json.dumps({"target": args.target, "verified": result.lines,
                          "gpu_targets": gpu.to_json() if gpu is not None else None}, indent=2))
        return 0
    for line in result.lines:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
