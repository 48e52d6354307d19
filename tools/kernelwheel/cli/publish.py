"""``kernelwheel publish ORG/NAME --version X.Y.Z``: publish ``build/<variant>/`` folders to a Hub repository
(or any git repository) as branch ``v<major>`` + tag ``v<version>`` (``kernelwheel.publish.release``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from kernelwheel.cli.arguments import check_repo_id_argument, path_argument
from kernelwheel.cli.command import command_parser, run_command
from kernelwheel.hub.settings import HubSettings
from kernelwheel.publish.git_transport import GitTransport
from kernelwheel.publish.hub_transport import HubTransport
from kernelwheel.publish.plan import Transport
from kernelwheel.publish.release import publish

REPO_TYPES = ("model", "kernel", "dataset", "space")


EPILOG = """\
examples:
  # check everything, write nothing
  kernelwheel publish org/img2gray --version 0.1.0 --dry-run
  # the Hub (HF_ENDPOINT / HF_TOKEN as for huggingface_hub): branch v0 + tag v0.1.0
  kernelwheel publish org/img2gray --version 0.1.0 --repo-type kernel
  # any git repository standing in for the Hub repository
  kernelwheel publish org/img2gray --version 0.1.0 --git-remote /srv/git/img2gray.git
then: hub2wheel org/img2gray --version '>=0.1,<0.2' --trust-repo org/img2gray
      (--trust-repo: a private endpoint marks no publisher trusted)   or   get_kernel("org/img2gray", version=0)
"""


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "publish", "publish",
        "Publish build/<variant>/ folders to a Hub repository: branch v<major> and tag v<version>.", EPILOG,
    )
    parser.add_argument("repo_id", help="Hub repository id (org/name)")
    parser.add_argument("--version", required=True, help="the release to publish (PEP 440, e.g. 0.1.0)")
    parser.add_argument("--build-dir", type=path_argument, default=Path("build"),
                        help="folder holding <variant>/ folders (default: build)")
    parser.add_argument("--git-remote", metavar="PATH_OR_URL",
                        help="publish to this git repository instead of the Hub (HF_ENDPOINT)")
    parser.add_argument("--repo-type", choices=REPO_TYPES,
                        help="Hub repository type (default: model; kernels >= 0.14 uses kernel)")
    parser.add_argument("--dry-run", action="store_true", help="verify and list what would be published; write nothing")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(build_parser(), _publish, argv)


def _publish(args: argparse.Namespace, parser: argparse.ArgumentParser, console: Console) -> int:
    if args.git_remote and args.repo_type:
        parser.error("--repo-type applies to the Hub; a --git-remote has no repository type")
    check_repo_id_argument(parser, "REPO_ID", args.repo_id)
    transport: Transport
    if args.git_remote:
        transport = GitTransport.from_arg(args.git_remote)
    else:
        transport = HubTransport(HubSettings.from_env().api(), args.repo_type or "model")
    print(publish(args.build_dir, args.repo_id, args.version, transport, dry_run=args.dry_run, console=console)
          .summary())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
