"""``python -m tools.cli.build_wheel [--abi stable|classic|auto] [--out DIR]``: compile img2gray, name the wheel
for its backend and torch, and repair it to a manylinux tag (``tools.build.wheel`` says how).

``--reproduce WHEEL`` rebuilds a wheel from the commit it records, in a fresh export of that commit, and compares the
bytes (``tools.build.reproduce``): exit 0 and ``match`` when they are identical, exit 1 and each difference when not.

``--variant-wheel-of WHEEL...`` (experimental; `make wheel VARIANT_WHEELS=1`) writes the variant wheel (PEP 825, a
draft) of each wheel already built next to it (``kernelwheel.wheels.variant_wheels``): ``img2gray`` labelled ``cu130``
with the nvidia properties of what the build holds, which uv picks with ``--preview-features wheel-variants``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from kernelwheel.cli.arguments import path_argument
from kernelwheel.io.console import make_console, print_error
from kernelwheel.io.errors import ToolError
from kernelwheel.wheels.variant_wheels import write_variant_wheel
from tools.build.wheel import ABIS, DEFAULT_PLATFORM, ROOT, build


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.cli.build_wheel", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=path_argument, default=None,
                        help="output folder (default: wheelhouse/; with --reproduce: the rebuilt wheel is not kept)")
    parser.add_argument("--abi", choices=ABIS, default=None,
                        help="stable (torch stable ABI, one wheel for torch >= 2.10), classic (ATen, one torch "
                             "minor) or auto (stable when the torch is new enough); default: $IMG2GRAY_ABI, else auto")
    parser.add_argument("--plat", default=None,
                        help=f"platform tag to repair to (default: {DEFAULT_PLATFORM})")
    parser.add_argument("--reproduce", type=path_argument, metavar="WHEEL", default=None,
                        help="rebuild WHEEL from the commit it records (taking its ABI, backend, CUDA architectures "
                             "and platform tag from it) and compare the bytes")
    parser.add_argument("--variant-wheel-of", type=path_argument, nargs="+", metavar="WHEEL", default=None,
                        help="experimental: build nothing; write the variant wheel (PEP 825 draft) of each WHEEL "
                             "already built, next to it")
    parser.add_argument("--repo", type=path_argument, default=ROOT,
                        help="with --reproduce: the git repository that holds the commit (default: this checkout)")
    args = parser.parse_args(argv)
    if args.reproduce is not None and (args.abi is not None or args.plat is not None):
        parser.error("--reproduce takes the ABI and the platform tag from the wheel: leave out --abi and --plat")
    building = (args.reproduce, args.abi, args.plat, args.out)
    if args.variant_wheel_of is not None and any(option is not None for option in building):
        parser.error("--variant-wheel-of builds nothing: leave out --reproduce, --abi, --plat and --out")
    console = make_console()
    try:
        if args.variant_wheel_of is not None:
            for built in args.variant_wheel_of:
                print(write_variant_wheel(built, built.parent).path)
            return 0
        if args.reproduce is not None:
            return reproduce(args)
        wheel = build(args.out or ROOT / "wheelhouse", platform=args.plat or DEFAULT_PLATFORM, abi=args.abi)
    except ToolError as exc:
        print_error(console, exc)
        return 1
    print(wheel)
    return 0


def reproduce(args: argparse.Namespace) -> int:
    from tools.build.reproduce import reproduce as rebuild

    result = rebuild(args.reproduce, repo=args.repo, out_dir=args.out)
    kept = f", kept as {result.kept}" if result.kept is not None else ""
    if result.matches:
        print(f"match: {args.reproduce.name} rebuilt from {result.commit} is the same bytes "
              f"(sha256 {result.sha256}{kept})")
        return 0
    print(f"differs: {args.reproduce.name} rebuilt from {result.commit} (sha256 {result.sha256}{kept}):")
    for line in result.differences:
        print(f"  {line}")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
