"""Version tags and branches (``v1.2.3``, ``v1``) of a Hub repository: listed, recorded, matched to --version."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from kernelwheel.hub import ref_listing
from kernelwheel.hub.client import is_missing, no_such_repository
from kernelwheel.hub.settings import REPO_TYPES, HubSettings, assets_folder, cache_folder
from kernelwheel.io.errors import HubError, OfflineCacheMiss, RevisionNotFound

if TYPE_CHECKING:
    from huggingface_hub import HfApi

# Every online listing of tags and branches is recorded (``list_refs``, ``ref_listing``): offline ``--version`` reads
# that record, tags called tags, else the cached ``refs/`` (see ``_cached_refs`` for why that is not
# ``scan_cache_dir``).
_VERSION_REF = re.compile(r"^v(\d+(?:\.\d+)*)$")


@dataclass(frozen=True)
class VersionRef:
    """A version tag (``v1.2.3``) or version branch (``v1``) and the commit it points to."""

    version: Version
    name: str
    commit: str
    kind: str  # "tag" or "branch"; "ref" when only huggingface_hub's cache names it (it does not say which)


def parse_version_spec(spec: str) -> SpecifierSet:
    """``"1"`` → ``==1.*`` (a bare major, as ``kernels`` takes it); ``"0.1.0"`` → ``==0.1.0`` (a bare version, the
    form users type and ``kernels to-wheel`` took); otherwise a PEP 440 specifier set."""
    text = spec.strip()
    if text.isdigit():
        return SpecifierSet(f"=={int(text)}.*")
    try:
        return SpecifierSet(f"=={Version(text)}")
    except InvalidVersion:
        pass
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise RevisionNotFound(
            f"--version {spec!r} is neither a major version (e.g. '1') nor a PEP 440 specifier (e.g. '>=0.2,<0.3')"
        ) from None


def version_refs(tags: Iterable[tuple[str, str]], branches: Iterable[tuple[str, str]]) -> list[VersionRef]:
    """Every ``v<version>`` tag and branch, newest first (a tag wins over a branch of the same version)."""
    refs: list[VersionRef] = []
    for kind, items in (("tag", tags), ("branch", branches)):
        for name, commit in items:
            version = version_of_ref(name)
            if version is not None:
                refs.append(VersionRef(version, name, commit, kind))
    return sorted(refs, key=lambda r: (r.version, r.kind == "tag"), reverse=True)


def version_of_ref(name: str) -> Version | None:
    """``v1.2.3`` / ``v1`` → that version; None for any other branch, tag or commit."""
    return ref_listing.version_named(_VERSION_REF, name)


def pick_version(refs: list[VersionRef], spec: str, repo_id: str) -> VersionRef:
    specifier = parse_version_spec(spec)
    for ref in refs:
        if specifier.contains(ref.version, prereleases=True):
            return ref
    available = ", ".join(r.name for r in refs) or "none"
    raise RevisionNotFound(f"{repo_id}: no version tag or branch matches {spec!r} (available: {available})")


def _cached_refs(settings: HubSettings, repo_id: str) -> tuple[str, dict[str, str]] | None:
    # Hand-written on purpose: huggingface_hub's public cache API, scan_cache_dir(), stats every file of every
    # cached repo and drops a whole repo as "corrupted" when one ref names a commit without a snapshot folder,
    # which is what snapshot_download leaves after fetching a ref (e.g. main) where no file matched the patterns.
    # The refs/<name> file layout read here is the one snapshot_download writes.
    for repo_type in REPO_TYPES:
        refs_dir = cache_folder(settings, repo_id, repo_type) / "refs"
        if refs_dir.is_dir():
            refs = {p.name: p.read_text().strip() for p in refs_dir.iterdir() if p.is_file()}
            return repo_type, refs
    return None


def list_version_refs(api: HfApi, settings: HubSettings, repo_id: str) -> tuple[str, list[VersionRef]]:
    """The repo type that answered and its version refs (offline: the recorded listing, ``cached_version_refs``)."""
    if settings.offline:
        return cached_version_refs(settings, repo_id)
    listing = list_refs(api, settings, repo_id)
    return listing.repo_type, version_refs(listing.tags.items(), listing.branches.items())


def cached_version_refs(settings: HubSettings, repo_id: str) -> tuple[str, list[VersionRef]]:
    """The version refs of the last online listing (``recorded_refs``); without one, the names huggingface_hub's
    cache keeps under ``refs/``, whose kind (tag or branch) it does not record: "ref"."""
    listing = recorded_refs(settings, repo_id)
    if listing is not None:
        return listing.repo_type, version_refs(listing.tags.items(), listing.branches.items())
    cached = _cached_refs(settings, repo_id)
    if cached is None:
        raise OfflineCacheMiss(
            f"{repo_id}: {settings.offline_reason} and {settings.cache_dir} has no refs for it; run once online "
            "with the same --version, or pass --revision <commit>"
        )
    repo_type, refs = cached
    return repo_type, [replace(ref, kind="ref") for ref in version_refs([], refs.items())]


def listing_path(settings: HubSettings, repo_id: str) -> Path:
    """Where ``list_refs`` records ``repo_id``'s listing: hub2wheel's corner of huggingface_hub's assets cache."""
    return assets_folder(settings, repo_id.replace("/", "--"), "refs") / "listing.json"


def recorded_refs(settings: HubSettings, repo_id: str) -> ref_listing.RefListing | None:
    """The tags and branches of ``repo_id`` as the last online ``list_refs`` saw them; None when never listed."""
    return ref_listing.load(listing_path(settings, repo_id))


def list_refs(api: HfApi, settings: HubSettings, repo_id: str,
              repo_types: Sequence[str] = REPO_TYPES) -> ref_listing.RefListing:
    """Every tag and branch of ``repo_id``, asked of the Hub and recorded for later offline runs (``recorded_refs``).
    ``repo_types``: the types to try, in order (a caller that knows the type from an earlier listing puts it first).
    ``RepositoryNotFound`` when no repo type has it; ``HubError`` when the Hub does not answer."""
    for repo_type in repo_types:
        try:
            git_refs = api.list_repo_refs(repo_id, repo_type=repo_type)
        except Exception as exc:
            if is_missing(exc):
                continue
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise HubError(f"{repo_id}: cannot list refs on {api.endpoint}: {reason}") from None
        listing = ref_listing.RefListing(
            repo_type, {t.name: t.target_commit for t in git_refs.tags},
            {b.name: b.target_commit for b in git_refs.branches}, datetime.now(timezone.utc))
        ref_listing.save(listing_path(settings, repo_id), listing)
        return listing
    raise no_such_repository(repo_id, api.endpoint)


def resolve_version(api: HfApi, settings: HubSettings, repo_id: str, spec: str) -> tuple[str, VersionRef]:
    """``--version``: the newest ``v<version>`` tag or branch matching ``spec``."""
    repo_type, refs = list_version_refs(api, settings, repo_id)
    return repo_type, pick_version(refs, spec, repo_id)
