"""Which commit a branch or tag of a Hub repository is at, asked with one HEAD through the standard library.

A rerun of a branch or tag (``recorded_snapshots``) needs one fact from the Hub: whether the revision still resolves
to the commit it recorded. Asked through huggingface_hub, that fact costs more than the rest of the rerun: importing
its HTTP stack and building its client takes 0.12 s on a 2-core VM and 0.14-0.21 s on a 16-core Xeon host, the HEAD
itself 5-10 ms (benchmarks/NOTES.md). So ``ask`` sends the HEAD that huggingface_hub's ``get_hf_file_metadata``
sends, with ``urllib``, and answers only what cannot mean anything else: a commit, or "no such repository". Every
other answer (a relative redirect to a renamed repository, a gated or disabled repository, an error, a credential
huggingface_hub would find on its own) is ``None``, and the caller asks through huggingface_hub, which decides and
gives its own errors. Nothing here is written anywhere.
"""

from __future__ import annotations

import enum
import os
import re
import urllib.parse
from email.message import Message
from pathlib import Path
from types import ModuleType

import huggingface_hub  # the package itself is lazy: only its constants module reads HF_ENDPOINT

from kernelwheel.io import answer_deadline

_COMMIT = re.compile(r"[0-9a-f]{40}")
# The answer huggingface_hub turns into DisabledRepoError before it looks at a RepoNotFound code.
_DISABLED = "Access to this resource is disabled."


class Answer(enum.Enum):
    NO_SUCH_REPOSITORY = "no such repository"
    # No complete answer within huggingface_hub's own HEAD timeout (HF_HUB_ETAG_TIMEOUT, for the whole answer here),
    # now or earlier in this run (answer_deadline.unanswered): asking again through it would wait as long again.
    TIMED_OUT = "no answer in time"


NO_SUCH_REPOSITORY = Answer.NO_SUCH_REPOSITORY
TIMED_OUT = Answer.TIMED_OUT


def _constants() -> ModuleType:
    """huggingface_hub's constants, imported on first use (its HF_ENDPOINT parsing is HubSettings' to check)."""
    from huggingface_hub import constants

    return constants


def _implicit_credential(token: str | None) -> bool:
    """Whether huggingface_hub would send a token of its own finding (a login's token file, the old environment
    variable), which a request without it could see as "no such repository" where huggingface_hub sees the repo."""
    constants = _constants()
    if token is not None or constants.HF_HUB_DISABLE_IMPLICIT_TOKEN:
        return False
    return bool(os.environ.get("HUGGING_FACE_HUB_TOKEN")) or Path(constants.HF_TOKEN_PATH).exists()


def resolve_url(endpoint: str | None, repo_id: str, repo_type: str, revision: str, filename: str) -> str:
    """``hf_hub_url``'s URL (huggingface_hub's own template and repo-type prefixes), without importing it."""
    constants = _constants()
    prefix = constants.REPO_TYPES_URL_PREFIXES.get(repo_type, "")
    url: str = constants.HUGGINGFACE_CO_URL_TEMPLATE.format(
        repo_id=prefix + repo_id, revision=urllib.parse.quote(revision, safe=""), filename=urllib.parse.quote(filename))
    if endpoint is not None and url.startswith(constants.ENDPOINT):
        url = endpoint + url[len(constants.ENDPOINT):]
    return url


def ask(endpoint: str | None, token: str | None, repo_id: str, repo_type: str, revision: str,
        filename: str) -> str | Answer | None:
    """The commit ``revision`` of ``repo_id`` (a ``repo_type`` repository) is at, as the Hub answers a HEAD of
    ``filename`` there; ``NO_SUCH_REPOSITORY``; ``TIMED_OUT``; or None when only huggingface_hub can tell."""
    if _implicit_credential(token):
        return None
    import http.client  # here, with urllib.request: ~15 ms that a rerun of a commit id (no request) never pays
    import urllib.error
    import urllib.request

    url = resolve_url(endpoint, repo_id, repo_type, revision, filename)
    if answer_deadline.unanswered(url) is not None:
        return TIMED_OUT  # it did not answer earlier in this run: asking again would wait as long again
    headers = {"User-Agent": f"hub2wheel; hf_hub/{huggingface_hub.__version__}", "Accept-Encoding": "identity"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    # Proxies from the environment, as huggingface_hub's client takes them; no redirect followed and no status
    # turned into an exception (the answer is read as it comes); HTTPS only for an https URL (Python 3.12's default
    # opener builds a TLS context in every process: 20-40 ms).
    opener = urllib.request.OpenerDirector()
    opener.add_handler(urllib.request.ProxyHandler())
    opener.add_handler(urllib.request.HTTPSHandler() if url.startswith("https:") else urllib.request.HTTPHandler())
    seconds = float(_constants().HF_HUB_ETAG_TIMEOUT)

    def head() -> tuple[int, Message] | None:
        request = urllib.request.Request(url, method="HEAD", headers=headers)
        response = opener.open(request, timeout=seconds)
        if response is None:  # a scheme with no handler here
            return None
        with response:
            return response.status, response.headers

    try:
        # The timeout above bounds each read; call_within bounds the whole answer (a server dripping its headers).
        result = answer_deadline.call_within(seconds, head, "answer to the revision HEAD")
    except (OSError, ValueError, http.client.HTTPException) as exc:
        # urllib wraps a connect timeout in URLError; a timeout waiting for the answer comes as it is.
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if not isinstance(reason, TimeoutError):
            return None
        answer_deadline.note_unanswered(url, f"no complete answer within {seconds:g} s")
        return TIMED_OUT
    if result is None:
        return None
    status, answer = result
    if status in (401, 404) and answer.get("X-Error-Code") == "RepoNotFound" \
            and answer.get("X-Error-Message") != _DISABLED:
        return NO_SUCH_REPOSITORY
    if 300 <= status < 400 and not urllib.parse.urlsplit(answer.get("Location", "")).netloc:
        return None  # a renamed repository: huggingface_hub follows relative redirects
    commit = answer.get("X-Repo-Commit", "")
    return commit if status < 400 and _COMMIT.fullmatch(commit) else None
