"""Tests for tools/kernelwheel/publish/upload.py: what is checked before twine runs (the upload itself, against a real
pypiserver, is in tests/cli/test_upload.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernelwheel.io.errors import InvalidIndexUrl, InvalidWheel, PublishFailed
from kernelwheel.publish.upload import check_wheels, twine_upload_argv, upload
from kernelwheel.wheels.variant_wheels import write_variant_wheel
from tests.helpers import standin_wheels as standin


def test_good_wheels_pass_and_every_problem_is_listed_at_once(tmp_path: Path) -> None:
    good = standin.write_standin(tmp_path, torch="2.14")
    assert [w.filename for w in check_wheels([good])] == [good.name]
    twin = tmp_path / "twin" / good.name.replace("img2gray_cu130", "IMG2GRAY_cu130")
    twin.parent.mkdir()
    twin.write_bytes(good.read_bytes())
    junk = tmp_path / "junk-1.0-py3-none-any.whl"
    junk.write_bytes(b"junk")
    fifo = tmp_path / "fifo-1.0-py3-none-any.whl"
    os.mkfifo(fifo)
    with pytest.raises(InvalidWheel) as caught:
        check_wheels([good, junk, tmp_path / "missing-1.0-py3-none-any.whl", fifo, tmp_path / "notes.txt", twin])
    lines = str(caught.value).splitlines()
    assert lines[0] == "refusing to upload, nothing was sent:"
    assert lines[1:] == [
        "  junk-1.0-py3-none-any.whl: not a readable wheel (zip archive): zipfile.BadZipFile: File is not a zip file",
        f"  {tmp_path / 'missing-1.0-py3-none-any.whl'}: no such file",
        f"  {fifo}: not a regular file (a FIFO)",
        f"  {tmp_path / 'notes.txt'}: not a .whl file",
        f"  {twin.name}, {good.name}: these names normalise to the same wheel (img2gray-cu130 0.1.0+torch2.14 "
        "cp39-abi3-manylinux_2_28_x86_64, PEP 503/427), so an installer would take any one of them; keep one",
    ]


def test_a_variant_wheel_is_refused(tmp_path: Path) -> None:
    good = standin.write_standin(tmp_path, torch=None, stable_abi_floor="2.10")
    variant = write_variant_wheel(good, tmp_path).path
    with pytest.raises(InvalidWheel) as caught:
        check_wheels([good, variant])
    assert str(caught.value).splitlines()[1] == (
        f"  {variant.name}: a variant wheel (experimental); an upload server does not serve the variants.json it "
        "needs, so uv would call it unsupported: serve it with kernelwheel index, upload only the backend-named wheels")


def test_no_wheels_is_an_error() -> None:
    with pytest.raises(InvalidWheel, match="no wheels to upload"):
        check_wheels([])


def test_the_password_is_never_an_argument(tmp_path: Path) -> None:
    wheel = standin.write_standin(tmp_path, torch="2.14")
    argv = twine_upload_argv([wheel], "http://127.0.0.1:8080/", "uploader")
    assert "--password" not in argv and "-p" not in argv
    with pytest.raises(PublishFailed, match=r"http://u:\*\*\*@127.0.0.1:8080/ carries credentials"):
        upload([wheel], "http://u:pw@127.0.0.1:8080/")
    with pytest.raises(InvalidIndexUrl, match="its scheme is file:"):
        upload([wheel], "file:///srv/packages/")
