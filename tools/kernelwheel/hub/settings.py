"""The Hub's environment as huggingface_hub reads it, and where its caches keep each repository and file."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kernelwheel.io import answer_deadline
from kernelwheel.io.errors import HubError, one_line
from kernelwheel.io.urls import printable, redact, url_problem

# huggingface_hub is imported where it is used (kernelwheel.hub.client says why).
if TYPE_CHECKING:
    from huggingface_hub import HfApi

REPO_TYPES = ("kernel", "model")  # the repo types a repository is looked for as, in this order
# Never fetched: byte code someone committed along with a build.
IGNORE_PATTERNS = ("*.pyc", "__pycache__/*", "*/__pycache__/*")
_TRUE = {"1", "on", "yes", "true"}
OFFLINE_SET = "HF_HUB_OFFLINE is set"  # HubSettings.offline_reason when the user chose it


@dataclass(frozen=True)
class HubSettings:
    """The environment as ``huggingface_hub`` reads it, captured once per command (``from_env`` raises ``HubError``
    for an HF_ENDPOINT that is not an http(s) URL)."""

    endpoint: str | None
    token: str | None
    offline: bool
    cache_dir: Path
    assets_dir: Path  # huggingface_hub's cache for downstream libraries' own files (HF_ASSETS_CACHE)
    # Why only the cache is used (``offline``): HF_HUB_OFFLINE, or the Hub found unreachable (``unreachable``).
    offline_reason: str = OFFLINE_SET

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> HubSettings:
        env = os.environ if environ is None else environ
        hf_home = Path(env.get("HF_HOME", Path(env.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "huggingface"))
        cache = Path(env.get("HF_HUB_CACHE", env.get("HUGGINGFACE_HUB_CACHE", hf_home / "hub")))
        assets = Path(env.get("HF_ASSETS_CACHE", hf_home / "assets"))
        offline = env.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE
        endpoint = env.get("HF_ENDPOINT") or None
        problem = None if endpoint is None else url_problem(endpoint, ("http", "https"))
        if problem is not None:
            raise HubError(f"HF_ENDPOINT {printable(redact(endpoint or ''))} is not usable: {problem}; expected "
                           "http(s)://host[:port], the Hub or a mirror of it")
        return cls(endpoint, env.get("HF_TOKEN") or None, offline, cache, assets)

    def api(self) -> HfApi:
        from huggingface_hub import HfApi

        answer_deadline.bound_huggingface_hub()  # every request HfApi sends ends at its deadline
        return HfApi(endpoint=self.endpoint, token=self.token)

    def unreachable(self, reason: str) -> HubSettings:
        """These settings, cache only from now on: the Hub did not answer (``reason``), and asking it again for each
        file would only repeat the failure."""
        return replace(self, offline=True, offline_reason=reason)

    def endpoint_url(self) -> str:
        """The Hub these settings ask: HF_ENDPOINT, else huggingface_hub's own default."""
        from huggingface_hub import constants

        return self.endpoint or str(constants.ENDPOINT)

    def as_found(self) -> HubSettings:
        """These settings made cache only (``unreachable``) when this run found the Hub not answering in time or
        refusing connections (``answer_deadline.unanswered``), where every further request would fail at once;
        otherwise themselves."""
        if self.offline:
            return self
        why = answer_deadline.unanswered(self.endpoint_url())
        return self if why is None else self.unreachable(f"{self.endpoint_url()}: {why}")


@dataclass(frozen=True)
class Snapshot:
    """Downloaded (or cached) files of one commit: ``root/build/<variant>/...`` (``root`` does not exist when no
    file matched the patterns)."""

    repo_id: str
    repo_type: str
    commit: str
    root: Path
    blobs: Path  # the cache's blobs/ folder: snapshot files are symlinks into it


def cache_folder(settings: HubSettings, repo_id: str, repo_type: str) -> Path:
    # huggingface_hub's file_download.repo_folder_name, spelled out: that module costs ~0.2 s to import, which is
    # most of a rerun of a pinned commit (tests/kernelwheel/hub/test_settings.py checks that both name the same folder).
    from huggingface_hub import constants

    return settings.cache_dir / constants.REPO_ID_SEPARATOR.join([f"{repo_type}s", *repo_id.split("/")])


def snapshot_in_cache(settings: HubSettings, repo_id: str, repo_type: str, commit: str) -> Snapshot:
    """Where huggingface_hub's cache keeps ``commit``'s files (whether or not they are there yet)."""
    root = cache_folder(settings, repo_id, repo_type) / "snapshots" / commit
    return Snapshot(repo_id, repo_type, commit, root, root.parent.parent / "blobs")


def assets_folder(settings: HubSettings, namespace: str, subfolder: str = "default") -> Path:
    """hub2wheel's ``namespace/subfolder`` in huggingface_hub's assets cache, created when missing."""
    from huggingface_hub import cached_assets_path

    try:
        return cached_assets_path("hub2wheel", namespace=namespace, subfolder=subfolder, assets_dir=settings.assets_dir)
    except (OSError, ValueError) as exc:  # ValueError: a file where one of its folders should be
        raise HubError(f"huggingface_hub's assets cache {settings.assets_dir} (HF_HOME, HF_ASSETS_CACHE) cannot "
                       f"be used: {one_line(exc)}") from None


def digest_cache_file(settings: HubSettings) -> Path:
    """Where hub2wheel keeps file digests between runs (``digests.save_digest_cache``), in huggingface_hub's assets
    cache beside the files they describe."""
    return assets_folder(settings, "file-digests") / "sha256.json"


def elf_verdict_file(settings: HubSettings) -> Path:
    """Where hub2wheel keeps ELF verdicts between runs (``elf.save_verdicts``), keyed by the files' content sha256."""
    return digest_cache_file(settings).with_name("elf-verdicts.json")
