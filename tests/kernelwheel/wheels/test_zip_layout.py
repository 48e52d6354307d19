"""kernelwheel.wheels.zip_layout (kernels 0.19's ``"build-layout": "zip"``), format.metadata and build_ids: the
archive unpacked with the checks a folder gets, and kernels 0.19.1's rule for two builds with one id."""

from __future__ import annotations

import json
import stat
import warnings
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from kernelwheel.format.build_ids import BuildIdentity, BuildIds, identity_of
from kernelwheel.format.metadata import backend_type, build_layout, is_known_backend
from kernelwheel.format.variant_folder import collect_files, read_metadata
from kernelwheel.io.errors import InvalidVariant
from kernelwheel.wheels import zip_layout

WHERE = "build/v"
ARCHIVE = "_k_cuda_1.zip"
META = {"name": "k", "id": "_k_cuda_1", "build-layout": "zip", "backend": {"type": "cuda"}}


def _variant(tmp_path: Path, members: dict[str, bytes] | None = None, *, infos: Sequence[zipfile.ZipInfo] = (),
             beside: dict[str, bytes] | None = None) -> Path:
    variant = tmp_path / "v"
    variant.mkdir()
    with warnings.catch_warnings(), zipfile.ZipFile(variant / ARCHIVE, "w", zipfile.ZIP_DEFLATED) as zf:
        warnings.simplefilter("ignore")  # "Duplicate name": wanted here
        for name, data in (members if members is not None else {"__init__.py": b"x = 1\n"}).items():
            zf.writestr(name, data)
        for info in infos:
            zf.writestr(info, b"data")
    for name, data in (beside or {}).items():
        (variant / name).write_bytes(data)
    (variant / "metadata.json").write_text(json.dumps(META))
    return variant


def _unpack(variant: Path, metadata: Mapping[str, object] | None = None) -> dict[str, Path | bytes]:
    files = collect_files(variant, WHERE)
    return zip_layout.unpack_variant(files, metadata or read_metadata(files, WHERE), WHERE).files


def _installed(files: Mapping[str, Path | bytes]) -> Any:
    written = files["metadata.json"]
    assert isinstance(written, bytes)
    return json.loads(written)


def test_unpacks_the_archive_beside_the_extension_modules(tmp_path: Path) -> None:
    variant = _variant(tmp_path, {"__init__.py": b"from . import _ops\n", "_ops.py": b"ops = 1\n",
                                  "sub/__init__.py": b"", "__pycache__/x.cpython-311.pyc": b"\0"},
                       beside={"_k.abi3.so": b"\x7fELF..."})
    files = _unpack(variant)
    assert sorted(files) == ["__init__.py", "_k.abi3.so", "_ops.py", "metadata.json", "sub/__init__.py"]
    assert files["_ops.py"] == b"ops = 1\n" and isinstance(files["_k.abi3.so"], Path)
    installed = _installed(files)
    assert installed["build-layout"] == "files" and "digest" not in installed  # none before: none invented


def test_installed_digest_is_recomputed_over_the_installed_files(tmp_path: Path) -> None:
    variant = _variant(tmp_path, beside={"_k.abi3.so": b"so"})
    meta = {**META, "digest": {"algorithm": "sha512", "files": {}}}
    installed = _installed(_unpack(variant, meta))
    assert installed["digest"]["algorithm"] == "sha512"
    assert sorted(installed["digest"]["files"]) == ["__init__.py", "_k.abi3.so"]  # not the archive, not metadata


