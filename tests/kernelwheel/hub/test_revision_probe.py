"""kernelwheel.hub.revision_probe: its answers side by side with huggingface_hub's on the same requests.

On olah (the real Hub protocol, on 127.0.0.1) the probe must decide as huggingface_hub's ``get_hf_file_metadata``
does wherever it answers, and answer the cases a rerun needs. Answers olah never gives (redirects, gated and
disabled repositories, malformed headers) come from a small scripted HTTP server; there the probe must hand the
decision back (None) unless the answer is unambiguous.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import ClassVar

import pytest
from huggingface_hub import constants as hf_constants
from huggingface_hub import get_hf_file_metadata, hf_hub_url
from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

from kernelwheel.hub import revision_probe
from kernelwheel.hub.revision_probe import NO_SUCH_REPOSITORY, TIMED_OUT
from tests.helpers.hub_fixtures import HubRepos
from tests.helpers.servers import drip_server, in_thread, silent_server

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(autouse=True)
def _no_login(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No token file, whatever the machine's own login: the probe steps aside when huggingface_hub would find one."""
    monkeypatch.setattr(hf_constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)


@pytest.mark.parametrize(("endpoint", "repo_type", "revision", "filename"), [
    (None, "model", "main", "README.md"),
    ("http://127.0.0.1:9", "kernel", "v1", "build/torch-cpu/metadata.json"),
    ("https://hub.example/", "dataset", "refs/pr/3", "a b/c#d?.json"),
    ("http://127.0.0.1:9", "space", "v1.0.0", "ü.txt"),
])
def test_url_is_huggingface_hubs(endpoint: str | None, repo_type: str, revision: str, filename: str) -> None:
    assert revision_probe.resolve_url(endpoint, "org/x", repo_type, revision, filename) == hf_hub_url(
        "org/x", filename, repo_type=None if repo_type == "model" else repo_type, revision=revision,
        endpoint=endpoint)


def _huggingface_hubs_decision(endpoint: str, repo_id: str, repo_type: str, revision: str,
                               filename: str) -> str | revision_probe.Answer | None:
    url = hf_hub_url(repo_id, filename, repo_type=None if repo_type == "model" else repo_type, revision=revision,
                     endpoint=endpoint)
    try:
        return get_hf_file_metadata(url, endpoint=endpoint).commit_hash
    except GatedRepoError:
        return None
    except RepositoryNotFoundError:
        return NO_SUCH_REPOSITORY
    except Exception:
        return None


def test_decides_as_huggingface_hub_on_olah(hf_env: Path, hub_repos: HubRepos) -> None:
    commits = hub_repos.commits
    cases: list[tuple[str, str, str, str, str | revision_probe.Answer | None]] = [
        # (repo, type, revision, file, what the probe must answer); olah serves model repositories only
        ("testorg/img2gray", "kernel", "v1", "README.md", NO_SUCH_REPOSITORY),
        ("testorg/img2gray", "model", "v1", "README.md", commits["v1"]),
        ("testorg/img2gray", "model", "v1.0.0", "README.md", commits["v1.0.0"]),
        ("testorg/img2gray", "model", "main", "README.md", commits["main"]),
        ("testorg/img2gray", "model", commits["v2"], "README.md", commits["v2"]),
        ("testorg/nope", "model", "v1", "README.md", NO_SUCH_REPOSITORY),
        ("testorg/img2gray", "model", "no-such-branch", "README.md", None),  # any answer but a commit will do
        ("testorg/img2gray", "model", "v1", "no/such/file", None),
    ]
    for repo_id, repo_type, revision, filename, expected in cases:
        ours = revision_probe.ask(hub_repos.endpoint, None, repo_id, repo_type, revision, filename)
        theirs = _huggingface_hubs_decision(hub_repos.endpoint, repo_id, repo_type, revision, filename)
        case = f"{repo_type} {repo_id}@{revision}:{filename}"
        assert ours is None or ours == theirs, f"{case}: probe {ours}, huggingface_hub {theirs}"
        if expected is not None:
            assert ours == expected, case
        else:
            assert not isinstance(ours, str), f"{case}: a commit where huggingface_hub sees none"


class _Scripted(BaseHTTPRequestHandler):
    """Answers every HEAD with ``answer`` (status, headers); keeps each request's path and headers."""

    answer: ClassVar[tuple[int, dict[str, str]]] = (200, {})
    seen: ClassVar[list[tuple[str, str, dict[str, str]]]] = []

    def do_HEAD(self) -> None:
        type(self).seen.append((self.command, self.path, dict(self.headers)))
        status, headers = type(self).answer
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def scripted() -> Iterator[tuple[str, type[_Scripted]]]:
    handler = type("Handler", (_Scripted,), {"seen": []})
    with in_thread(handler) as url:
        yield url, handler


