"""``python -m img2gray`` (python/img2gray/__main__.py): the install check, one file conversion, and its refusals:
every bad argument is one line naming what was expected, before any work, and no output is ever half-written."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from PIL import Image

from img2gray.__main__ import main
from tests.helpers.repo import REPO_ROOT

PHOTO = REPO_ROOT / "samples" / "chelsea.png"


def test_without_arguments_it_checks_the_install(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "img2gray::img2gray: kernels for CPU" in out and "cpu: [76, 150, 29, 255] ok" in out


@pytest.mark.parametrize("suffix", [".png", ".bmp", ".tif"])  # lossless: the file holds exactly the op's result
def test_converts_a_photo_exactly_as_pillow_does(suffix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / f"gray{suffix}"
    assert main([str(PHOTO), str(target)]) == 0
    with Image.open(PHOTO) as photo, Image.open(target) as written:
        assert written.mode == "L" and written.tobytes() == photo.convert("RGB").convert("L").tobytes()
    assert "identical to Pillow's convert('L')" in capsys.readouterr().out
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask  # as a plain open() makes it
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]


def test_an_existing_output_is_replaced(tmp_path: Path) -> None:
    target = tmp_path / "gray.png"
    target.write_bytes(b"old")
    assert main([str(PHOTO), str(target)]) == 0
    with Image.open(target) as written:
        assert written.size == (451, 300)


def test_the_longest_output_name_that_leaves_room_for_the_temporary(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    longest = tmp_path / ("g" * 241 + ".png")  # 245 bytes: the temporary beside it is 255, NAME_MAX
    assert main([str(PHOTO), str(longest)]) == 0 and longest.is_file()
    with pytest.raises(SystemExit):
        main([str(PHOTO), str(tmp_path / ("g" * 242 + ".png"))])
    assert capsys.readouterr().err.endswith(": the file name is over 245 bytes\n")


def _truncated_png(tmp_path: Path) -> Path:
    damaged = tmp_path / "truncated.png"
    damaged.write_bytes(PHOTO.read_bytes()[:5000])
    return damaged


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing image", "cannot read {tmp}/missing.png: no such file"),
        ("image is a FIFO", "cannot read {tmp}/fifo.png: not a regular file"),
        ("not an image", f"cannot read {REPO_ROOT / 'README.md'}: not an image file Pillow can open"),
        ("truncated image", "cannot read {tmp}/truncated.png: damaged or truncated image data (Truncated File Read)"),
        ("decompression bomb", "cannot read {tmp}/huge.png: Image size (180000000 pixels) exceeds limit of "
                               "178956970 pixels, could be decompression bomb DOS attack."),
        ("unknown extension", "cannot write {tmp}/gray.xyz: expected an image file name ending in .bmp, .jpg, .png, "
                              ".tif, .webp, ..., got '.xyz'"),
        ("no extension", "cannot write {tmp}/gray: expected an image file name ending in .bmp, .jpg, .png, .tif, "
                         ".webp, ..., got 'no extension'"),
        ("output is a folder", "cannot write {tmp}: it is a folder"),
        ("no such folder", "cannot write {tmp}/nowhere/gray.png: no such folder {tmp}/nowhere"),
        # found only after converting before; /sys refuses new files to root too
        ("folder takes no files", "cannot write /sys/gray.png: expected a folder that takes new files, /sys does not "
                                  "(Permission denied)"),
        ("only the image", "give both IMAGE and OUTPUT, or neither"),
    ],
)
def test_bad_arguments_are_one_line_before_any_work(case: str, message: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    image, output = str(PHOTO), str(tmp_path / "gray.png")
    if case == "missing image":
        image = str(tmp_path / "missing.png")
    elif case == "image is a FIFO":  # Pillow's open would wait for a writer
        image = str(tmp_path / "fifo.png")
        os.mkfifo(image)
    elif case == "not an image":
        image = str(REPO_ROOT / "README.md")
    elif case == "truncated image":
        image = str(_truncated_png(tmp_path))
    elif case == "decompression bomb":  # a 90 000 x 2 000 PNG of zeros: 180 M pixels, a few hundred KB on disk
        image = str(tmp_path / "huge.png")
        Image.new("1", (90_000, 2_000)).save(image)
    elif case in ("unknown extension", "no extension"):
        output = str(tmp_path / ("gray.xyz" if case == "unknown extension" else "gray"))
    elif case == "output is a folder":
        output = str(tmp_path)
    elif case == "no such folder":
        output = str(tmp_path / "nowhere" / "gray.png")
    elif case == "folder takes no files":
        output = "/sys/gray.png"
    before = sorted(tmp_path.iterdir())
    with pytest.raises(SystemExit) as exit_info:
        main([image] if case == "only the image" else [image, output])
    captured = capsys.readouterr()
    assert exit_info.value.code == 2 and captured.out == ""  # refused before the install check ran
    assert captured.err.splitlines()[-1] == f"python -m img2gray: error: {message.format(tmp=tmp_path)}"
    assert sorted(tmp_path.iterdir()) == before


def test_a_format_that_cannot_be_written_leaves_no_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "gray.bufr"  # a registered extension whose writer is a plugin Pillow does not ship
    assert main([str(PHOTO), str(target)]) == 1
    assert capsys.readouterr().err == f"python -m img2gray: error: cannot write {target}: BUFR save handler not installed\n"
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "gray.png"
    target.write_bytes(b"old")

    def disk_full(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)  # the last step: the temporary is complete, the rename fails
    assert main([str(PHOTO), str(target)]) == 1
    assert capsys.readouterr().err == f"python -m img2gray: error: cannot write {target}: [Errno 28] No space left on device\n"
    assert target.read_bytes() == b"old" and list(tmp_path.iterdir()) == [target]
