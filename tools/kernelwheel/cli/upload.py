"""``kernelwheel upload --repository-url URL WHEEL...``: validate every wheel, then ``twine upload`` them to a
package index that takes uploads (pypiserver, ``kernelwheel.publish.upload``). ``--check-only`` validates
without uploading. The password comes from ``TWINE_PASSWORD`` (or twine's prompt), never from the command line.
Exit status: 0 uploaded (or checked), 1 a bad wheel (nothing sent) or a failed upload."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from rich.console import Console

from kernelwheel.cli.arguments import path_argument
from kernelwheel.cli.command import command_parser, run_command
from kernelwheel.io.console import print_step
from kernelwheel.io.errors import ToolError
from kernelwheel.publish.upload import check_wheels, upload


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "upload", "upload",
        "Validate wheels (zip, RECORD, METADATA name/version = file name), then twine-upload them.",
        "example: TWINE_PASSWORD=... kernelwheel upload --repository-url http://127.0.0.1:8080/ -u uploader "
        "wheelhouse/*.whl",
    )
    parser.add_argument("wheels", nargs="+", type=path_argument, help="the .whl files")
    parser.add_argument("--repository-url", help="the index's upload URL, e.g. http://127.0.0.1:8080/ (pypiserver)")
    parser.add_argument("-u", "--username", help="passed to twine; the password comes from TWINE_PASSWORD")
    parser.add_argument("--check-only", action="store_true", help="validate the wheels, upload nothing")
    parser.add_argument("--skip-existing", action="store_true",
                        help="twine's --skip-existing: files the index already has are not an error (re-runs)")
    parser.add_argument("--non-interactive", action="store_true",
                        help="twine's --non-interactive: never prompt for a password (CI)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(build_parser(), _upload, argv)


def _upload(args: argparse.Namespace, parser: argparse.ArgumentParser, console: Console) -> int:
    if args.check_only:
        wheels = check_wheels(args.wheels)
        print_step(console, f"* {len(wheels)} wheels are valid; nothing was uploaded (--check-only)")
        return 0
    if not args.repository_url:
        raise ToolError("--repository-url is required to upload (or pass --check-only)")
    wheels = upload(args.wheels, args.repository_url, username=args.username, skip_existing=args.skip_existing,
                    non_interactive=args.non_interactive)
    print_step(console, f"* Uploaded {len(wheels)} wheels to {args.repository_url}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
