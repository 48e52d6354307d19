"""``python -m img2gray`` (python/img2gray/__main__.py): the install check, one file conversion, and its refusals:
every bad argument is one line naming what was expected, before any work, and no output is ever half-written."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from PIL import Image

import img2gray
from img2gray.__main__ import main
from kernelwheel.wheels.naming import WheelName
from tests.conftest import stable_wheels
from tests.helpers.repo import REPO_ROOT
from tests.helpers.venvs import fresh_venv, package_farm

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


# torch itself warns at import when numpy is missing (it works without it: only .numpy() and from_numpy need it).
TORCH_NUMPY_WARNING = "UserWarning: Failed to initialize NumPy: No module named 'numpy'"


def without_torch_warning(stderr: str) -> str:
    """``stderr`` less the two lines of torch's NumPy warning, which a venv without numpy prints at ``import torch``."""
    lines = stderr.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if TORCH_NUMPY_WARNING in line:
            return "".join(lines[:i] + lines[i + 2:])
    return stderr


def run_in(venv: Path, *argv: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``argv`` with the venv's python, without the machine's pip configuration (its indexes, links and constraints)
    and without PYTHONPATH: the venv's own packages only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "PYTHONPATH"}
    return subprocess.run([str(venv / "bin" / "python"), *map(str, argv)], cwd=cwd, capture_output=True, text=True,
                          env={**env, "PIP_CONFIG_FILE": os.devnull})


@pytest.fixture(params=["stable", "classic"])
def wheel(request: pytest.FixtureRequest) -> Path:
    if request.param == "classic":
        classic: Path = request.getfixturevalue("classic_wheel")
        return classic
    wheels = stable_wheels(img2gray.build_info().backend)
    if len(wheels) != 1:
        pytest.fail(f"expected one stable-ABI wheel in wheelhouse/, found {[p.name for p in wheels]}: run `make wheel`")
    return wheels[0]


@pytest.mark.slow
@pytest.mark.needs_torch
@pytest.mark.needs_img2gray
def test_a_venv_with_only_torch_and_the_wheel_converts_once_the_cli_extra_is_installed(wheel: Path,
                                                                                      tmp_path: Path) -> None:
    """No numpy and no Pillow: the install check runs, a conversion is refused in one line naming the wheel's `cli`
    extra; with Pillow (what the extra asks for) the conversion runs, still without numpy."""
    from tools.cli.share_packages import link_closure, site_packages

    venv = fresh_venv(tmp_path / "venv", share_site_packages_of=package_farm(tmp_path / "farm", "torch"))
    installed = run_in(venv, "-m", "pip", "install", "-q", "--no-index", "--no-deps", wheel, cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr
    missing = "import importlib.util as u; print(u.find_spec('numpy'), u.find_spec('PIL'))"
    assert run_in(venv, "-c", missing, cwd=tmp_path).stdout == "None None\n"

    check = run_in(venv, "-m", "img2gray", cwd=tmp_path)
    assert check.returncode == 0 and "cpu: [76, 150, 29, 255] ok" in check.stdout, check.stderr
    assert without_torch_warning(check.stderr) == ""

    target = tmp_path / "gray.png"
    distribution = WheelName.parse(wheel.name).distribution
    refused = run_in(venv, "-m", "img2gray", PHOTO, target, cwd=tmp_path)
    assert (refused.returncode, refused.stdout) == (2, "")  # refused before the install check ran
    assert without_torch_warning(refused.stderr) == ("python -m img2gray: error: converting an image file needs "
                                                     f'Pillow, which is not installed: pip install "{distribution}[cli]"\n')
    assert not target.exists()

    with_extra = [venv, "-m", "pip", "install", "--no-index", f"{wheel}[cli]"]
    unresolved = run_in(*with_extra, cwd=tmp_path)  # no index: the extra's pillow cannot be found
    assert unresolved.returncode != 0 and "No matching distribution found for pillow" in unresolved.stderr
    link_closure("pillow", site_packages(venv))  # the running venv's Pillow, as pip would install it
    resolved = run_in(*with_extra, cwd=tmp_path)
    assert resolved.returncode == 0, resolved.stdout + resolved.stderr
    assert run_in(venv, "-c", missing, cwd=tmp_path).stdout.startswith("None ModuleSpec(name='PIL'")

    converted = run_in(venv, "-m", "img2gray", PHOTO, target, cwd=tmp_path)
    assert converted.returncode == 0 and without_torch_warning(converted.stderr) == "", converted.stderr
    assert f"{PHOTO} (451x300) -> {target} on " in converted.stdout
    assert ": identical to Pillow's convert('L')" in converted.stdout
    with Image.open(PHOTO) as photo, Image.open(target) as written:
        assert written.mode == "L" and written.tobytes() == photo.convert("RGB").convert("L").tobytes()
