"""``python -m tools.cli.share_packages torch [numpy ...] --into VENV``: let another venv use this environment's
torch without downloading it again (about 4 GB with its CUDA libraries).

Each top-level entry of the named distributions and of every distribution they require (markers evaluated; extras
followed) is linked into VENV's site-packages, ``.dist-info`` folders included, so pip and ``tools.cli.install_command``
see torch as installed there. A distribution VENV already has is kept at the same version, replaced at another. Nothing
else is shared: a plain ``.pth`` to this environment would also show its other packages (img2gray itself, after
``make demo``), and pip would then count them as installed in VENV. For trying things (docs/walkthrough.md); a real
deployment installs torch itself.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from kernelwheel.cli.arguments import path_argument
from kernelwheel.io.console import make_console, print_error, print_step
from kernelwheel.io.errors import ToolError


class NotShareable(ToolError):
    """The distribution is not installed here, or VENV is not a venv."""


def requirement_closure(root: str) -> list[importlib.metadata.Distribution]:
    """``root`` and every installed distribution it needs, as pip would resolve them here."""
    seen: dict[str, importlib.metadata.Distribution] = {}
    todo: list[tuple[str, str]] = [(root, "")]
    done: set[tuple[str, str]] = set()
    while todo:
        raw, extra = todo.pop()
        name = canonicalize_name(raw)
        if (name, extra) in done:
            continue
        done.add((name, extra))
        try:
            dist = seen.get(name) or importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # a requirement whose marker pip would also skip, or one missing here too
        seen[name] = dist
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": extra}):
                todo.extend((requirement.name, e) for e in ("", *requirement.extras))
    return list(seen.values())


def site_packages(venv: Path) -> Path:
    found = sorted((venv / "lib").glob("python3.*/site-packages"))
    if len(found) != 1 or not (venv / "pyvenv.cfg").is_file():
        raise NotShareable(f"--into {venv}: expected a venv with one lib/python3.*/site-packages, found "
                           f"{[str(p) for p in found] or 'none'}")
    return found[0]


def share(roots: Sequence[str], venv: Path) -> int:
    """Link each of ``roots`` with its closure into ``venv``; returns how many entries were linked."""
    target = site_packages(venv)
    for root in roots:
        try:
            importlib.metadata.distribution(root)
        except importlib.metadata.PackageNotFoundError:
            raise NotShareable(f"{root}: expected a distribution installed in {sys.prefix}; it is not") from None
    return sum(link_closure(root, target) for root in roots)


def link_closure(root: str, folder: Path) -> int:
    """Symlink every top-level entry of ``root`` and of what it requires into ``folder``; returns how many were
    linked. A distribution ``folder`` already holds at the same version (the venv's own pip) is kept; at another
    version (a venv's setuptools 65 where torch requires >= 77) it is removed first, as an upgrade would: linking only
    the entries it lacks would put one release's .dist-info over another release's code."""
    installed = {canonicalize_name(d.metadata["Name"] or ""): d
                 for d in importlib.metadata.distributions(path=[str(folder)])}
    linked = 0
    for dist in requirement_closure(root):
        theirs = installed.get(canonicalize_name(dist.metadata["Name"] or ""))
        if theirs is not None and theirs.version == dist.version:
            continue
        if theirs is not None:
            _remove(theirs, folder)
        base = Path(str(dist.locate_file("")))
        for top in sorted(_tops(dist)):
            if (base / top).exists() and not (folder / top).exists():
                (folder / top).symlink_to(base / top)
                linked += 1
    return linked


def _tops(dist: importlib.metadata.Distribution) -> set[str]:
    """The top-level entries of site-packages that ``dist``'s RECORD names (scripts outside it left out)."""
    return {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")} - {"__pycache__"}


def _remove(dist: importlib.metadata.Distribution, folder: Path) -> None:
    for top in _tops(dist):
        path = folder / top
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.cli.share_packages", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("distributions", nargs="+", metavar="distribution",
                        help="what to share, with what it requires (e.g. torch numpy)")
    parser.add_argument("--into", type=path_argument, required=True, metavar="VENV", help="the venv to share it with")
    args = parser.parse_args(argv)
    console = make_console()
    try:
        linked = share(args.distributions, args.into)
    except (ToolError, OSError) as exc:
        print_error(console, exc)
        return 1
    print_step(console, f"* {' '.join(args.distributions)} and what they require: {linked} entries linked into "
                        f"{args.into}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
