"""tools.kernelwheel.digests: the metadata.json digest make_digest writes is the one verify_digest checks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tools.kernelwheel.digests import make_digest, verify_digest
from tools.kernelwheel.errors import DigestMismatch, InvalidVariant
from tools.kernelwheel.layout import collect_files


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
