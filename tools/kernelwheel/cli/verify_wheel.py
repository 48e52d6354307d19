"""``kernelwheel verify WHEEL | DISTRIBUTION``: re-verify a wheel hub2wheel wrote from a signed variant.

The wheel's package folder holds the variant's ``metadata.json`` and ``metadata.json.sigstore``: the bundle is
verified over metadata.json (kernels' signer policies by default, ``--signer-workflow`` and
``--sigstore-trusted-root`` as in hub2wheel), then metadata.json's digest over the package's files. A ``.whl`` path is
unpacked into a temporary folder a chunk at a time, each file checked against its RECORD hash; any other argument is a
distribution installed in the Python running this command. Exit 0 and one line per package on success; one ``error:``
line and exit 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from kernelwheel.cli import prog
from kernelwheel.cli.arguments import add_trust_arguments
from kernelwheel.format.signatures import SignatureOptions, verify_package
from kernelwheel.format.variant_folder import SIGSTORE_BUNDLE, check_relpath
from kernelwheel.io.console import make_console, print_error, print_warning
from kernelwheel.io.errors import InvalidWheel, SignatureMissing, ToolError
from kernelwheel.io.limited_read import file_problem
from kernelwheel.wheels.wheel_reader import unpack_wheel


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog("verify_wheel", "verify"),
        description="Re-verify the signature (metadata.json.sigstore) and digests of a hub2wheel wheel, as a .whl "
                    "file or as a distribution installed in this Python.",
    )
    parser.add_argument("target", help="a .whl file, or the name of an installed distribution (img2gray-cu130)")
    add_trust_arguments(parser)
    return parser


def _signed_packages(names: Sequence[str]) -> list[str]:
    """Top-level package folders holding a bundle (``<pkg>/metadata.json.sigstore``), from a file list."""
    return sorted({n.split("/")[0] for n in names if n.count("/") == 1 and n.endswith(f"/{SIGSTORE_BUNDLE}")})


def _verify_wheel_file(wheel: Path, options: SignatureOptions) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="verify-wheel-") as tmp:
        names = unpack_wheel(wheel, lambda arcname: Path(tmp) / check_relpath(arcname, wheel.name))
        packages = _signed_packages(names)
        if not packages:
            raise SignatureMissing(f"{wheel.name}: no <package>/{SIGSTORE_BUNDLE} (built from an unsigned variant?)")
        return [verify_package(Path(tmp) / p, f"{wheel.name}:{p}", options) for p in packages]


def _verify_installed(name: str, options: SignatureOptions) -> list[str]:
    try:
        dist = importlib.metadata.distribution(name)
    except (importlib.metadata.PackageNotFoundError, ValueError):  # ValueError: an empty name
        raise InvalidWheel(f"{name!r} is neither a .whl file nor a distribution installed in {sys.prefix}") from None
    label = f"{dist.metadata['Name']} {dist.version}"
    packages = _signed_packages([Path(str(f)).as_posix() for f in dist.files or []])
    if not packages:
        raise SignatureMissing(f"{label}: no <package>/{SIGSTORE_BUNDLE} installed (built from an unsigned variant?)")
    return [verify_package(Path(str(dist.locate_file(p))), f"{label} ({p})", options) for p in packages]


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = make_console()
    options = SignatureOptions(trusted_root=args.sigstore_trusted_root, signer_workflows=tuple(args.signer_workflow),
                               require_signature=True, warn=lambda m: print_warning(console, m))
    try:
        options.validate()
        target = Path(args.target)
        if target.suffix == ".whl" or os.path.isfile(target):  # os.path: False, not OSError, for a name too long
            if (problem := file_problem(target)) is not None:
                raise InvalidWheel(f"{target}: {problem}")
            lines = _verify_wheel_file(target, options)
        else:
            lines = _verify_installed(args.target, options)
    except ToolError as exc:
        print_error(console, exc)
        return 1
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
