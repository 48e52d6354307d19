"""argparse helpers shared by the commands (which import libraries, never each other)."""

from __future__ import annotations

import argparse
from pathlib import Path

from kernelwheel.format.repo_id import repo_id_problem


def path_argument(text: str) -> Path:
    """``type=`` for a file or folder argument: ``Path(text)``, refusing the empty string, which ``Path`` would
    quietly turn into the current folder (``index ''`` indexed it)."""
    if not text:
        raise argparse.ArgumentTypeError("expected a path, got '' (an empty string, not the current folder '.')")
    return Path(text)


def check_repo_id_argument(parser: argparse.ArgumentParser, what: str, repo_id: str, after: str = "") -> None:
    """A usage error (``parser.error``: one line, exit 2) naming ``what`` unless ``repo_id`` is an org/name Hub id;
    ``after`` is added to the reason."""
    problem = repo_id_problem(repo_id)
    if problem is not None:
        parser.error(f"{what}: {problem}{after}")


def add_trust_arguments(parser: argparse.ArgumentParser) -> None:
    """``--sigstore-trusted-root`` and ``--signer-workflow``, spelled the same in every command."""
    parser.add_argument("--sigstore-trusted-root", type=path_argument, metavar="FILE",
                        help="verify signatures against this Sigstore trusted_root.json (default: Sigstore's "
                             "production root through TUF, as kernels)")
    parser.add_argument("--signer-workflow", action="append", default=[], metavar="URI",
                        help="accept signatures by this GitHub workflow, https://github.com/<org>/<repo>/.github/"
                             "workflows/<file>.yaml@<ref> (repeatable; replaces the default list, kernels' own: "
                             "the kernels-community build workflows)")
