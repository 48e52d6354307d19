"""kernelwheel.hub.versions: version tags and branches, and resolving --version against olah (see test_client.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from packaging.version import Version

from kernelwheel.hub import versions
from kernelwheel.hub.settings import HubSettings
from kernelwheel.io.errors import RevisionNotFound
from tests.helpers.hub_fixtures import HubRepos


def _settings(**overrides: str) -> HubSettings:
    return HubSettings.from_env({**os.environ, **overrides})


def test_version_refs_newest_first() -> None:
    refs = versions.version_refs([("v1.0.0", "a"), ("v1.1.0", "b"), ("release", "x")], [("v1", "c"), ("v2", "d"), ("main", "m")])
    assert [r.name for r in refs] == ["v2", "v1.1.0", "v1.0.0", "v1"]
    assert versions.pick_version(refs, "1", "org/x").name == "v1.1.0"
    assert versions.pick_version(refs, "<1.1", "org/x").name == "v1.0.0"
    with pytest.raises(RevisionNotFound, match=r"available: v2, v1\.1\.0"):
        versions.pick_version(refs, ">=3", "org/x")
    with pytest.raises(RevisionNotFound, match="neither a major"):
        versions.parse_version_spec("one point two")


def test_resolve_version(hf_env: Path, hub_repos: HubRepos) -> None:
    settings = _settings()
    repo_type, ref = versions.resolve_version(settings.api(), settings, "testorg/img2gray", "1")
    assert repo_type == "model"  # olah has no kernel repo type: fallback
    assert (ref.name, ref.commit, ref.version) == ("v1.1.0", hub_repos.commits["v1.1.0"], Version("1.1.0"))
    _, ref = versions.resolve_version(settings.api(), settings, "testorg/img2gray", "==1.0.*")
    assert ref.commit == hub_repos.commits["v1.0.0"]
    _, ref = versions.resolve_version(settings.api(), settings, "testorg/img2gray", "2")
    assert (ref.name, ref.kind) == ("v2", "branch")


@pytest.mark.parametrize(("spec", "admitted", "refused"), [
    ("1", "1.1.0", "2.0.0"), ("0.1.0", "0.1.0", "0.1.1"), ("v0.1.0".removeprefix("v"), "0.1.0", "0.2.0"),
    (">=0.1,<0.2", "0.1.5", "0.2.0"), ("==0.1.0", "0.1.0", "0.1.1"),
])
def test_version_spec_forms(spec: str, admitted: str, refused: str) -> None:
    specifier = versions.parse_version_spec(spec)
    assert specifier.contains(admitted) and not specifier.contains(refused)
