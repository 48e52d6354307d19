"""``kernelwheel <command> [args]``: runs one command; ``kernelwheel --help`` lists them.

The chosen command's module is imported by name, and only that one: a command's start-up never pays for the others'
libraries (sigstore, twine's checks, huggingface_hub). Exit codes are the command's own; ``kernelwheel`` itself exits
2 (usage) for no command or an unknown one, with one line on stderr. ``kernelwheel --version`` prints its version.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
from collections.abc import Sequence
from typing import NamedTuple, Protocol


class Command(NamedTuple):
    module: str  # under kernelwheel.cli
    summary: str


COMMANDS: dict[str, Command] = {
    "convert": Command("hub2wheel", "repackage a Hub kernel's build variants (or a local build/) as wheels "
                                    "(also installed as `hub2wheel`)"),
    "index": Command("index", "write a static PEP 503 index (PEP 658 metadata, per-torch sub-indexes) of a folder of "
                             "wheels"),
    "install-command": Command("install_command", "print (or --run) the pip/uv command that installs a project's "
                                                  "wheel for the torch already installed"),
    "upload": Command("upload", "validate wheels, then upload them with twine to a package index"),
    "verify": Command("verify_wheel", "re-verify the signature and digests of a converted wheel (a .whl or an "
                                      "installed distribution)"),
    "publish": Command("publish", "publish build/<variant>/ folders to a Hub (or git) repository as a version"),
    "mirror": Command("mirror", "keep a private index in sync with Hub kernels (a TOML configuration): convert the "
                                "release tags not converted yet, then update the index"),
}


class _Main(Protocol):
    def __call__(self, argv: Sequence[str] | None = None) -> int: ...


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {command.summary}" for name, command in COMMANDS.items()]
    return ("usage: kernelwheel <command> [options]   (kernelwheel <command> --help: the command's options;\n"
            "       kernelwheel --version)\n\n"
            "Hub kernels as wheels: convert them, index them, install the matching one.\n\ncommands:\n"
            + "\n".join(lines) + "\n")


def version() -> str:
    """The installed kernelwheel distribution's version (a checkout's editable install included)."""
    try:
        return importlib.metadata.version("kernelwheel")
    except importlib.metadata.PackageNotFoundError:  # the package imported from a checkout that never installed it
        return "(not installed: run from a checkout)"


def command_main(name: str) -> _Main:
    """The ``main`` of command ``name`` (a key of ``COMMANDS``), its module imported now."""
    module = importlib.import_module(f"kernelwheel.cli.{COMMANDS[name].module}")
    main: _Main = module.main
    return main


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        sys.stderr.write(usage())
        return 2
    name, rest = args[0], args[1:]
    if name in ("-h", "--help"):
        sys.stdout.write(usage())
        return 0
    if name in ("-V", "--version"):
        sys.stdout.write(f"kernelwheel {version()}\n")
        return 0
    if name not in COMMANDS:
        sys.stderr.write(f"kernelwheel: unknown command {name!r} (commands: {', '.join(COMMANDS)}; "
                         "kernelwheel --help)\n")
        return 2
    return command_main(name)(rest)


if __name__ == "__main__":
    raise SystemExit(main())
