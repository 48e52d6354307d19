"""kernelwheel.hub.trust: the trusted-publisher gate, decided side by side with kernels 0.17.2's own check.

olah mirrors repositories but serves no organisation overviews, so the Hub's ``/api/organizations/<org>/overview``
answer (the one field kernels reads, ``trustedKernelPublisher``) comes from a small HTTP server on 127.0.0.1; both
the real huggingface_hub client (ours) and kernels' ``_check_trust_remote_code`` (in a subprocess) ask it.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from huggingface_hub import HfApi

from kernelwheel.hub.trust import TrustPolicy, check_publisher
from kernelwheel.io.errors import RepositoryNotFound, UntrustedPublisher
from tests.helpers.hub_fixtures import HubRepos
from tests.helpers.kernels_releases import RELEASES, oracle_python
from tests.helpers.repo import REPO_ROOT
from tests.helpers.servers import in_thread

OVERVIEWS = {
    "trusted-org": {"name": "trusted-org", "fullname": "Trusted", "avatarUrl": "", "trustedKernelPublisher": True},
    "plain-org": {"name": "plain-org", "fullname": "Plain", "avatarUrl": ""},
    "flag-off-org": {"name": "flag-off-org", "fullname": "Off", "avatarUrl": "", "trustedKernelPublisher": False},
}

# (repo id, trust_remote_code as kernels takes it)
CASES: list[tuple[str, bool | list[str]]] = [
    ("trusted-org/relu", False),
    ("plain-org/relu", False),
    ("flag-off-org/relu", False),
    ("no-such-org/relu", False),  # 404: the publisher cannot be vouched for
    ("plain-org/relu", True),
    ("plain-org/relu", ["plain-org/relu"]),
    ("plain-org/relu", ["plain-org/other"]),
]


class _Overviews(BaseHTTPRequestHandler):
    """Organisation overviews, and a refs listing for every repository (each exists: ``check_publisher`` asks for
    one before it refuses, to tell a repository that does not exist from an untrusted one)."""

    def do_GET(self) -> None:
        parts = self.path.strip("/").split("/")
        body = OVERVIEWS.get(parts[2]) if len(parts) == 4 and parts[:2] == ["api", "organizations"] else None
        if len(parts) == 5 and parts[0] == "api" and parts[4] == "refs":
            body = {"branches": [], "tags": [], "converts": []}
        data = json.dumps(body if body is not None else {"error": "not found"}).encode()
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with in_thread(_Overviews) as url:
        yield url


def _policy(trust_remote_code: bool | list[str]) -> TrustPolicy:
    if isinstance(trust_remote_code, list):
        return TrustPolicy(repo_ids=frozenset(trust_remote_code))
    return TrustPolicy(trust_all=trust_remote_code)


def _ours(endpoint: str, repo_id: str, trust_remote_code: bool | list[str]) -> bool:
    try:
        check_publisher(HfApi(endpoint=endpoint), repo_id, _policy(trust_remote_code), offline=False)
    except UntrustedPublisher:
        return False
    return True


def _kernels(endpoint: str, release: str) -> list[bool]:
    script = (
        "import json, sys\n"
        "from tests.helpers.kernels_oracle.internals import internal\n"
        "_check_trust_remote_code = internal('hf_hub')._check_trust_remote_code\n"
        "out = []\n"
        "for repo_id, trust in json.loads(sys.argv[1]):\n"
        "    try:\n"
        "        _check_trust_remote_code(repo_id, False, trust)\n"
        "        out.append(True)\n"
        "    except ValueError:\n"
        "        out.append(False)\n"
        "print(json.dumps(out))\n"
    )
    env = {**os.environ, "HF_ENDPOINT": endpoint, "PYTHONPATH": str(REPO_ROOT)}
    # kernels 0.17.2 builds an invalid User-Agent (a trailing "; ") when telemetry is off, and then refuses every
    # repository as "could not verify": leave telemetry as the user's environment has it, minus that switch.
    for name in ("HF_HUB_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
        env.pop(name, None)
    done = subprocess.run([str(oracle_python(release)), "-c", script, json.dumps(CASES)], capture_output=True, text=True,
                          env=env, check=True, timeout=120)
    decisions: list[bool] = json.loads(done.stdout.splitlines()[-1])
    return decisions


@pytest.mark.parametrize("release", RELEASES)
def test_same_decisions_as_kernels(endpoint: str, release: str) -> None:
    ours = [_ours(endpoint, repo_id, trust) for repo_id, trust in CASES]
    assert ours == _kernels(endpoint, release)
    assert ours == [True, False, False, False, True, True, False]  # and they are the ones the docs describe


def test_refusals_say_why_and_how(endpoint: str) -> None:
    api = HfApi(endpoint=endpoint)
    with pytest.raises(UntrustedPublisher) as untrusted:
        check_publisher(api, "plain-org/relu", TrustPolicy(), offline=False)
    message = str(untrusted.value)
    assert message.startswith("plain-org/relu: 'plain-org' is not a trusted kernel publisher on http://127.0.0.1")
    assert "--trust-remote-code" in message and "--trust-repo plain-org/relu" in message and "\n" not in message
    with pytest.raises(UntrustedPublisher) as unknown:
        check_publisher(api, "no-such-org/relu", TrustPolicy(), offline=False)
    assert "cannot check whether 'no-such-org' is a trusted kernel publisher" in str(unknown.value)
    assert "\n" not in str(unknown.value)


def test_a_repository_that_does_not_exist_is_reported_so_not_as_a_publisher_to_trust(hub_repos: HubRepos) -> None:
    """A misspelt repository id was refused as "cannot check whether 'testorg' is a trusted kernel publisher ...:
    pass --trust-repo testorg/img2grey", trusting the typo; only with that flag was it found not to exist. olah
    serves no organisation overviews, so every publisher there is refused, but a repository it does not have is
    named as missing."""
    api = HfApi(endpoint=hub_repos.endpoint)
    with pytest.raises(RepositoryNotFound) as missing:
        check_publisher(api, "testorg/img2grey", TrustPolicy(), offline=False)
    assert str(missing.value) == (f"testorg/img2grey: no such kernel or model repository on {hub_repos.endpoint} "
                                  "(or HF_TOKEN cannot see it)")
    with pytest.raises(UntrustedPublisher, match="cannot check whether 'testorg' is a trusted kernel publisher"):
        check_publisher(api, "testorg/img2gray", TrustPolicy(), offline=False)  # it exists: the trust question


def test_offline_skips_with_a_warning() -> None:
    # No server at all: offline, nothing is asked (kernels skips the check the same way, with a warning).
    warning = check_publisher(HfApi(endpoint="http://127.0.0.1:9"), "plain-org/relu", TrustPolicy(), offline=True)
    assert warning is not None and "not checked" in warning and "HF_HUB_OFFLINE" in warning
    assert check_publisher(HfApi(endpoint="http://127.0.0.1:9"), "plain-org/relu",
                           TrustPolicy(trust_all=True), offline=True) is None
