"""Our decisions next to each supported kernels release's own (asked in its oracle venv), on the same fixtures:
digests, metadata, locks, variant names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelwheel.format.digests import digest_violations, verify_digest
from kernelwheel.format.lockfile import parse_lockfile
from kernelwheel.format.variant_folder import collect_files, read_metadata
from kernelwheel.format.variants import Variant
from kernelwheel.io.errors import DigestMismatch, InvalidLockfile, InvalidVariantName
from tests.helpers import kernel_repos
from tests.helpers.kernels_releases import RELEASES, ask

VARIANT = "torch-stable-abi210-cpu-x86_64-linux"


@pytest.fixture
def variant_dir(tmp_path: Path, so_cache: Path) -> Path:
    return kernel_repos.flat_variant(tmp_path / "build", VARIANT, so_cache)


def _kernels_violations(folder: Path, release: str) -> list[str]:
    """kernels' verdict: the metadata's digest (parsed by kernels) validated against kernels' hash of the folder."""
    answer = ask(release, "format_data", "digest_verdict", {"variant": str(folder)})
    assert answer.get("verdict") in ("Success", "DigestVerificationFailure"), answer
    messages: list[str] = answer["messages"]
    return messages


def _our_violations(folder: Path) -> list[str]:
    files = collect_files(folder, "build/v")
    violations = digest_violations(files, read_metadata(files, "build/v"), "build/v")
    assert violations is not None
    return violations


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("tamper", ["none", "edit", "add", "remove", "edit-and-add"])
def test_digest_verdicts_match_kernels(variant_dir: Path, tamper: str, release: str) -> None:
    if "edit" in tamper:
        (variant_dir / "__init__.py").write_text("# edited\n")
    if "add" in tamper:
        (variant_dir / "extra.py").write_text("x = 1\n")
    if tamper == "remove":
        (variant_dir / "_ops.py").unlink()
    ours, theirs = _our_violations(variant_dir), _kernels_violations(variant_dir, release)
    # Same number of violations, each about the same file (kernels words them its own way).
    assert len(ours) == len(theirs)
    for path in ("__init__.py", "extra.py", "_ops.py"):
        assert sum(path in v for v in ours) == sum(path in v for v in theirs), (path, ours, theirs)
    if tamper == "none":
        files = collect_files(variant_dir, "v")
        assert ours == [] and verify_digest(files, read_metadata(files, "v"), "v")


def test_every_violation_is_reported_in_one_error(variant_dir: Path) -> None:
    (variant_dir / "__init__.py").write_text("# edited\n")
    (variant_dir / "extra.py").write_text("x = 1\n")
    files = collect_files(variant_dir, "build/v")
    with pytest.raises(DigestMismatch) as raised:
        verify_digest(files, read_metadata(files, "build/v"), "build/v")
    message = str(raised.value)
    assert "extra.py is not covered" in message and "__init__.py does not match its sha256 digest" in message
    assert "\n" not in message


@pytest.mark.parametrize("release", RELEASES)
def test_fixture_metadata_is_what_kernels_reads(variant_dir: Path, release: str) -> None:
    theirs = ask(release, "format_data", "metadata_summary", {"variant": str(variant_dir)})
    ours = json.loads((variant_dir / "metadata.json").read_text())
    assert (theirs["name"], theirs["id"], theirs["version"]) == (ours["name"], ours["id"], ours["version"])
    assert theirs["digest_files"] == ours["digest"]["files"] and "sha256" in theirs["digest_algorithm"]


@pytest.mark.parametrize("release", RELEASES)
def test_a_lock_written_by_kernels_is_read_as_kernels_reads_it(release: str) -> None:
    text = ask(release, "format_data", "write_lock", [["org/relu", 1, None, "a" * 40], ["org/gelu", None, "main",
                                                                                      "B" * 40]])
    parsed = parse_lockfile(text)
    assert sorted((lock.repo_id, lock.sha, lock.variants) for lock in parsed) == sorted(
        (repo_id, commit, None) for repo_id, _, _, commit in ask(release, "format_data", "parse_lock", text))
    assert all(type(lock.sha) is str for lock in parsed)


def test_old_format_lock_is_still_read_and_kernels_refuses_it() -> None:
    old = json.dumps([{"repo_id": "org/relu", "sha": "c" * 40,
                       "variants": {VARIANT: {"hash": "sha256-" + "0" * 64, "hash_type": "git_lfs_concat"}}}])
    (lock,) = parse_lockfile(old)
    assert lock.variants is not None and set(lock.variants) == {VARIANT}
    for release in RELEASES:
        assert "unknown field" in ask(release, "format_data", "parse_lock", old)["error"]


def test_a_broken_new_format_entry_says_what_kernels_refused() -> None:
    broken = json.dumps([{"dependency": {"repo-id": "org/relu", "version": 1}, "lock": {"commit": "xyz"}}])
    with pytest.raises(InvalidLockfile, match=r"entry 0 \(org/relu\): lock.commit 'xyz' is not a git commit id"):
        parse_lockfile(broken)


@pytest.mark.parametrize("name", [
    "torch214-cxx11-cu130-x86_64-linux", "torch-stable-abi210-cu130-aarch64-linux", "tvm-ffi01-cu130-x86_64-linux",
    "torch29-cxx98-rocm64-x86_64-linux", "torch-cuda", "torch-cpu", "torch-universal", "torch213-cxx11-cpu-x86_64-linux",
    "torch212-cxx11-xpu20252-x86_64-linux", "torch210-metal-aarch64-darwin",
])
def test_variant_names_parse_to_the_same_string_as_kernels(name: str) -> None:
    (theirs,) = ask("0.17.2", "format_data", "variant_strs", [name])  # the legacy grammar, as 0.17.2 reads it
    try:
        ours: str | None = str(Variant.parse(name))
    except InvalidVariantName:
        ours = None
    assert ours == theirs, (name, ours, theirs)
