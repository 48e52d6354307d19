"""kernelwheel.format.variant_folder: safe file names, the files of a variant (symlinks checked), metadata.json, the package."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelwheel.format.variant_folder import (
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    check_relpath,
    collect_files,
    find_package,
    metadata_file,
    read_metadata,
)
from kernelwheel.io.errors import InvalidVariant


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
        ("a\\b.py", "has a backslash"),
        ("a\nb.py", "holds a control character ('\\n', U+000A), which a wheel's RECORD cannot hold"),
        ("a\u2028b.py", "holds a line separator ('\\u2028', U+2028)"),  # found by fuzzing: installer 1.1.0 rejected RECORD
        ("a\u2029b.py", "a paragraph separator"),
        ("a\x85b.py", "a control character"),  # NEL: str.splitlines breaks there too
        ("a\x1cb.py", "a control character"),
        ("a\x7fb.py", "a control character"),
        ("pkg/a\udcffb.py", "holds bytes that are not UTF-8 ('\\udcff', U+DCFF)"),  # os.walk's spelling of b"\xff"
    ],
)
def test_check_relpath_refuses(rel: str, message: str) -> None:
    with pytest.raises(InvalidVariant) as info:
        check_relpath(rel, "build/v")
    assert str(info.value).startswith("build/v: ") and message in str(info.value)
    assert "\n" not in str(info.value) and str(info.value).encode("utf-8")  # one printable line


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


def test_metadata_file_is_collect_files_entry_for_that_name(tmp_path: Path) -> None:
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    (blobs / "abc").write_text("{}")
    variant = tmp_path / "v"
    variant.mkdir()
    (variant / "ops.py").write_text("")
    assert metadata_file(variant, "v") == {}  # none: as read_metadata's {} for a variant without one
    (variant / "metadata.json").symlink_to(blobs / "abc")  # the Hub cache's layout: a link into its blobs
    assert metadata_file(variant, "v", [blobs]) == {"metadata.json": variant / "metadata.json"}
    assert metadata_file(variant, "v", [blobs]) == {k: v for k, v in collect_files(variant, "v", [blobs]).items()
                                                    if k == "metadata.json"}
    with pytest.raises(InvalidVariant, match=r"^v: metadata\.json is a symlink pointing outside the variant"):
        metadata_file(variant, "v")  # the blobs folder is not trusted here
    (variant / "metadata.json").unlink()
    (variant / "metadata.json").symlink_to("missing.json")
    with pytest.raises(InvalidVariant, match=r"^v: metadata\.json is a symlink to a missing or non-regular file"):
        metadata_file(variant, "v")
    (variant / "metadata.json").unlink()
    (variant / "metadata.json").mkdir()
    with pytest.raises(InvalidVariant, match=r"^v: metadata\.json is not a regular file"):
        metadata_file(variant, "v")


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


@pytest.mark.parametrize(("name", "message"), [(b"bad\xff.txt", "not UTF-8"), ("a\u2028b.py".encode(), r"U\+2028")])
def test_collect_files_refuses_names_a_record_cannot_hold(tmp_path: Path, name: bytes, message: str) -> None:
    variant = _variant(tmp_path)
    with open(os.fsencode(variant / "pkg") + b"/" + name, "wb") as fh:  # a real file of that name on disk
        fh.write(b"x = 1\n")
    with pytest.raises(InvalidVariant, match=message) as info:
        collect_files(variant, "build/v")
    assert str(info.value).startswith("build/v: file name 'pkg/")


def _metadata(tmp_path: Path, raw: bytes | str) -> dict[str, object]:
    variant = _variant(tmp_path)
    path = variant / "metadata.json"
    path.write_bytes(raw.encode() if isinstance(raw, str) else raw)
    return read_metadata(collect_files(variant, "v"), "v")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, f"nested deeper than {MAX_METADATA_DEPTH} levels"),  # found by fuzzing: RecursionError
        ('{"backend": {"archs": ' + "[" * 5000 + "]" * 5000 + "}}", "nested deeper"),  # one field 5,000 deep
        (b'{"name": "\xff"}', "not UTF-8 (invalid start byte at byte 10)"),
        ('{"version": ' + "1" * 5000 + "}", "not valid JSON: Exceeds the limit"),  # int() digit limit: ValueError
        ("1", "expected a JSON object, got int"),
        ('{"license": {"text": "MIT"}}', "'license' must be a string, got dict {'text': 'MIT'}"),  # was dropped
        ('{"name": 5}', "'name' must be a string, got int 5"),
        ('{"version": true}', "'version' must be an integer or a version string, got bool True"),
        ('{"version": [1]}', "'version' must be an integer or a version string, got list"),
        ('{"backend": "cuda"}', "'backend' must be an object"),
        ('{"backend": {"type": 1}}', "'backend.type' must be a string"),
        ('{"backend": {"type": "cuda", "archs": [8.0]}}', "'backend.archs' must be a list of strings, got [8.0]"),
        ('{"kernels-minver": 16}', "'kernels-minver' must be a string"),
        ('{"upstream": ["x"]}', "'upstream' must be a string"),
        ('{"provenance": []}', "'provenance' must be an object"),
        ('{"provenance": {"kernel": {"commit": 1}}}', "'provenance.kernel.commit' must be a string"),
        ('{"provenance": {"kernel": {"dirty": "yes"}}}', "'provenance.kernel.dirty' must be true or false"),
    ],
)
def test_read_metadata_refuses_in_one_line(tmp_path: Path, raw: str | bytes, message: str) -> None:
    with pytest.raises(InvalidVariant) as info:
        _metadata(tmp_path, raw)
    assert str(info.value).startswith("v/metadata.json: ") and message in str(info.value)
    assert "\n" not in str(info.value) and len(str(info.value)) < 300


def test_read_metadata_size_limit_is_checked_before_parsing(tmp_path: Path) -> None:
    padding = " " * MAX_METADATA_BYTES
    with pytest.raises(InvalidVariant, match=f"larger than {MAX_METADATA_BYTES} bytes"):
        _metadata(tmp_path / "big", "{}" + padding)
    assert _metadata(tmp_path / "fits", "{}" + padding[:-2]) == {}  # exactly the limit still parses


def test_read_metadata_brackets_inside_strings_do_not_count_as_nesting(tmp_path: Path) -> None:
    deep_string = "[" * 1000 + '\\"{' * 100
    meta = _metadata(tmp_path, json.dumps({"source": deep_string, "backend": {"type": "cuda", "archs": ["9.0"]},
                                           "provenance": {"kernel": {"commit": "abc", "dirty": False}}}))
    assert meta["source"] == deep_string


# Fuzzing metadata.json (hostile-input review: RecursionError, TypeError, AttributeError escaped). Derandomized for CI.
_FUZZ = settings(max_examples=150, deadline=2000, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)
FIELDS = ["name", "id", "version", "license", "python-depends", "backend", "digest", "kernels-minver", "upstream",
          "source", "provenance", "kernel-depends"]
METADATA = st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=6)


@_FUZZ
@given(raw=st.binary(max_size=200) | st.builds(lambda o, c: (o * "[" + c * "]").encode(),
                                                st.integers(0, 200), st.integers(0, 200)))
def test_read_metadata_on_arbitrary_bytes_returns_a_dict_or_refuses_in_one_line(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "metadata.json"  # rewritten by every example
    path.write_bytes(raw)
    try:
        assert isinstance(read_metadata({"metadata.json": path}, "v"), dict)
    except InvalidVariant as exc:
        assert str(exc).startswith("v/metadata.json: ") and "\n" not in str(exc)


@_FUZZ
@given(document=METADATA)
def test_read_metadata_type_checks_every_field_or_refuses_in_one_line(tmp_path: Path,
                                                                      document: dict[str, object]) -> None:
    path = tmp_path / "metadata.json"
    path.write_text(json.dumps(document))
    try:
        meta = read_metadata({"metadata.json": path}, "v")
    except InvalidVariant as exc:
        assert str(exc).startswith("v/metadata.json: ") and "\n" not in str(exc)
        return
    for field in ("name", "id", "license", "kernels-minver", "upstream", "source"):  # what convert reads as text
        assert field not in meta or isinstance(meta[field], str)
    assert "version" not in meta or (isinstance(meta["version"], (int, str)) and not isinstance(meta["version"], bool))
    assert "backend" not in meta or meta["backend"] is None or isinstance(meta["backend"], dict)


def _nest(variant: Path, component: str, depth: int) -> Path:
    """``depth`` folders named ``component`` below ``variant`` (made relative to the last, past PATH_MAX if need
    be), with a file at the bottom; returns nothing usable as a path when it is too long, so the cwd is restored."""
    here = os.getcwd()
    try:
        os.chdir(variant)
        for _ in range(depth):
            os.mkdir(component)
            os.chdir(component)
        with open("deep.py", "w") as fh:
            fh.write("x = 1\n")
    finally:
        os.chdir(here)
    return variant


def test_collect_files_refuses_folders_nested_too_deep(tmp_path: Path) -> None:
    variant = _nest(_variant(tmp_path), "a", 100)  # os.walk on 3.11 recurses per level: 1,000 was a RecursionError
    with pytest.raises(InvalidVariant, match=r"^v: folders nested deeper than 32 levels \(a/a/a"):
        collect_files(variant, "v")


def test_collect_files_refuses_a_folder_it_cannot_list(tmp_path: Path) -> None:
    # 17 folders of 250 characters: past PATH_MAX, so listing fails (ENAMETOOLONG) even for root; os.walk used
    # to skip such a folder silently, leaving its files out of the wheel.
    variant = _nest(_variant(tmp_path), "d" * 250, 17)
    with pytest.raises(InvalidVariant, match=r"^v: 'd{250}/.*' cannot be read: File name too long"):
        collect_files(variant, "v")


def test_find_package_refuses_a_package_name_no_folder_can_hold() -> None:
    files = {"__init__.py": Path("x")}
    with pytest.raises(InvalidVariant, match=r"is 300 characters; a folder name holds at most 255"):
        find_package(files, {"name": "k" * 300}, "img2gray", "v")
