"""Who may sign a variant's ``metadata.json``: GitHub workflows, kept here as data, and the Sigstore policy built
from them with sigstore-python's public ``sigstore.verify.policy``.

A signer is a GitHub repository and the workflow URIs in it that may sign
(``https://github.com/<org>/<repo>/.github/workflows/<file>.yaml@<ref>``). A certificate is accepted for a signer
when it was issued by GitHub Actions' OIDC issuer (both of Fulcio's issuer extensions), for that source repository,
to one of those workflows; it is accepted by a list of signers when any of them accepts it. That is what kernels'
``GitHubWorkflowPolicy`` checks. ``DEFAULT_SIGNERS`` is the newest supported release's default (kernels 0.19.1's
``DEFAULT_POLICY``, which adds huggingface/kernels-community-rs to 0.17.2's ``DEFAULT_POLICIES``); it must accept
every signer any supported release accepts, which tests/kernelwheel/format/test_kernels_releases.py checks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # sigstore takes ~1 s to import: only when a signature is checked
    from sigstore.verify.policy import VerificationPolicy

GITHUB_ACTIONS_ISSUER = "https://token.actions.githubusercontent.com"
_WORKFLOW_URI = re.compile(
    r"^https://github\.com/(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/\.github/workflows/[^/@\s]+\.ya?ml@\S+$"
)


@dataclass(frozen=True)
class WorkflowSigner:
    """The workflows of one GitHub repository that may sign."""

    repo_id: str  # org/repo
    signer_uris: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.signer_uris:
            raise ValueError(f"{self.repo_id}: at least one signer workflow URI is needed")


DEFAULT_SIGNERS: tuple[WorkflowSigner, ...] = (
    WorkflowSigner(
        repo_id="huggingface/kernels-community",
        signer_uris=(
            "https://github.com/huggingface/kernels-community/.github/workflows/build.yaml@refs/heads/main",
            "https://github.com/huggingface/kernels-community/.github/workflows/build-mac.yaml@refs/heads/main",
            "https://github.com/huggingface/kernels-community/.github/workflows/build-windows.yaml@refs/heads/main",
            # Signed existing builds (around torch 2.10-2.12) after the fact.
            "https://github.com/huggingface/kernels-community/.github/workflows/sign-old-builds.yaml@refs/heads/main",
        ),
    ),
    WorkflowSigner(
        repo_id="huggingface/kernels-community-rs",
        signer_uris=(
            "https://github.com/huggingface/kernels-community-rs/.github/workflows/build.yaml@refs/heads/main",
        ),
    ),
)


def workflow_repository(uri: str) -> str | None:
    """``org/repo`` of a workflow URI, or None when ``uri`` is not one."""
    match = _WORKFLOW_URI.match(uri)
    return match["repo"] if match is not None else None


def signers_for(uris: Iterable[str]) -> tuple[WorkflowSigner, ...]:
    """One signer per repository for these workflow URIs (``ValueError`` naming the first one that is not a
    workflow URI)."""
    by_repo: dict[str, list[str]] = {}
    for uri in uris:
        repo = workflow_repository(uri)
        if repo is None:
            raise ValueError(f"{uri!r}: expected https://github.com/<org>/<repo>/.github/workflows/<file>.yaml@<ref>")
        by_repo.setdefault(repo, []).append(uri)
    return tuple(WorkflowSigner(repo, tuple(found)) for repo, found in by_repo.items())


def accepted_uris(signers: Sequence[WorkflowSigner]) -> list[str]:
    """Every workflow URI the signers accept (for messages)."""
    return [uri for signer in signers for uri in signer.signer_uris]


def signer_policy(signer: WorkflowSigner) -> VerificationPolicy:
    """One signer as a Sigstore policy, with sigstore-python's own policy classes."""
    from sigstore.verify import policy

    return policy.AllOf([
        policy.OIDCIssuer(GITHUB_ACTIONS_ISSUER),
        policy.OIDCIssuerV2(GITHUB_ACTIONS_ISSUER),
        policy.OIDCSourceRepositoryURI(f"https://github.com/{signer.repo_id}"),
        policy.AnyOf([policy.OIDCBuildSignerURI(uri) for uri in signer.signer_uris]),
    ])


def verification_policy(signers: Sequence[WorkflowSigner]) -> VerificationPolicy:
    """The policy a signature must satisfy: any of ``signers``."""
    from sigstore.verify import policy

    return policy.AnyOf([signer_policy(signer) for signer in signers])


__all__ = ["DEFAULT_SIGNERS", "GITHUB_ACTIONS_ISSUER", "WorkflowSigner", "accepted_uris", "signer_policy",
           "signers_for", "verification_policy", "workflow_repository"]
