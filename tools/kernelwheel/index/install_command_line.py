"""The install command as it is printed and run: a password never on a command line, words quoted for a shell.

The printed command says ``"${KERNELWHEEL_INDEX_PASSWORD}"`` (``${KERNELWHEEL_EXTRA_INDEX_PASSWORD_<n>}`` for the
n-th extra index) where an index URL has a password (``printable_argv``, ``shell_command``); ``with_password`` puts
that variable's value back into a URL that names only its user; ``--run`` moves a URL with a password off the command
line into the installer's own environment variable (``runnable_command``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from kernelwheel.index.install_plan import InstallPlan

# The printed command names these variables instead of a password: the index URL's, then each extra index's.
PASSWORD_ENV = "KERNELWHEEL_INDEX_PASSWORD"
EXTRA_PASSWORD_ENV = "KERNELWHEEL_EXTRA_INDEX_PASSWORD_{}"
_VARIABLE = re.compile(r"\$\{(KERNELWHEEL_[A-Z0-9_]+)\}")


def _password_free(url: str, variable: str) -> str:
    """``url`` with its password replaced by the shell reference ``${variable}`` (unchanged without a password)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{quote(unquote(parts.username or ''), safe='')}:${{{variable}}}@{host}"))


def with_password(url: str, password: str | None) -> str:
    """``url`` with ``password`` put in, when it names a user and no password of its own (and ``password`` is set)."""
    if not password:
        return url
    try:
        parts = urlsplit(url)
        if parts.username is None or parts.password is not None:
            return url
    except ValueError:
        return url  # check_url reports it
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.netloc.rsplit('@', 1)[0]}:{quote(password, safe='')}@{host}"))


def printable_argv(plan: InstallPlan) -> tuple[list[str], list[str]]:
    """The plan's command with every password replaced by ``${KERNELWHEEL_INDEX_PASSWORD}`` (the index URL's) or
    ``${KERNELWHEEL_EXTRA_INDEX_PASSWORD_<n>}`` (the n-th extra index's), and the names of the variables it uses."""
    urls = {plan.index_url: PASSWORD_ENV}
    for number, extra in enumerate(_extra_index_urls(plan), start=1):
        urls.setdefault(extra, EXTRA_PASSWORD_ENV.format(number))
    argv = [_password_free(arg, urls[arg]) if arg in urls else arg for arg in plan.argv]
    variables = [urls[arg] for arg in plan.argv if arg in urls and _has_password(arg)]
    return argv, variables


def _extra_index_urls(plan: InstallPlan) -> list[str]:
    return [plan.argv[i + 1] for i, arg in enumerate(plan.argv) if arg == "--extra-index-url"]


# Where each installer reads the two index options from its environment (pip: whitespace-separated extras; uv: the
# same, as `uv pip install --help` documents).
_INDEX_ENV = {"pip": ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"), "uv": ("UV_INDEX_URL", "UV_EXTRA_INDEX_URL")}


def runnable_command(plan: InstallPlan) -> tuple[list[str], dict[str, str]]:
    """The plan's command as ``--run`` starts it, and the environment variables to add for it.

    A process's command line is readable by every local user (``ps``, ``/proc/<pid>/cmdline``), its environment only
    by the same user: an index URL that carries a password leaves the command line for the installer's own variable
    (``PIP_INDEX_URL``, ``UV_INDEX_URL``). The extra indexes move together when one of them has a password (the
    installer reads them from one variable); there they take the place of the extras in the caller's environment
    and, for pip, in its configuration files. Without passwords the command is the plan's own and nothing is added.
    """
    index_variable, extras_variable = _INDEX_ENV[plan.installer]
    extras = _extra_index_urls(plan)
    env: dict[str, str] = {}
    moved: set[str] = set()
    if _has_password(plan.index_url):
        env[index_variable] = plan.index_url
        moved.add("--index-url")
    if any(_has_password(url) for url in extras):
        env[extras_variable] = " ".join(extras)
        moved.add("--extra-index-url")
    command: list[str] = []
    words = iter(plan.argv)
    for word in words:
        if word in moved:
            next(words)  # the option's URL leaves with it
        else:
            command.append(word)
    return command, env


def _has_password(url: str) -> bool:
    try:
        return urlsplit(url).password is not None
    except ValueError:
        return False  # check_url refused it before any plan was made


def shell_command(argv: Sequence[str]) -> str:
    """``shlex.join``, except that ``${KERNELWHEEL_...}`` stays expandable (double-quoted, not single-quoted)."""
    words = []
    for arg in argv:
        pieces = _VARIABLE.split(arg)  # [text, variable, text, variable, ..., text]
        words.append("".join(
            (f'"${{{piece}}}"' if odd else shlex.quote(piece) if piece else "") for odd, piece in
            ((i % 2 == 1, piece) for i, piece in enumerate(pieces))
        ) or "''")
    return " ".join(words)