@pytest.mark.parametrize(("status", "headers", "expected"), [
    (200, {"X-Repo-Commit": COMMIT}, COMMIT),
    (302, {"X-Repo-Commit": COMMIT, "Location": "https://cdn.example/blob"}, COMMIT),  # an LFS file: a CDN redirect
    (307, {"X-Repo-Commit": COMMIT, "Location": "/org/renamed/resolve/v1/f"}, None),  # renamed: hf follows it
    (404, {"X-Error-Code": "RepoNotFound"}, NO_SUCH_REPOSITORY),
    (401, {"X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found"}, NO_SUCH_REPOSITORY),
    (401, {}, None),  # huggingface_hub calls a bare 401 at a repository URL "not found" too; the probe leaves it
    (403, {"X-Error-Code": "GatedRepo"}, None),
    (404, {"X-Error-Code": "RepoNotFound", "X-Error-Message": "Access to this resource is disabled."}, None),
    (404, {"X-Error-Code": "RevisionNotFound"}, None),
    (200, {}, None),
    (200, {"X-Repo-Commit": "v1"}, None),
    (200, {"X-Repo-Commit": COMMIT.upper()}, None),
    (500, {"X-Repo-Commit": COMMIT}, None),
])
def test_answers_only_what_cannot_mean_anything_else(scripted: tuple[str, type[_Scripted]], status: int,
                                                     headers: dict[str, str],
                                                     expected: str | revision_probe.Answer | None) -> None:
    endpoint, handler = scripted
    handler.answer = (status, headers)
    assert revision_probe.ask(endpoint, None, "org/x", "kernel", "refs/pr/1", "build/a b.json") == expected
    [(method, path, sent)] = handler.seen
    assert (method, path) == ("HEAD", "/kernels/org/x/resolve/refs%2Fpr%2F1/build/a%20b.json")
    assert "Authorization" not in sent


def test_token_is_sent_as_huggingface_hub_sends_it(scripted: tuple[str, type[_Scripted]]) -> None:
    endpoint, handler = scripted
    handler.answer = (200, {"X-Repo-Commit": COMMIT})
    assert revision_probe.ask(endpoint, "hf_secret", "org/x", "model", "main", "f") == COMMIT
    assert handler.seen[0][2]["Authorization"] == "Bearer hf_secret"


def test_steps_aside_for_a_token_huggingface_hub_would_find(scripted: tuple[str, type[_Scripted]], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint, handler = scripted
    handler.answer = (200, {"X-Repo-Commit": COMMIT})
    token_file = tmp_path / "token"
    token_file.write_text("hf_stored\n")
    monkeypatch.setattr(hf_constants, "HF_TOKEN_PATH", str(token_file))
    assert revision_probe.ask(endpoint, None, "org/x", "model", "main", "f") is None
    monkeypatch.setattr(hf_constants, "HF_TOKEN_PATH", str(tmp_path / "none"))
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", "hf_old_variable")
    assert revision_probe.ask(endpoint, None, "org/x", "model", "main", "f") is None
    assert handler.seen == []  # nothing asked without the credential
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_IMPLICIT_TOKEN", True)  # then huggingface_hub sends none
    assert revision_probe.ask(endpoint, None, "org/x", "model", "main", "f") == COMMIT


def test_no_answer_is_none() -> None:
    assert revision_probe.ask("http://127.0.0.1:9", None, "org/x", "model", "main", "f") is None
    assert revision_probe.ask("not a url", None, "org/x", "model", "main", "f") is None
    assert revision_probe.ask("ftp://127.0.0.1:9", None, "org/x", "model", "main", "f") is None


def test_no_answer_in_time_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    # huggingface_hub's own HEAD timeout; the caller then need not wait as long again through huggingface_hub.
    monkeypatch.setattr(hf_constants, "HF_HUB_ETAG_TIMEOUT", 0.2)
    with silent_server() as silent:
        assert revision_probe.ask(silent.endpoint, None, "org/x", "model", "main", "f") is TIMED_OUT
        assert len(silent.connections) == 1


@pytest.mark.parametrize("body", [False, True])
def test_a_dripping_answer_ends_at_the_deadline(monkeypatch: pytest.MonkeyPatch, body: bool) -> None:
    """HF_HUB_ETAG_TIMEOUT bounds the whole answer, not each read: a byte every 0.2 s never trips a 1 s read
    timeout, and used to keep the probe waiting for ever."""
    monkeypatch.setattr(hf_constants, "HF_HUB_ETAG_TIMEOUT", 1)
    with drip_server(0.2, body=body) as drip:
        start = time.monotonic()
        answer = revision_probe.ask(drip.endpoint, None, "org/x", "model", "main", "f")
        elapsed = time.monotonic() - start
    # HEAD has no body: complete headers are a whole answer (with no commit in it)
    assert answer is (None if body else TIMED_OUT)
    assert elapsed < 3
