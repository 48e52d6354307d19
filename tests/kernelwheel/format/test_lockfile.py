"""tools.lockfile: kernels.lock parsing and the git_lfs_concat hash, checked against kernels 0.11.3 itself."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from kernelwheel.format.lockfile import (
    MAX_LOCKFILE_BYTES,
    VariantLock,
    combine,
    dump_lockfile,
    git_blob_id,
    load_lockfile,
    parse_lockfile,
    variant_hash,
    verify_variant,
)
from kernelwheel.io.errors import DigestMismatch, InvalidLockfile

SHA = "d649efb56fb249ac8f7a57fa1866728ad0c60e52"
HASH = "sha256-" + "ab" * 32


def test_parse_round_trip() -> None:
    text = json.dumps([{"repo_id": "org/relu", "sha": SHA,
                        "variants": {"torch210-cxx11-cu128-x86_64-linux": {"hash": HASH, "hash_type": "git_lfs_concat"}}}])
    locks = parse_lockfile(text)
    assert locks[0].repo_id == "org/relu" and locks[0].sha == SHA
    assert locks[0].variants["torch210-cxx11-cu128-x86_64-linux"] == VariantLock(HASH)
    assert parse_lockfile(dump_lockfile(locks)) == locks


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ("{", "not valid JSON"),
        ("{}", "expected a JSON list"),
        ('[{"repo_id": "x/y", "sha": "abc", "variants": {}}]', "40-hex-digit"),
        ('[{"repo_id": "xy", "sha": "' + SHA + '", "variants": {}}]', "org/name"),
        ('[{"sha": "' + SHA + '", "variants": {}}]', "missing repo_id"),
        ('[{"repo_id": "x/y", "sha": "' + SHA + '", "variants": {"v": {"hash": "md5-1"}}}]', "sha256-<64 hex>"),
        ('[{"repo_id": "x/y", "sha": "' + SHA + '", "variants": {"v": {"hash": "' + HASH + '", "hash_type": "nix"}}}]',
         "hash_type"),
    ],
)
def test_parse_errors(data: str, reason: str) -> None:
    with pytest.raises(InvalidLockfile, match=reason):
        parse_lockfile(data)


def _old_format(repo_id: object = "org/relu", variant: str = "torch210-cxx11-cu128-x86_64-linux") -> str:
    return json.dumps([{"repo_id": repo_id, "sha": SHA, "variants": {variant: {"hash": HASH}}}])


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 32 levels"),  # not a RecursionError
        ('[{"repo_id": "x/y", "sha": "' + SHA + '", "variants": {"v": ' + "[" * 5000 + "]" * 5000 + "}}]",
         "nested deeper"),
        ("[" + "1" * 5000 + "]", "not valid JSON: Exceeds the limit"),
        (_old_format(variant="../../etc"), "entry 0 (org/relu): variant '../../etc' is not a plain folder name"),
        (_old_format(variant=".."), "variant '..' is not a plain folder name"),
        (_old_format(variant="*"), "variant '*' is not"),  # would become the download pattern build/*/*
        (_old_format(variant="torch２１０-cxx11-cu128-x86_64-linux"), "is not a plain folder name"),
        (_old_format(repo_id="../relu"), "entry 0: repo_id: expected a Hub repository id of the form org/name, "
         "got '../relu': Repo id must use alphanumeric chars"),
        (_old_format(repo_id="org/re lu"), "got 'org/re lu': Repo id must use alphanumeric chars"),
        (_old_format(repo_id="relu"), "entry 0: repo_id: expected a Hub repository id of the form org/name, got 'relu'"),
        (_old_format(repo_id=["org/relu"]), "entry 0: repo_id must be a string, got list"),
        (json.dumps([{"dependency": {"repo-id": "../x", "version": 1}, "lock": {"commit": SHA}}]),
         "repo_id: expected a Hub repository id of the form org/name, got '../x'"),
        ('[{"repo_id": "x/y", "sha": "' + SHA + '\\n", "variants": {}}]', "40-hex-digit"),
    ],
)
def test_hostile_lock_files_are_refused_in_one_line(data: str, reason: str) -> None:
    with pytest.raises(InvalidLockfile, match=re.escape(reason)) as info:
        parse_lockfile(data)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("padding", "data", "reason"),
    [
        (0, b'[{"repo_id": "\xff"}]', "not UTF-8 (invalid start byte at byte 14)"),
        (MAX_LOCKFILE_BYTES, b"[]", f"larger than {MAX_LOCKFILE_BYTES} bytes"),
    ],
    ids=["not-utf8", "too-large"],
)
def test_load_lockfile_refuses_the_file_in_one_line(tmp_path: Path, padding: int, data: bytes, reason: str) -> None:
    path = tmp_path / "kernels.lock"
    path.write_bytes(b" " * padding + data)
    with pytest.raises(InvalidLockfile, match=f"^{re.escape(f'{path}: {reason}')}$"):
        load_lockfile(path)


def test_git_blob_id_matches_git(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_bytes(b"x = 1\n")
    out = subprocess.run(["git", "hash-object", str(f)], capture_output=True, text=True, check=True).stdout.strip()
    assert git_blob_id(f.read_bytes()) == out


def test_hash_definition(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "b.py").write_bytes(b"b")
    (tmp_path / "sub" / "a.py").write_bytes(b"a")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "b.cpython-311.pyc").write_bytes(b"junk")  # ignored
    m = hashlib.sha256()
    for path, data in sorted([(b"b.py", b"b"), (b"sub/a.py", b"a")]):
        m.update(path)
        m.update(bytes.fromhex(git_blob_id(data)))
    assert variant_hash(tmp_path) == f"sha256-{m.hexdigest()}" == combine(
        [("sub/a.py", git_blob_id(b"a")), ("b.py", git_blob_id(b"b"))])
    verify_variant(tmp_path, VariantLock(variant_hash(tmp_path)), label="x")
    with pytest.raises(DigestMismatch, match="does not match"):
        verify_variant(tmp_path, VariantLock(HASH), label="org/x build/v")


def test_hash_agrees_with_kernels_validate_kernel(flat_repo: Path, kernels_venv: Path, tmp_path: Path) -> None:
    """kernels 0.11.3's own validate_kernel() accepts our hash for an HF-cache-shaped snapshot."""
    # Build a cache-like snapshot: files are symlinks to blobs named by their git blob id.
    blobs, snap = tmp_path / "blobs", tmp_path / "snapshots" / SHA
    blobs.mkdir()
    variant = "torch213-cxx11-cpu-x86_64-linux"
    for f in sorted((flat_repo / "build" / variant).rglob("*")):
        if f.is_file():
            blob = blobs / git_blob_id(f.read_bytes())
            blob.write_bytes(f.read_bytes())
            link = snap / "build" / variant / f.relative_to(flat_repo / "build" / variant)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(blob)
    ours = variant_hash(snap / "build" / variant)
    code = ("import sys; from pathlib import Path; from kernels.utils import validate_kernel;"
            "validate_kernel(repo_path=Path(sys.argv[1]), variant=sys.argv[2], hash=sys.argv[3]); print('ok')")
    out = subprocess.run([str(kernels_venv / "bin" / "python"), "-c", code, str(snap), variant, ours],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
