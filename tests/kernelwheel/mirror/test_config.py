"""Tests for kernelwheel/mirror/config.py: the mirror's TOML configuration, and one line per problem."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from kernelwheel.io.errors import InvalidMirrorConfig
from kernelwheel.mirror.config import load_config

KERNEL = '[[kernels]]\nrepo = "org/relu"\n'


def _load(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "conf" / "mirror.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def test_a_full_configuration_is_read_with_paths_relative_to_it(tmp_path: Path) -> None:
    path = _load(tmp_path, '''wheelhouse = "../wheels"
require-signature = true
sigstore-trusted-root = "root.json"
signer-workflows = ["https://github.com/org/k/.github/workflows/build.yaml@refs/heads/main"]
jobs = 3
variant-wheels = true

[[kernels]]
repo = "org/relu"
versions = ">=0.2,<1"
variants = ["*-cu130-*", "torch-cpu"]
trust = true

[[kernels]]
org = "other-org"
versions = "latest"
''')
    config = load_config(path)
    assert config.wheelhouse == path.parent / "../wheels"
    assert config.sigstore_trusted_root == path.parent / "root.json"
    assert (config.require_signature, config.jobs, len(config.signer_workflows)) == (True, 3, 1)
    assert config.variant_wheels  # off unless set:
    assert not load_config(_load(tmp_path, "wheelhouse = 'w'\n" + KERNEL)).variant_wheels
    relu, org = config.kernels
    assert (relu.repo, relu.org, relu.variants, relu.trust, relu.name) == (
        "org/relu", None, ("*-cu130-*", "torch-cpu"), True, "org/relu")
    assert relu.wants(Version("0.2.1")) and not relu.wants(Version("1.0")) and not relu.wants(Version("0.1"))
    assert (org.repo, org.org, org.versions, org.trust, org.name) == (None, "other-org", "latest", False, "other-org/*")


@pytest.mark.parametrize("text, problem", [
    ("wheelhouse = 'w'\n", "kernels: expected one or more [[kernels]] tables, got None"),
    ("wheelhouse = 7\n" + KERNEL, "wheelhouse: expected a folder, relative to the configuration file, got 7"),
    (KERNEL, "wheelhouse: expected a folder, relative to the configuration file, got None"),
    ("wheelhouse = 'w'\nwheelhose = 'x'\n" + KERNEL, "wheelhose: expected one of the keys jobs, kernels, "),
    ("wheelhouse = 'w'\njobs = 0\n" + KERNEL, "jobs: expected a whole number of at least 1, got 0"),
    ("wheelhouse = 'w'\njobs = true\n" + KERNEL, "jobs: expected a whole number of at least 1, got True"),
    ("wheelhouse = 'w'\nrequire-signature = 'yes'\n" + KERNEL, "require-signature: expected true or false, got 'yes'"),
    ("wheelhouse = 'w'\nvariant-wheels = 1\n" + KERNEL, "variant-wheels: expected true or false, got 1"),
    ("wheelhouse = 'w'\n[[kernels]]\n", "kernels[0]: expected exactly one of repo or org, got []"),
    ("wheelhouse = 'w'\n[[kernels]]\nrepo = 'a/b'\norg = 'a'\n", "kernels[0]: expected exactly one of repo or org"),
    ("wheelhouse = 'w'\n[[kernels]]\nrepo = 'relu'\n", "kernels[0].repo: expected a Hub repository id of the form"),
    ("wheelhouse = 'w'\n[[kernels]]\norg = 'a/b'\n", "kernels[0].org: expected a Hub user or organisation name"),
    ("wheelhouse = 'w'\n" + KERNEL + "versions = 'newest'\n", "kernels[0].versions: expected a PEP 440 specifier"),
    ("wheelhouse = 'w'\n" + KERNEL + "variants = '*-cu130-*'\n",
     "kernels[0].variants: expected a list of non-empty strings, got '*-cu130-*'"),
    ("wheelhouse = 'w'\n" + KERNEL + "trust = 1\n", "kernels[0].trust: expected true or false, got 1"),
    ("wheelhouse = 'w'\n" + KERNEL + "verison = '1'\n", "kernels[0].verison: expected one of the keys org, repo, "),
    ("wheelhouse = 'w'\nkernels = 5\n", "kernels: expected one or more [[kernels]] tables, got 5"),
    ("wheelhouse = [\n", "is not TOML ("),
])
def test_every_problem_is_one_line_naming_the_key(tmp_path: Path, text: str, problem: str) -> None:
    path = _load(tmp_path, text)
    with pytest.raises(InvalidMirrorConfig) as raised:
        load_config(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: {problem}"), message
    assert "\n" not in message


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InvalidMirrorConfig, match=r"mirror\.toml: cannot be read"):
        load_config(tmp_path / "mirror.toml")
