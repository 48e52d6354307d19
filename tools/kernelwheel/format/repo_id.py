"""Hub repository ids as kernels uses them: ``org/name``, checked by huggingface_hub's own rules, so a bad id from
the command line, a lock file or a publish target is refused in one line before any request is made."""

from __future__ import annotations

import re

# ASCII letters and digits, with single '.', '_' or '-' between them: a strict subset of huggingface_hub's rules
# (no leading or trailing separator, no "--" or ".."), so a plain id passes without loading them (~80 ms a run).
_PLAIN_PART = r"[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*"
_PLAIN_REPO_ID = re.compile(rf"{_PLAIN_PART}/{_PLAIN_PART}")
_MAX_PART = 96  # huggingface_hub's limit for the owner and for the name


def repo_id_problem(repo_id: str) -> str | None:
    """Why ``repo_id`` is not a kernel repository id, in one line; None when it is one. Kernels always sit under an
    owner, so the form is ``org/name`` (huggingface_hub alone would also take a bare ``name``)."""
    shown = f"{repo_id!r:.120}"
    if repo_id.count("/") != 1:
        return f"expected a Hub repository id of the form org/name, got {shown}"
    if (_PLAIN_REPO_ID.fullmatch(repo_id) and max(map(len, repo_id.split("/"))) <= _MAX_PART
            and not repo_id.endswith(".git")):
        return None
    # Imported here: huggingface_hub's validators bring its HTTP stack, which a plain id never needs.
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id  # type: ignore[attr-defined]  # exported lazily

    try:
        validate_repo_id(repo_id)
    except HFValidationError as exc:
        reason = str(exc).splitlines()[0].split(": '", 1)[0]  # huggingface_hub appends the id itself
        return f"expected a Hub repository id of the form org/name, got {shown}: {reason[:160]}"
    return None
