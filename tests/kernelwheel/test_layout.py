"""tools.kernelwheel.layout: safe file names, the files of a variant (symlinks checked), metadata.json, the package."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tools.kernelwheel.errors import InvalidVariant
from tools.kernelwheel.layout import check_relpath, collect_files, find_package, read_metadata


@pytest.mark.parametrize("rel", ["__init__.py", "img2gray/_ops.py", "a.b/c..d", "lib/x.abi3.so"])
def test_check_relpath_accepts_plain_relative_names(rel: str) -> None:
    assert check_relpath(rel, "v") == rel


@pytest.mark.parametrize(
    ("rel", "message"),
    [
        ("/etc/passwd", "absolute path '/etc/passwd'"),
        ("C:/x.py", "absolute path 'C:/x.py'"),
        ("", "absolute path ''"),
        ("../../etc/passwd", "leaves the variant directory (path traversal)"),
        ("a/../../b", "path traversal"),
        ("pkg/..", "path traversal"),
        ("pkg/", "path traversal"),
        ("a\\b.py", "backslash or control character"),
        ("a\nb.py", "backslash or control character"),
    ],
)
def test_check_relpath_refuses(rel: str, message: str) -> None:
    with pytest.raises(InvalidVariant) as info:
        check_relpath(rel, "build/v")
    assert str(info.value).startswith("build/v: ") and message in str(info.value)


def _variant(tmp_path: Path) -> Path:
    variant = tmp_path / "v"
    (variant / "pkg").mkdir(parents=True)
    (variant / "__init__.py").write_text("")
    (variant / "pkg" / "mod.py").write_text("x = 1\n")
    return variant


def test_collect_files_lists_every_file_sorted_and_skips_bytecode_and_signature(tmp_path: Path) -> None:
    variant = _variant(tmp_path)
    (variant / "__pycache__").mkdir()
    (variant / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    (variant / "pkg" / "stale.pyc").write_bytes(b"\0")
    (variant / "metadata.json").write_text("{}")
    (variant / "metadata.json.sigstore").write_text("{}")
    (variant / "link.py").symlink_to("pkg/mod.py")  # inside the variant: allowed
    files = collect_files(variant, "v")
    assert list(files) == ["__init__.py", "link.py", "metadata.json", "pkg/mod.py"]
    assert files["pkg/mod.py"] == variant / "pkg" / "mod.py"


def test_collect_files_refuses_symlinks_leaving_the_variant(tmp_path: Path) -> None:
    variant = _variant(tmp_path)
    outside = tmp_path / "blobs" / "secret"
    outside.parent.mkdir()
    outside.write_text("secret\n")
    (variant / "secret.txt").symlink_to(outside)
    with pytest.raises(InvalidVariant, match=r"^v: secret\.txt is a symlink pointing outside the variant"):
        collect_files(variant, "v")
    # the Hub cache's blobs/ is trusted when the caller says so
    assert collect_files(variant, "v", trusted_roots=[outside.parent])["secret.txt"] == variant / "secret.txt"


def test_collect_files_refuses_dangling_links_and_symlinked_folders(tmp_path: Path) -> None:
    variant = _variant(tmp_path)
    (variant / "dangling.py").symlink_to("missing.py")
    with pytest.raises(InvalidVariant, match=r"dangling\.py is a symlink to a missing or non-regular file"):
        collect_files(variant, "v")
    os.unlink(variant / "dangling.py")
    (variant / "alias").symlink_to("pkg", target_is_directory=True)
    with pytest.raises(InvalidVariant, match=r"alias is a symlinked directory \(not allowed in a variant\)"):
        collect_files(variant, "v")


def test_read_metadata(tmp_path: Path) -> None:
    variant = _variant(tmp_path)
    assert read_metadata(collect_files(variant, "v"), "v") == {}  # none: an empty mapping, not an error
    (variant / "metadata.json").write_text(json.dumps({"name": "img2gray", "version": 1}))
    assert read_metadata(collect_files(variant, "v"), "v") == {"name": "img2gray", "version": 1}
    (variant / "metadata.json").write_text("{not json")
    with pytest.raises(InvalidVariant, match=r"^v/metadata\.json: not valid JSON"):
        read_metadata(collect_files(variant, "v"), "v")
    (variant / "metadata.json").write_text("[1, 2]")
    with pytest.raises(InvalidVariant, match=r"^v/metadata\.json: expected a JSON object"):
        read_metadata(collect_files(variant, "v"), "v")


def test_find_package_flat_layout_is_named_after_the_kernel() -> None:
    files = {"__init__.py": Path("x"), "_ops.py": Path("x")}
    assert find_package(files, {}, "img2gray", "v") == ("img2gray", "")
    assert find_package(files, {"name": "my-kernel"}, "img2gray", "v") == ("my_kernel", "")
    with pytest.raises(InvalidVariant, match=r"^v: package name '2gray' \(from the kernel name\) is not a Python"):
        find_package(files, {}, "2gray", "v")


def test_find_package_nested_layout() -> None:
    nested = {"img2gray/__init__.py": Path("x"), "img2gray/_ops.py": Path("x"), "README.md": Path("x")}
    assert find_package(nested, {}, "img2gray", "v") == ("img2gray", "img2gray/")
    assert find_package(nested, {}, "other-name", "v") == ("img2gray", "img2gray/")  # the only package
    several = {**nested, "helpers/__init__.py": Path("x")}
    assert find_package(several, {}, "img2gray", "v") == ("img2gray", "img2gray/")  # the one named after the kernel
    with pytest.raises(InvalidVariant, match=r"several packages \(helpers, img2gray\) and none is named 'other'"):
        find_package(several, {}, "other", "v")


def test_find_package_refuses_a_variant_without_one() -> None:
    files = {"lib/x.txt": Path("x"), "deep/er/__init__.py": Path("x"), "not-an-id/__init__.py": Path("x")}
    with pytest.raises(InvalidVariant, match=r"^v: no Python package \(neither v/__init__\.py"):
        find_package(files, {}, "img2gray", "v")


@pytest.mark.parametrize("rel", ["./a.py", "a/./b.py", "a//b.py"])
def test_dot_and_empty_segments_are_refused(rel: str) -> None:
    with pytest.raises(InvalidVariant, match="leaves the variant directory"):
        check_relpath(rel, "build/v")
