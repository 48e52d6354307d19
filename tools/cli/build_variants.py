"""``python -m tools.cli.build_variants [--torch-env PYTHON ...] [--abi classic|stable]``: build img2gray into
kernel-builder's ``build/<variant>/`` Hub layout, one variant per torch environment and ABI
(``tools.build.variants``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from kernelwheel.cli.arguments import path_argument
from kernelwheel.io.console import make_console, print_error
from kernelwheel.io.errors import ToolError
from tools.build.variants import ROOT, TorchEnv, build_variants


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.cli.build_variants", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--torch-env", action="append", type=path_argument, default=None, metavar="PYTHON",
                        help="a Python interpreter (or venv folder) with torch; repeatable (default: this Python)")
    parser.add_argument("--abi", action="append", choices=("classic", "stable"), default=None,
                        help="which ABIs to build; repeatable (default: both)")
    parser.add_argument("--out", type=path_argument, default=ROOT / "build",
                        help="where the variant folders go (default: build/)")
    args = parser.parse_args(argv)
    # absolute() but not resolve(): a venv's python is a symlink out of the venv, and must stay the venv's.
    given = args.torch_env or [Path(sys.executable)]
    pythons = [((p / "bin" / "python") if p.is_dir() else p).absolute() for p in given]
    try:
        envs = [TorchEnv.probe(python) for python in pythons]
        for path in build_variants(envs, abis=tuple(args.abi or ("classic", "stable")), out=args.out):
            print(path)
    except ToolError as exc:
        print_error(make_console(), exc)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
