"""kernelwheel.format.digests: the metadata.json digest make_digest writes is the one verify_digest checks."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from kernelwheel.format import digests
from kernelwheel.format.digests import make_digest, verify_digest
from kernelwheel.format.variant_folder import collect_files
from kernelwheel.io.errors import DigestMismatch, InvalidVariant


def test_make_digest_is_what_verify_digest_checks(flat_repo: Path, tmp_path: Path) -> None:
    variant = tmp_path / "v"
    shutil.copytree(flat_repo / "build" / "torch-cpu", variant)
    files = collect_files(variant, "v")
    digest = make_digest(files)
    assert digest["files"] == json.loads((variant / "metadata.json").read_text())["digest"]["files"]
    assert "metadata.json" not in digest["files"] and verify_digest(files, {"digest": digest}, "v")
    (variant / "__init__.py").write_text("# changed\n")
    with pytest.raises(DigestMismatch, match=r"__init__\.py does not match its sha256 digest"):
        verify_digest(collect_files(variant, "v"), {"digest": digest}, "v")


def test_no_digest_is_reported_not_guessed(flat_repo: Path) -> None:
    files = collect_files(flat_repo / "build" / "torch-cpu", "v")
    assert verify_digest(files, {}, "v") is False


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ("unlisted", DigestMismatch, r"extra\.txt is not covered by metadata\.json's digest"),
        ("missing", DigestMismatch, r"gone\.py is listed in metadata\.json's digest but missing"),
        ("traversal", InvalidVariant, r"path '\.\./x' leaves the variant directory"),
        ("algorithm", InvalidVariant, r"digest algorithm 'md5' is not"),
        ("not-base64", InvalidVariant, r"digest of __init__\.py is not base64"),
        ("shape", InvalidVariant, r"'digest' must be"),
    ],
)
def test_verify_digest_refusals(change: str, error: type[Exception], message: str, flat_repo: Path,
                                tmp_path: Path) -> None:
    variant = tmp_path / "v"
    shutil.copytree(flat_repo / "build" / "torch-cpu", variant)
    digest = make_digest(collect_files(variant, "v"))
    if change == "unlisted":
        (variant / "extra.txt").write_text("not in the digest\n")
    elif change == "missing":
        digest["files"]["gone.py"] = digest["files"]["__init__.py"]
    elif change == "traversal":
        digest["files"]["../x"] = digest["files"]["__init__.py"]
    elif change == "algorithm":
        digest["algorithm"] = "md5"
    elif change == "not-base64":
        digest["files"]["__init__.py"] = "not base64!"
    elif change == "shape":
        digest = {"algorithm": "sha256", "files": ["__init__.py"]}
    with pytest.raises(error, match=message):
        verify_digest(collect_files(variant, "v"), {"digest": digest}, "v")


def test_sha512_and_urlsafe_base64_are_accepted(flat_repo: Path, tmp_path: Path) -> None:
    variant = tmp_path / "v"
    shutil.copytree(flat_repo / "build" / "torch-cpu", variant)
    files = collect_files(variant, "v")
    digest = make_digest(files, "sha512")
    assert digest["algorithm"] == "sha512" and verify_digest(files, {"digest": digest}, "v")
    urlsafe = {rel: value.replace("+", "-").replace("/", "_").rstrip("=") for rel, value in digest["files"].items()}
    assert verify_digest(files, {"digest": {"algorithm": "sha512", "files": urlsafe}}, "v")


def test_file_digests_kept_between_runs_only_while_the_file_is_unchanged(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digests, "_DIGESTS", {})  # this run's memory holds only what this test hashes
    blob = tmp_path / "blob.so"
    blob.write_bytes(b"\x7fELF" + bytes(range(256)) * 4096)  # 1 MiB + 4: more than one read chunk
    right = hashlib.sha256(blob.read_bytes()).digest()
    assert digests.file_digest(blob) == right
    cache = tmp_path / "assets" / "sha256.json"
    digests.save_digest_cache(cache)
    assert json.loads(cache.read_text())["entries"] == []  # changed within the last second: not kept
    time.sleep(1.1)
    digests.save_digest_cache(cache)
    entries = json.loads(cache.read_text())["entries"]
    assert [e[0] for e in entries if e[0] == str(blob.resolve())] == [str(blob.resolve())]
    # A later run (empty memory) takes the digest from the cache while the file's stat identity is the same: a
    # planted wrong digest is what it answers, which shows it did not hash the file again.
    for entry in entries:
        entry[3] = "00" * 32
    cache.write_text(json.dumps({"format": 1, "entries": entries}))
    monkeypatch.setattr(digests, "_DIGESTS", {})
    digests.load_digest_cache(cache)
    assert digests.file_digest(blob) == bytes(32)
    # Any write changes the ctime (even with size and mtime put back): hashed again, right again.
    stat = blob.stat()
    with blob.open("r+b") as fh:
        fh.write(b"\x7fELF")
    os.utime(blob, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert digests.file_digest(blob) == right
    monkeypatch.setattr(digests, "_DIGESTS", {})
    cache.write_text("{not json")
    digests.load_digest_cache(cache)  # a damaged cache is ignored
    assert digests.file_digest(blob) == right


@pytest.mark.parametrize("damage", [b"[" * 100_000 + b"]" * 100_000, b"[]", b"\xff\xfe", b'{"format": 1, "entries": 5}',
                                    b'{"format": 1, "entries": [[1, 2]]}', b"1" * 5000])
def test_a_damaged_digest_cache_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: bytes) -> None:
    cache = tmp_path / "sha256.json"
    cache.write_bytes(damage)  # 100,000 levels deep was a RecursionError
    monkeypatch.setattr(digests, "_DIGESTS", {})
    digests.load_digest_cache(cache)
    assert digests._DIGESTS == {}
