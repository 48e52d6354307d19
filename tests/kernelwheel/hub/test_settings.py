"""kernelwheel.hub.settings: the environment as huggingface_hub reads it, and where its caches keep things."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernelwheel.hub.settings import REPO_TYPES, HubSettings, cache_folder, digest_cache_file
from kernelwheel.io.errors import HubError
from tests.helpers.repo import REPO_ROOT


def _settings(**overrides: str) -> HubSettings:
    return HubSettings.from_env({**os.environ, **overrides})


@pytest.mark.parametrize("repo_type", REPO_TYPES)
@pytest.mark.parametrize("repo_id", ["testorg/img2gray", "kernels-community/activation", "a.b/c_d-1"])
def test_cache_folder_is_huggingface_hubs(repo_id: str, repo_type: str) -> None:
    from huggingface_hub.file_download import repo_folder_name

    settings = _settings()
    assert cache_folder(settings, repo_id, repo_type) == \
        settings.cache_dir / repo_folder_name(repo_id=repo_id, repo_type=repo_type)


@pytest.mark.parametrize(("endpoint", "problem"), [
    ("http://[::1", "it cannot be parsed (Invalid IPv6 URL)"),
    ("hub.internal", "its scheme is missing (usable here: http:, https:)"),
    ("file:///srv/hub", "its scheme is file: (usable here: http:, https:)"),
    ("https://u:secret@hub.internal:99999/", "it cannot be parsed (Port out of range 0-65535)"),
])
def test_an_unusable_hf_endpoint_is_one_line(endpoint: str, problem: str) -> None:
    """huggingface_hub itself raises a bare ValueError on import for the first; hub2wheel reads it first."""
    with pytest.raises(HubError) as info:
        HubSettings.from_env({"HF_ENDPOINT": endpoint})
    shown = endpoint.replace(":secret@", ":***@")
    assert str(info.value) == (f"HF_ENDPOINT {shown} is not usable: {problem}; expected http(s)://host[:port], the "
                               "Hub or a mirror of it")


def test_an_assets_cache_blocked_by_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "assets").write_text("a file where huggingface_hub's assets folder should be")
    settings = HubSettings.from_env({"HF_HOME": str(tmp_path)})
    with pytest.raises(HubError) as info:
        digest_cache_file(settings)
    # what huggingface_hub said, named by its exception type, on one line
    assert re.fullmatch(rf"huggingface_hub's assets cache {re.escape(str(tmp_path))}/assets \(HF_HOME, HF_ASSETS_CACHE\) "
                        r"cannot be used: (FileExistsError|NotADirectoryError|ValueError): [^\n]+", str(info.value))


def test_the_cli_refuses_a_malformed_hf_endpoint_before_huggingface_hub_reads_it(tmp_path: Path) -> None:
    for command in (["tools.hub2wheel", "org/img2gray", "--trust-remote-code", "--out", str(tmp_path / "wh")],
                    ["tools.cli.publish", "org/img2gray", "--version", "1.0.0", "--build-dir", str(tmp_path)]):
        result = subprocess.run([sys.executable, "-m", *command], cwd=REPO_ROOT, capture_output=True, text=True,
                                env={**os.environ, "HF_ENDPOINT": "http://[::1", "HF_HOME": str(tmp_path)}, timeout=120)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.splitlines() == ["error: HF_ENDPOINT http://[::1 is not usable: it cannot be parsed "
                                              "(Invalid IPv6 URL); expected http(s)://host[:port], the Hub or a mirror "
                                              "of it"]
