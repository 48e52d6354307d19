"""Uploading wheels to a package index that takes uploads (pypiserver, any twine repository), checked first.

A server stores whatever bytes it is sent under a wheel's name (pypiserver takes ``junk-1.0-py3-none-any.whl`` of
random bytes), and the installers then fail on it. So every wheel is validated here before ``twine upload`` runs
at all, with the same checks ``kernelwheel index`` applies (``kernelwheel.index.indexed_wheel.inspect_wheel``): a
readable zip, a PEP 508 (ASCII) name, a ``.dist-info/RECORD`` whose hashes match, a ``METADATA`` whose Name and
Version are the file name's, a ``+torchX.Y`` label that agrees with ``Requires-Dist: torch``; and no two files that
normalise to one wheel. One bad wheel stops the whole upload; nothing is sent. A variant wheel (``hub2wheel
--variant-wheels``, experimental) is refused too: it works only beside its ``<name>-<version>-variants.json``, which
an upload server does not serve (``kernelwheel index`` does).

The password is twine's business: ``TWINE_PASSWORD`` in the environment (or twine's prompt, or keyring), never a
command-line argument of this tool or of the twine it runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from kernelwheel.index.client import check_url
from kernelwheel.index.indexed_wheel import IndexedWheel, inspect_wheel, normalised_collisions
from kernelwheel.io.errors import InvalidWheel, PublishFailed, ToolError
from kernelwheel.io.limited_read import file_problem
from kernelwheel.io.urls import redact


def check_wheels(paths: Sequence[Path]) -> list[IndexedWheel]:
    """Every path validated as a wheel; ``InvalidWheel`` listing each problem (one line per wheel) otherwise."""
    if not paths:
        raise InvalidWheel("no wheels to upload; pass the .whl files (e.g. wheelhouse/*.whl)")
    problems: list[str] = []
    checked: list[IndexedWheel] = []
    for path in paths:
        if path.suffix != ".whl":
            problems.append(f"{path}: not a .whl file")
        elif (problem := file_problem(path)) is not None:
            problems.append(f"{path}: {problem}")
        else:
            try:
                wheel = inspect_wheel(path)[0]
                if wheel.label is not None:
                    raise InvalidWheel(f"{path.name}: a variant wheel (experimental); an upload server does not serve "
                                       "the variants.json it needs, so uv would call it unsupported: serve it with "
                                       "kernelwheel index, upload only the backend-named wheels")
                checked.append(wheel)
            except ToolError as exc:
                problems.append(str(exc))
            except OSError as exc:
                problems.append(f"{path}: cannot be read ({exc.strerror or exc})")
    problems.extend(normalised_collisions(checked))
    if problems:
        raise InvalidWheel("refusing to upload, nothing was sent:\n  " + "\n  ".join(problems))
    return checked


def twine_upload_argv(paths: Sequence[Path], repository_url: str, username: str | None, *,
                      skip_existing: bool = False, non_interactive: bool = False) -> list[str]:
    """``python -m twine upload`` for ``paths``; the password is left to twine (``TWINE_PASSWORD``, its prompt)."""
    user = ["--username", username] if username else []
    flags = [*(["--skip-existing"] if skip_existing else []), *(["--non-interactive"] if non_interactive else [])]
    return [sys.executable, "-m", "twine", "upload", "--disable-progress-bar", *flags, "--repository-url",
            repository_url, *user, *map(str, paths)]  # fmt: skip


def check_password_source(non_interactive: bool) -> None:
    """twine prompts for a missing password, and with no terminal its prompt dies in an EOFError traceback. Without
    TWINE_PASSWORD or a terminal, say how to pass it instead (--non-interactive leaves twine to ask its keyring)."""
    if non_interactive or os.environ.get("TWINE_PASSWORD") or sys.stdin is None or sys.stdin.isatty():
        return
    raise ToolError("no password for the upload and no terminal to prompt on: set TWINE_PASSWORD in the environment "
                    "(or pass --non-interactive to use a keyring)")


def upload(
    paths: Sequence[Path],
    repository_url: str,
    *,
    username: str | None = None,
    env: Mapping[str, str] | None = None,
    skip_existing: bool = False,
    non_interactive: bool = False,
) -> list[IndexedWheel]:
    """Validate every wheel (``check_wheels``), then ``twine upload`` them all; ``PublishFailed`` when twine fails
    (its own output, on the terminal, says why)."""
    check_url(repository_url, what="repository URL", schemes=("http", "https"),
              expected="the index's upload URL, http(s)://host[:port]/ (pypiserver) or .../legacy/ (PyPI, devpi)")
    if urlsplit(repository_url).username is not None:
        raise PublishFailed(
            f"repository URL {redact(repository_url)} carries credentials; pass --username and put the password "
            "in TWINE_PASSWORD instead (a URL ends up in logs and shell history)"
        )
    wheels = check_wheels(paths)
    check_password_source(non_interactive)
    argv = twine_upload_argv(paths, repository_url, username, skip_existing=skip_existing,
                             non_interactive=non_interactive)
    result = subprocess.run(argv, env=env, check=False)
    if result.returncode != 0:
        raise PublishFailed(
            f"twine upload to {repository_url} failed (exit {result.returncode}); its output above says why"
        )
    return wheels
