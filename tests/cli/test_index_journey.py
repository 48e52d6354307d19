"""Issues M and P through the real commands: several builds of one version, sub-indexes for every torch minor a wheel
supports, RECORD paths that leave the wheel, a .metadata that lies, an oversized METADATA, and a target whose torch
or interpreter answers nonsense. Each bad input is one ``error:`` line (no traceback) and leaves nothing written."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import platform
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from kernelwheel.index.state import STATE_FILE
from kernelwheel.wheels.naming import WheelName
from kernelwheel.wheels.wheel_contents import WheelContents
from kernelwheel.wheels.wheel_reader import MAX_METADATA_BYTES
from kernelwheel.wheels.wheel_writer import build_metadata, write_wheel
from tests.helpers import standin_wheels as standin
from tests.helpers.peak_rss import run_with_peak_mib
from tests.helpers.repo import REPO_ROOT

ARCH = platform.machine()
PYTHON = sys.executable  # the suite's venv: torch 2.14.1


def _env() -> dict[str, str]:
    """The machine's pip configuration (local extra indexes) and the caller's PIP_*/KERNELWHEEL_* left out."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "KERNELWHEEL_"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


def _tool(module: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=REPO_ROOT,
                          env={**_env(), **(env or {})}, timeout=180)  # fmt: skip


def _one_error(result: subprocess.CompletedProcess[str]) -> str:
    """Exit 1, no traceback, exactly one ``error:`` line; returns the error from that line on."""
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    return result.stderr[result.stderr.index("error: ") :].strip()


def _wheel(out: Path, platform_tag: str, *, name: str = "tagpick", version: str = "1.0", python: str = "cp39",
           abi: str = "abi3", requires: tuple[str, ...] = (), description: str | None = None) -> Path:
    wheel_name = WheelName(name, Version(version), python, abi, platform_tag)
    metadata = build_metadata(wheel_name, requires_dist=[Requirement(r) for r in requires], description=description)
    body = f"BUILD = {platform_tag!r}\n".encode()
    return write_wheel(WheelContents(wheel_name, metadata, {f"{name}/__init__.py": body}), out)


def _pip_dry_run(index_url: str, project: str, report: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps", "--quiet", "--report",
         str(report), "--index-url", index_url, project], capture_output=True, text=True, env=_env(), timeout=180,
    )  # fmt: skip


# ------------------------------------------------------------------------------------------------- several builds


@pytest.fixture
def builds(tmp_path: Path) -> Path:
    """``tagpick 1.0`` three times: manylinux_2_24 (hub2wheel's), manylinux_2_28 (make wheel's), py3-none-any."""
    house = tmp_path / "wheelhouse"
    _wheel(house, f"manylinux_2_24_{ARCH}")
    _wheel(house, f"manylinux_2_28_{ARCH}")
    _wheel(house, "any", python="py3", abi="none")
    return house


@pytest.mark.needs_torch  # plans for this interpreter, whose torch decides the wheel
def test_install_command_announces_the_build_pip_installs(builds: Path, tmp_path: Path) -> None:
    indexed = _tool("tools.cli.index", str(builds))
    assert indexed.returncode == 0, indexed.stderr
    warnings = [line for line in indexed.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and warnings[0].startswith("warning: tagpick 1.0: "), indexed.stderr
    assert all(w.name in warnings[0] for w in builds.glob("*.whl"))
    index_url = (builds / "simple").as_uri() + "/"
    planned = _tool("tools.cli.install_command", "tagpick", "--index-url", index_url, "--python", PYTHON, "--json")
    assert planned.returncode == 0, planned.stderr
    report = tmp_path / "report.json"
    pip = _pip_dry_run(index_url, "tagpick", report)
    assert pip.returncode == 0, pip.stderr
    installed = json.loads(report.read_text())["install"][0]["download_info"]["url"].rsplit("/", 1)[-1]
    assert json.loads(planned.stdout)["wheel"] == installed == f"tagpick-1.0-cp39-abi3-manylinux_2_28_{ARCH}.whl"


def test_builds_that_no_machine_installs_alike_are_not_warned_about(tmp_path: Path) -> None:
    house = tmp_path / "wheelhouse"
    _wheel(house, f"manylinux_2_28_{ARCH}", python="cp311", abi="cp311")
    _wheel(house, f"manylinux_2_28_{ARCH}", python="cp312", abi="cp312")
    _wheel(house, "win_amd64")
    indexed = _tool("tools.cli.index", str(house))
    assert indexed.returncode == 0 and "warning:" not in indexed.stderr, indexed.stderr


def test_a_published_file_name_with_other_bytes_is_refused(builds: Path, tmp_path: Path) -> None:
    assert _tool("tools.cli.index", str(builds)).returncode == 0
    target = builds / f"tagpick-1.0-cp39-abi3-manylinux_2_28_{ARCH}.whl"
    page = (builds / "simple" / "tagpick" / "index.html").read_text()
    other = _wheel(tmp_path / "rebuilt", f"manylinux_2_28_{ARCH}", requires=("numpy",))
    target.write_bytes(other.read_bytes())
    error = _one_error(_tool("tools.cli.index", str(builds)))
    assert error.startswith(f"error: cannot index {builds}:\n  {target.name}: the index already serves this file name "
                            "with other bytes")
    assert (builds / "simple" / "tagpick" / "index.html").read_text() == page  # the index in place is unchanged


# ------------------------------------------------------------------------------------------------------ sub-indexes


def test_every_torch_minor_from_a_wheels_lower_bound_gets_a_sub_index(tmp_path: Path) -> None:
    house = tmp_path / "wheelhouse"
    standin.write_standin(house, torch="2.14")
    standin.write_standin(house, torch=None, stable_abi_floor="2.10", distribution="img2gray-stable-cu130")
    indexed = _tool("tools.cli.index", str(house), "--torch", "2.16", "--json")
    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)["torch_indexes"] == [f"torch2.{m}" for m in range(10, 17)]
    report = tmp_path / "report.json"
    # A torch 2.12 user follows "use the sub-index of your torch minor": pip finds the stable build there.
    pip = _pip_dry_run((house / "simple" / "torch2.12").as_uri() + "/", "img2gray-stable-cu130", report)
    assert pip.returncode == 0, pip.stderr
    assert json.loads(report.read_text())["install"][0]["metadata"]["name"] == "img2gray-stable-cu130"
    assert not (house / "simple" / "torch2.12" / "img2gray-cu130").exists()  # the 2.14 build is not there


