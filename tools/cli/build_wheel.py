"""``python -m tools.cli.build_wheel [--abi stable|classic|auto] [--out DIR]``: compile img2gray, name the wheel
for its backend and torch, and repair it to a manylinux tag (``tools.build.wheel`` says how)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from kernelwheel.cli.arguments import path_argument
from kernelwheel.io.console import make_console, print_error
from kernelwheel.io.errors import ToolError
from tools.build.wheel import ABIS, DEFAULT_PLATFORM, ROOT, build


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.cli.build_wheel", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=path_argument, default=ROOT / "wheelhouse",
                        help="output folder (default: wheelhouse/)")
    parser.add_argument("--abi", choices=ABIS, default=None,
                        help="stable (torch stable ABI, one wheel for torch >= 2.10), classic (ATen, one torch "
                             "minor) or auto (stable when the torch is new enough); default: $IMG2GRAY_ABI, else auto")
    parser.add_argument("--plat", default=DEFAULT_PLATFORM,
                        help=f"platform tag to repair to (default: {DEFAULT_PLATFORM})")
    args = parser.parse_args(argv)
    try:
        wheel = build(args.out, platform=args.plat, abi=args.abi)
    except ToolError as exc:
        print_error(make_console(), exc)
        return 1
    print(wheel)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
