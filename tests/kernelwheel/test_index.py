"""Tests for tools/kernelwheel/index/: PEP 503 pages, PEP 658 files, per-torch sub-indexes, incremental and atomic updates."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from urllib.parse import unquote

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests.helpers import standin_wheels as standin
from tools.cli import index as index_cli
from tools.kernelwheel import atomic
from tools.kernelwheel.errors import InvalidWheel, ToolError
from tools.kernelwheel.index import writer
from tools.kernelwheel.index.wheels import IndexedWheel, admits_torch_minor, inspect_wheel
from tools.kernelwheel.index.writer import write_index
from tools.kernelwheel.naming import WheelName
from tools.kernelwheel.wheelfile import WheelContents, build_metadata, write_wheel

T213 = "img2gray_cu130-0.1.0+torch2.13-cp39-abi3-manylinux_2_28_x86_64.whl"
T214 = "img2gray_cu130-0.1.0+torch2.14-cp39-abi3-manylinux_2_28_x86_64.whl"
STABLE = "img2gray_stable_cu130-0.1.0-cp39-abi3-manylinux_2_28_x86_64.whl"
_LINK = re.compile(r'<a href="([^"#]+)#sha256=([0-9a-f]{64})"([^>]*)>([^<]+)</a>')


@pytest.fixture
def wheelhouse(tmp_path: Path) -> Path:
    house = tmp_path / "wheelhouse"
    standin.write_standin(house, torch="2.13")
    standin.write_standin(house, torch="2.14")
    standin.write_standin(house, torch=None, stable_abi_floor="2.10", distribution="img2gray-stable-cu130")
    return house


def links(page: Path) -> dict[str, tuple[Path, str, str]]:
    """filename → (file the href resolves to, sha256 fragment, the other attributes)."""
    found = {}
    for href, sha, attributes, text in _LINK.findall(page.read_text()):
        found[text] = ((page.parent / unquote(href)).resolve(), sha, attributes)
    return found


def test_project_page_links_every_wheel_with_its_sha256_and_metadata(wheelhouse: Path) -> None:
    write_index(wheelhouse)
    page = wheelhouse / "simple" / "img2gray-cu130" / "index.html"
    found = links(page)
    assert sorted(found) == [T213, T214]
    for filename, (target, sha, attributes) in found.items():
        wheel = wheelhouse / filename
        assert target == wheel.resolve()
        assert sha == hashlib.sha256(wheel.read_bytes()).hexdigest()
        metadata = wheel.with_name(filename + ".metadata").read_bytes()
        with zipfile.ZipFile(wheel) as archive:
            assert metadata == archive.read(WheelName.parse(filename).dist_info + "/METADATA")  # byte for byte
        digest = hashlib.sha256(metadata).hexdigest()
        assert f'data-core-metadata="sha256={digest}"' in attributes
        assert f'data-dist-info-metadata="sha256={digest}"' in attributes
        assert 'data-requires-python="&gt;=3.9"' in attributes
    assert "%2Btorch2.14" in page.read_text()  # '+' is escaped in the href
    assert '<meta name="pypi:repository-version" content="1.0">' in page.read_text()


def test_root_page_lists_projects_by_normalized_name(wheelhouse: Path) -> None:
    write_index(wheelhouse)
    root = (wheelhouse / "simple" / "index.html").read_text()
    assert re.findall(r'href="([^"]+)"', root) == ["img2gray-cu130/", "img2gray-stable-cu130/"]


def test_torch_sub_index_holds_only_builds_for_that_torch(wheelhouse: Path) -> None:
    report = write_index(wheelhouse)
    assert report.torch_indexes == ["torch2.10", "torch2.13", "torch2.14"]
    simple = wheelhouse / "simple"
    assert sorted(links(simple / "torch2.14" / "img2gray-cu130" / "index.html")) == [T214]
    assert sorted(links(simple / "torch2.13" / "img2gray-cu130" / "index.html")) == [T213]
    # A stable-ABI build (torch>=2.10) belongs to every sub-index from 2.10 on.
    for sub in ("torch2.10", "torch2.13", "torch2.14"):
        assert sorted(links(simple / sub / "img2gray-stable-cu130" / "index.html")) == [STABLE]
    assert not (simple / "torch2.10" / "img2gray-cu130").exists()
    assert re.findall(r'href="([^"]+)"', (simple / "torch2.10" / "index.html").read_text()) == [
        "img2gray-stable-cu130/"
    ]
    # The links of a sub-index page resolve to the same wheel files.
    target, _, _ = links(simple / "torch2.14" / "img2gray-cu130" / "index.html")[T214]
    assert target == (wheelhouse / T214).resolve()


def test_extra_torch_minor_gets_a_sub_index_of_stable_builds(wheelhouse: Path) -> None:
    report = write_index(wheelhouse, extra_torch=[Version("2.16")])
    assert "torch2.16" in report.torch_indexes
    sub = wheelhouse / "simple" / "torch2.16"
    assert sorted(links(sub / "img2gray-stable-cu130" / "index.html")) == [STABLE]
    assert not (sub / "img2gray-cu130").exists()


def test_rerun_without_changes_reads_and_writes_nothing(wheelhouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_index(wheelhouse)
    before = {p: p.stat().st_mtime_ns for p in wheelhouse.rglob("*") if p.is_file()}
    monkeypatch.setattr(writer, "inspect_wheel", lambda path: pytest.fail(f"{path.name} was re-read"))
    report = write_index(wheelhouse)
    assert (report.added, report.removed, report.files_written) == ([], [], 0)
    assert {p: p.stat().st_mtime_ns for p in wheelhouse.rglob("*") if p.is_file()} == before


def test_new_wheel_is_added_incrementally(wheelhouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_index(wheelhouse)
    new = standin.write_standin(wheelhouse, torch="2.15")
    seen: list[str] = []
    real = inspect_wheel

    def spy(path: Path) -> tuple[IndexedWheel, bytes]:
        seen.append(path.name)
        return real(path)

    monkeypatch.setattr(writer, "inspect_wheel", spy)
    report = write_index(wheelhouse)
    assert seen == [new.name]  # only the new wheel is opened
    assert report.added == [new.name]
    assert "torch2.15" in report.torch_indexes
    simple = wheelhouse / "simple"
    assert sorted(links(simple / "img2gray-cu130" / "index.html")) == [T213, T214, new.name]
    assert sorted(links(simple / "torch2.15" / "img2gray-cu130" / "index.html")) == [new.name]
    assert sorted(links(simple / "torch2.14" / "img2gray-cu130" / "index.html")) == [T214]


def test_removed_wheel_leaves_the_index_with_its_metadata_and_empty_sub_index(wheelhouse: Path) -> None:
    write_index(wheelhouse)
    (wheelhouse / T213).unlink()
    report = write_index(wheelhouse)
    simple = wheelhouse / "simple"
    assert report.removed == [T213]
    assert not (wheelhouse / (T213 + ".metadata")).exists()
    assert sorted(links(simple / "img2gray-cu130" / "index.html")) == [T214]
    assert not (simple / "torch2.13" / "img2gray-cu130").exists()
    # No wheel names torch 2.13 any more, so its sub-index goes (the stable build is still under 2.10 and 2.14).
    assert report.torch_indexes == ["torch2.10", "torch2.14"]
    assert not (simple / "torch2.13").exists()


def test_a_failed_update_leaves_the_previous_index_whole(wheelhouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_index(wheelhouse)
    simple = wheelhouse / "simple"
    before = {p: p.read_bytes() for p in simple.rglob("*.html")}
    standin.write_standin(wheelhouse, torch="2.15")
    real_replace = os.replace

    def failing_replace(src: str, dst: str) -> None:
        if str(dst).endswith("index.html"):
            raise OSError("disk full")
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        write_index(wheelhouse)
    monkeypatch.undo()
    assert {p: p.read_bytes() for p in simple.rglob("*.html")} == before
    assert not [p for p in wheelhouse.rglob("*.part")]
    # Every link on every page still resolves to a file with the advertised hashes.
    for page in simple.rglob("index.html"):
        for target, sha, _ in links(page).values():
            assert hashlib.sha256(target.read_bytes()).hexdigest() == sha
    assert write_index(wheelhouse).torch_indexes[-1] == "torch2.15"  # and the next run catches up


def _bad_wheel(out: Path, *, version: str, requires: str) -> Path:
    name = WheelName("img2gray-cu130", Version(version), *standin.TAGS)
    metadata = build_metadata(name, base={"requires_dist": [requires]})
    return write_wheel(WheelContents(name, metadata, {"img2gray/__init__.py": b""}), out)


def test_wheel_whose_label_contradicts_its_torch_requirement_is_refused(tmp_path: Path) -> None:
    house = tmp_path / "wheelhouse"
    standin.write_standin(house, torch="2.14")
    bad = _bad_wheel(house, version="0.1.0+torch2.13", requires="torch==2.14.*")
    with pytest.raises(InvalidWheel) as caught:
        write_index(house)
    assert f"{bad.name}: its version is labelled for torch 2.13 but it requires torch==2.14.*" in str(caught.value)
    assert not (house / "simple" / "img2gray-cu130").exists()  # nothing published


def test_every_bad_wheel_is_reported_at_once(tmp_path: Path) -> None:
    house = tmp_path / "wheelhouse"
    _bad_wheel(house, version="0.1.0+torch2.13", requires="torch==2.14.*")
    _bad_wheel(house, version="0.1.0+torch2.15", requires="torch==2.12.*")
    (house / "img2gray_cu130-0.3.0-cp39-abi3-manylinux_2_28_x86_64.whl").write_bytes(b"not a zip")
    with pytest.raises(InvalidWheel) as caught:
        write_index(house)
    assert str(caught.value).count("\n  ") == 3


def test_torch_helpers() -> None:
    assert admits_torch_minor(SpecifierSet("==2.14.*"), Version("2.14"))
    assert not admits_torch_minor(SpecifierSet("==2.14.*"), Version("2.13"))
    assert admits_torch_minor(SpecifierSet(">=2.14.1"), Version("2.14"))
    assert admits_torch_minor(SpecifierSet(">=2.10"), Version("2.15"))
    assert admits_torch_minor(None, Version("2.15"))


def test_main_prints_a_summary(wheelhouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert index_cli.main([str(wheelhouse)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"Indexed 3 wheels of 2 projects in {wheelhouse / 'simple'}/ (3 new, 0 removed, 14 files written)",
        "Per-torch indexes: simple/torch2.10/, simple/torch2.13/, simple/torch2.14/",
    ]
    assert index_cli.main([str(wheelhouse), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["version"] == 1 and summary["added"] == [] and summary["projects"] == [
        "img2gray-cu130",
        "img2gray-stable-cu130",
    ]


def test_main_reports_errors_as_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert index_cli.main([str(tmp_path / "missing")]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"error: {tmp_path / 'missing'} is not a folder; pass the folder that holds the .whl files"
    )


def test_pip_reads_the_static_index_from_disk(wheelhouse: Path, tmp_path: Path) -> None:
    """pip resolves img2gray-cu130 through the file:// sub-index (PEP 658 metadata, no torch needed)."""
    write_index(wheelhouse)
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps", "--quiet",
         "--report", str(report), "--index-url", (wheelhouse / "simple" / "torch2.14").as_uri() + "/",
         "img2gray-cu130"],
        check=True, env=env, timeout=120,
    )  # fmt: skip
    installed = json.loads(report.read_text())["install"]
    assert [(i["metadata"]["name"], i["metadata"]["version"]) for i in installed] == [
        ("img2gray-cu130", "0.1.0+torch2.14")
    ]


def test_not_a_folder_is_a_tool_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError):
        write_index(tmp_path / "nope")