def _mode(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = mode << 16
    return info


@pytest.mark.parametrize(("members", "infos", "message"), [
    ({"__init__.py": b"", "/etc/passwd": b"x"}, [], "absolute path '/etc/passwd'"),
    ({"__init__.py": b"", "../evil.py": b"x"}, [], "path traversal"),
    ({"__init__.py": b"", "a\\b.py": b"x"}, [], "backslash"),
    ({"__init__.py": b""}, [_mode("link.py", stat.S_IFLNK | 0o777)], "link.py is a symlink"),
    ({"__init__.py": b""}, [_mode("fifo", stat.S_IFIFO | 0o644)], "fifo is not a regular file"),
    ({"__init__.py": b"", "x.py": b"1"}, [zipfile.ZipInfo("x.py")], "x.py appears twice"),
    ({"__init__.py": b"", "_k.abi3.so": b"x"}, [], "_k.abi3.so appears twice"),  # also beside the archive
    ({"__init__.py": b"", "metadata.json": b"{}"}, [], "metadata.json appears twice"),
    ({"__init__.py": b"", "helper.bin": b"\x7fELF\x02\x01"}, [], "helper.bin is a compiled file inside the archive"),
    ({"ops.py": b""}, [], "no __init__.py at the archive's root"),
])
def test_refuses_hostile_archives(tmp_path: Path, members: dict[str, bytes], infos: list[zipfile.ZipInfo],
                                  message: str) -> None:
    variant = _variant(tmp_path, members, infos=infos, beside={"_k.abi3.so": b"so"})
    with pytest.raises(InvalidVariant) as info:
        _unpack(variant)
    assert str(info.value).startswith(f"{WHERE}/{ARCHIVE}: ") and message in str(info.value)
    assert "\n" not in str(info.value)


def test_refuses_a_zip_bomb_before_decompressing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    variant = _variant(tmp_path, {"__init__.py": b"\0" * 5000})
    monkeypatch.setattr(zip_layout, "MAX_UNPACKED_BYTES", 4096)
    with pytest.raises(InvalidVariant, match=r"unpacks to 5000 bytes, expected at most 4096"):
        _unpack(variant)
    monkeypatch.setattr(zip_layout, "MAX_MEMBERS", 0)
    with pytest.raises(InvalidVariant, match=r"1 members, expected at most 0"):
        _unpack(variant)


def test_refuses_a_missing_or_damaged_archive(tmp_path: Path) -> None:
    variant = _variant(tmp_path)
    (variant / ARCHIVE).write_bytes(b"not a zip")
    with pytest.raises(InvalidVariant, match=rf"^{WHERE}/{ARCHIVE}: expected a readable zip archive: "):
        _unpack(variant)
    (variant / ARCHIVE).unlink()
    with pytest.raises(InvalidVariant, match=rf"^{WHERE}: 'build-layout' is 'zip' but the variant has no {ARCHIVE}"):
        _unpack(variant)
    with pytest.raises(InvalidVariant, match="needs 'id' to be a module name"):
        _unpack(variant, {**META, "id": "../x"})


@pytest.mark.parametrize(("value", "expected"), [(None, "files"), ("files", "files"), ("zip", "zip")])
def test_build_layout(value: str | None, expected: str) -> None:
    assert build_layout({} if value is None else {"build-layout": value}, WHERE) == expected


@pytest.mark.parametrize("value", ["ZIP", "tar", 1, None])  # kernels 0.19.1's parser refuses each of these too
def test_build_layout_refuses_other_values(value: object) -> None:
    with pytest.raises(InvalidVariant, match=r"^build/v/metadata.json: 'build-layout' must be 'files' or 'zip', got"):
        build_layout({"build-layout": value}, WHERE)


def test_read_metadata_checks_build_layout(tmp_path: Path) -> None:
    (tmp_path / "metadata.json").write_text(json.dumps({"build-layout": "tar"}))
    with pytest.raises(InvalidVariant, match="'build-layout' must be"):
        read_metadata({"metadata.json": tmp_path / "metadata.json"}, WHERE)


def test_backend_types_parse_as_kernels_019_reads_them() -> None:
    assert backend_type({"backend": {"type": "agnostic"}}) is None  # 0.17.2 refused it
    assert backend_type({"backend": {"type": "quantum"}}) == "quantum" and not is_known_backend("quantum")
    assert backend_type({"backend": {"type": "rocm"}}) == "rocm" and is_known_backend("rocm")


def _identity(build_id: str, files: dict[str, str] | None, algorithm: str = "sha256") -> BuildIdentity | None:
    digest = None if files is None else {"algorithm": algorithm, "files": files}
    return identity_of({"id": build_id, **({"digest": digest} if digest else {})})


def test_same_id_rule_is_kernels_0191s() -> None:
    ids = BuildIds()
    assert ids.claim("a", _identity("_k_1", {"x.py": "AAAA"})) is None
    assert ids.claim("b", _identity("_k_1", {"x.py": "AAAA"})) is None  # the same build
    assert ids.claim("c", _identity("_k_2", {"x.py": "BBBB"})) is None  # another id
    refused = ids.claim("d", _identity("_k_1", {"x.py": "BBBB"}))
    assert refused is not None and refused.startswith("build/d: has the same id '_k_1' as build/a, but their "
                                                      "digests differ")
    assert "only one of them has a digest" in str(ids.claim("e", _identity("_k_1", None)))
    assert "digests differ" in str(ids.claim("f", _identity("_k_1", {"x.py": "AAAA"}, "sha512")))
    undigested = BuildIds()
    assert undigested.claim("a", _identity("_k_3", None)) is None
    assert undigested.claim("b", _identity("_k_3", None)) is None  # nothing to compare
