"""Trusted kernel publishers: kernels 0.17.2's gate for Hub repositories, applied before anything is fetched.

``kernels`` loads a Hub kernel only when the organisation that publishes it has ``trustedKernelPublisher`` set on
the Hub (its organisation overview), or when the user passed ``trust_remote_code`` (every repository, or an
allow-list of repository ids). A Hub that cannot answer the question is a refusal, as in kernels. Offline the
question cannot be asked; kernels then skips the check with a warning (the files came from an earlier download),
and so does this module. Local folders are never gated: the user chose those files. A repository the Hub does not
have is reported as such, not as a publisher to trust (a misspelt name would otherwise be told to trust itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from huggingface_hub import HfApi

from kernelwheel.hub.client import no_such_repository, repository_exists
from kernelwheel.io.errors import HubError, UntrustedPublisher

HOW_TO_TRUST = "pass --trust-remote-code (every repository) or --trust-repo {repo_id} to convert it anyway"


@dataclass(frozen=True)
class TrustPolicy:
    """What the user trusts beyond the Hub's trusted publishers (kernels' ``trust_remote_code``)."""

    trust_all: bool = False
    repo_ids: frozenset[str] = field(default_factory=frozenset)

    def allows_without_asking(self, repo_id: str) -> bool:
        return self.trust_all or repo_id in self.repo_ids


def publisher_of(repo_id: str) -> str:
    return repo_id.split("/", 1)[0]


def check_publisher(api: HfApi, repo_id: str, policy: TrustPolicy, *, offline: bool) -> str | None:
    """Raise ``UntrustedPublisher`` when kernels would refuse ``repo_id`` (``RepositoryNotFound`` instead when there
    is no such repository: a misspelt name is not a publisher to trust); return a warning when the check was skipped
    (offline), else None."""
    if policy.allows_without_asking(repo_id):
        return None
    if offline:
        return f"{repo_id}: publisher trust not checked (HF_HUB_OFFLINE is set; the cached files were fetched online)"
    publisher = publisher_of(repo_id)
    try:
        overview = api.get_organization_overview(publisher)
    except Exception as exc:  # any answer but an overview: the Hub could not vouch for the publisher
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise _refusal(api, repo_id, (
            f"{repo_id}: cannot check whether {publisher!r} is a trusted kernel publisher on {api.endpoint} "
            f"({reason}); kernels refuses such repositories too: {HOW_TO_TRUST.format(repo_id=repo_id)}")) from None
    # Organization keeps fields it does not know as attributes ("forward compatibility"): the flag is one of them.
    if getattr(overview, "trustedKernelPublisher", False) is True:
        return None
    raise _refusal(api, repo_id, (
        f"{repo_id}: {publisher!r} is not a trusted kernel publisher on {api.endpoint} (kernels refuses it too): "
        f"{HOW_TO_TRUST.format(repo_id=repo_id)}"))


def _refusal(api: HfApi, repo_id: str, message: str) -> HubError:
    """``UntrustedPublisher(message)``, unless the Hub says there is no repository ``repo_id`` at all: then that."""
    if repository_exists(api, repo_id) is False:
        return no_such_repository(repo_id, api.endpoint)
    return UntrustedPublisher(message)