# ---------------------------------------------------------------------------------------------- RECORD path escape


def _record_line(name: str, data: bytes) -> list[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, f"sha256={digest}", str(len(data))]


def _escaping_wheel(out: Path, *, member: bool) -> Path:
    """``evil-1.0-py3-none-any.whl`` whose RECORD names ``../../evil.py`` (also a member when ``member``)."""
    out.mkdir(parents=True, exist_ok=True)
    files = {"evil/__init__.py": b"X = 1\n",
             "evil-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n",
             "evil-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    evil = b"print('pwned')\n"
    rows = [_record_line(name, data) for name, data in files.items()] + [_record_line("../../evil.py", evil)]
    if member:
        files["../../evil.py"] = evil
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows([*rows, ["evil-1.0.dist-info/RECORD", "", ""]])
    files["evil-1.0.dist-info/RECORD"] = text.getvalue().encode()
    path = out / "evil-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


@pytest.mark.parametrize("member", [False, True], ids=["record-only", "record-and-member"])
@pytest.mark.parametrize("command", ["index", "upload", "verify_wheel"])
def test_a_record_entry_leaving_the_wheel_is_refused_everywhere(tmp_path: Path, member: bool, command: str) -> None:
    wheel = _escaping_wheel(tmp_path / "wheelhouse", member=member)
    args = {"index": [str(wheel.parent)], "upload": ["--check-only", str(wheel)], "verify_wheel": [str(wheel)]}
    error = _one_error(_tool(f"tools.cli.{command}", *args[command]))
    assert "'../../evil.py' leaves the wheel (path traversal)" in error
    assert not (wheel.parent / "simple" / "evil").exists()


# ------------------------------------------------------------------------------------- lying .metadata (P.4, writer)


def test_a_metadata_file_the_state_vouches_for_but_the_wheel_contradicts_is_refused(tmp_path: Path) -> None:
    house = tmp_path / "wheelhouse"
    wheel = standin.write_standin(house, torch="2.14")
    assert _tool("tools.cli.index", str(house)).returncode == 0
    metadata = wheel.with_name(wheel.name + ".metadata")
    lie = metadata.read_bytes().replace(b"torch==2.14.*", b"torch>=2.0")
    metadata.write_bytes(lie)
    state_file = house / "simple" / STATE_FILE
    state = json.loads(state_file.read_text())
    state["wheels"][0]["metadata_sha256"] = hashlib.sha256(lie).hexdigest()  # the cache vouches for the lie
    state_file.write_text(json.dumps(state))
    error = _one_error(_tool("tools.cli.index", str(house)))
    assert f"{metadata.name}: differs from the METADATA inside {wheel.name}" in error


def test_a_torch_pin_behind_a_marker_still_has_to_match_the_label(tmp_path: Path) -> None:
    house = tmp_path / "wheelhouse"
    _wheel(house, f"manylinux_2_28_{ARCH}", name="pinned", version="0.1.0+torch2.14",
           requires=("torch==2.13.*; python_version >= '3'",))
    error = _one_error(_tool("tools.cli.index", str(house)))
    assert "its version is labelled for torch 2.14 but it requires torch==2.13.*" in error


# ------------------------------------------------------------------------------------------------- METADATA size


@pytest.mark.parametrize("command", ["index", "upload"])
def test_a_metadata_over_the_cap_is_refused_before_it_is_read(tmp_path: Path, command: str) -> None:
    house = tmp_path / "wheelhouse"
    wheel = _wheel(house, "any", python="py3", abi="none", description="x" * (MAX_METADATA_BYTES + 1))
    args = [str(house)] if command == "index" else ["--check-only", str(wheel)]
    error = _one_error(_tool(f"tools.cli.{command}", *args))
    assert f"{wheel.name}: its METADATA is " in error and "bytes; expected at most 4 MiB" in error
    assert not (house / "simple" / "tagpick").exists()


def test_a_100_mb_metadata_is_refused_within_200_mb(tmp_path: Path) -> None:
    """It cost the index 1.25 GB when METADATA was read whole; its declared size is now refused before reading."""
    house = tmp_path / "wheelhouse"
    wheel = _wheel(house, "any", python="py3", abi="none", description="x" * (100 << 20))
    assert wheel.stat().st_size < 1 << 20  # the bomb compresses: it is the reader that has to be careful
    run, peak = run_with_peak_mib([sys.executable, "-m", "tools.cli.index", str(house)], tmp_path / "peak-rss-kib",
                                  cwd=REPO_ROOT, env=_env(), timeout=180)
    assert "bytes; expected at most 4 MiB" in _one_error(run)
    assert peak < 200, f"peak RSS {peak:.0f} MiB"
