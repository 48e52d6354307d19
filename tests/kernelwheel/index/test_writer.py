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
from wheel.wheelfile import WheelFile

from kernelwheel.cli import index as index_cli
from kernelwheel.index import writer
from kernelwheel.index.indexed_wheel import IndexedWheel, admits_torch_minor, inspect_wheel
from kernelwheel.index.torch_minors import released_torch_minors
from kernelwheel.index.writer import write_index
from kernelwheel.io import atomic
from kernelwheel.io.errors import IndexWriteFailed, InvalidWheel, ToolError
from kernelwheel.wheels.naming import WheelName, torch_label
from kernelwheel.wheels.wheel_contents import WheelContents
from kernelwheel.wheels.wheel_writer import build_metadata, write_wheel
from tests.helpers import standin_wheels as standin
from tests.helpers.repo import REPO_ROOT

T213 = "img2gray_cu130-0.1.0+torch2.13-cp39-abi3-manylinux_2_28_x86_64.whl"
T214 = "img2gray_cu130-0.1.0+torch2.14-cp39-abi3-manylinux_2_28_x86_64.whl"
STABLE = "img2gray_stable_cu130-0.1.0-cp39-abi3-manylinux_2_28_x86_64.whl"
_LINK = re.compile(r'<a href="([^"#]+)#sha256=([0-9a-f]{64})"([^>]*)>([^<]+)</a>')


def released_from(first: str) -> list[str]:
    """The sub-index folders of every released torch minor (torch_minors.json) from ``first`` on."""
    return [torch_label(m) for m in released_torch_minors() if m >= Version(first)]


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
    # 2.11, 2.12 and 2.15 on: no wheel names them, but the stable build's torch>=2.10 admits them, and torch has
    # released them (torch_minors.json).
    assert report.torch_indexes == released_from("2.10")
    assert report.torch_indexes[:6] == ["torch2.10", "torch2.11", "torch2.12", "torch2.13", "torch2.14", "torch2.15"]
    simple = wheelhouse / "simple"
    assert sorted(links(simple / "torch2.14" / "img2gray-cu130" / "index.html")) == [T214]
    assert sorted(links(simple / "torch2.13" / "img2gray-cu130" / "index.html")) == [T213]
    # A stable-ABI build (torch>=2.10) belongs to every sub-index from 2.10 on.
    for sub in report.torch_indexes:
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


@pytest.mark.parametrize(("requires", "expected"), [
    ("torch>=2.10,<2.13", ["torch2.10", "torch2.11", "torch2.12"]),  # an upper bound ends the run of minors
    ("torch==2.14.*", ["torch2.14"]),  # a classic build: its own minor only
    ("torch~=2.13.0", ["torch2.13"]),
    ("torch>=2.12,!=2.13.*", [m for m in released_from("2.12") if m != "torch2.13"]),
])
def test_a_wheel_gets_the_released_minors_its_requirement_admits(tmp_path: Path, requires: str,
                                                                 expected: list[str]) -> None:
    house = tmp_path / "wheelhouse"
    _bad_wheel(house, version="0.1.0", requires=requires)
    assert write_index(house).torch_indexes == expected


def test_a_wheel_without_a_lower_bound_gets_only_the_minors_named(tmp_path: Path) -> None:
    house = tmp_path / "wheelhouse"
    _bad_wheel(house, version="0.1.0", requires="torch<2.13")
    _bad_wheel(house, version="0.2.0", requires="torch")
    assert write_index(house).torch_indexes == []
    assert write_index(house, extra_torch=[Version("2.11")]).torch_indexes == ["torch2.11"]


def test_a_hostile_requirement_gets_at_most_the_released_minors(tmp_path: Path) -> None:
    """``torch>=0`` starts at the first minor listed, not at 0.0; a wheel naming torch 2.99999999 gets that one
    sub-index, not the hundred million minors before it."""
    house = tmp_path / "wheelhouse"
    _bad_wheel(house, version="0.1.0", requires="torch>=0")
    assert write_index(house).torch_indexes == released_from("0")
    assert released_from("0")[0] == "torch2.0"
    _bad_wheel(house, version="0.2.0+torch2.99999999", requires="torch==2.99999999.*")
    report = write_index(house)
    assert report.torch_indexes == [*released_from("0"), "torch2.99999999"]
    sub = house / "simple" / "torch2.99999999" / "img2gray-cu130" / "index.html"
    assert len(links(sub)) == 2  # torch>=0 admits it too


def test_rerun_without_changes_revalidates_and_writes_nothing(wheelhouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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
    # torch2.13 stays, for the stable build (torch>=2.10) alone: every released minor from 2.10 on.
    assert report.torch_indexes == released_from("2.10")
    assert sorted(links(simple / "torch2.13" / "img2gray-stable-cu130" / "index.html")) == [STABLE]
    (wheelhouse / STABLE).unlink()
    # No wheel names or admits torch 2.13 any more, so its sub-index goes.
    assert write_index(wheelhouse).torch_indexes == ["torch2.14"]
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
    with pytest.raises(IndexWriteFailed, match="disk full; the index already in place is unchanged"):
        write_index(wheelhouse)
    monkeypatch.undo()
    assert {p: p.read_bytes() for p in simple.rglob("*.html")} == before
    assert not [p for p in wheelhouse.rglob("*.part")]
    # Every link on every page still resolves to a file with the advertised hashes.
    for page in simple.rglob("index.html"):
        for target, sha, _ in links(page).values():
            assert hashlib.sha256(target.read_bytes()).hexdigest() == sha
    write_index(wheelhouse)  # and the next run catches up
    assert (simple / "torch2.15" / "img2gray-cu130" / "index.html").is_file()


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
    subs = released_from("2.10")  # each with its root page and the stable build's page; 2.13 and 2.14 also a classic's
    written = 3 + 2 + 1 + 2 * len(subs) + 2  # .metadata files, project pages, the root page, sub-index pages
    assert out == [
        f"Indexed 3 wheels of 2 projects in {wheelhouse / 'simple'}/ (3 new, 0 removed, 3 hashed, {written} files written)",
        "Per-torch indexes: " + ", ".join(f"simple/{sub}/" for sub in subs),
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
    _pip_dry_run(wheelhouse / "simple" / "torch2.14", "img2gray-cu130", report)
    installed = json.loads(report.read_text())["install"]
    assert [(i["metadata"]["name"], i["metadata"]["version"]) for i in installed] == [
        ("img2gray-cu130", "0.1.0+torch2.14")
    ]


def _pip_dry_run(index: Path, project: str, report: Path) -> None:
    """``pip install --dry-run`` of ``project`` from the file:// index ``index`` (the machine's pip config ignored)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps", "--quiet",
         "--report", str(report), "--index-url", index.as_uri() + "/", project],
        check=True, env=env, timeout=120,
    )  # fmt: skip


def test_not_a_folder_is_a_tool_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError):
        write_index(tmp_path / "nope")


# ---------------------------------------------------------------------------------------------- hostile input (J)


def _spelled_wheel(out: Path, filename: str, *, name: str, body: str = "X = 1\n", stored: bool = False) -> Path:
    """A real wheel (wheel's own ``WheelFile`` writes RECORD) whose file and .dist-info use ``filename``'s spelling."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / filename
    with WheelFile(path, "w", compression=zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED) as wheel:
        info = wheel.dist_info_path
        version = filename.split("-")[1]
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr("pkg/__init__.py", body)
    return path


@pytest.mark.parametrize("torch", ["2", "2.14.1", "2.14rc1", "2.x", ""])
def test_torch_must_be_a_minor_version(torch: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        index_cli.main([str(tmp_path), "--torch", torch])
    assert exit_info.value.code == 2 and not (tmp_path / "simple").exists()
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"python -m tools.cli.index: error: argument --torch: expected a torch minor version X.Y (e.g. 2.14), "
        f"got {torch!r}")


def _run_index(house: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tools.cli.index", str(house)], capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=120)  # fmt: skip


def _error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The command's error: exit 1, no traceback, one ``error:`` line (plus the listed wheels below it)."""
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    return result.stderr[result.stderr.index("error: ") :].strip()


def _corrupt_deflate(wheel: Path) -> None:
    """Flip bytes inside the compressed data of the package module (headers and central directory stay valid)."""
    with zipfile.ZipFile(wheel) as archive:
        info = next(i for i in archive.infolist() if i.filename.endswith("__init__.py"))
    assert info.compress_type == zipfile.ZIP_DEFLATED
    data = bytearray(wheel.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for offset in range(start, start + min(40, info.compress_size)):
        data[offset] ^= 0xFF
    wheel.write_bytes(bytes(data))


@pytest.mark.parametrize("kind", ["corrupt deflate", "not a zip", "zip without METADATA"])
def test_an_unreadable_wheel_is_one_line_naming_it_and_the_index_is_unchanged(
    wheelhouse: Path, tmp_path: Path, kind: str
) -> None:
    write_index(wheelhouse)
    before = {p: p.read_bytes() for p in (wheelhouse / "simple").rglob("*")if p.is_file()}
    if kind == "corrupt deflate":
        bad = standin.write_standin(tmp_path / "other", torch="2.15")
        _corrupt_deflate(bad)
        bad = bad.rename(wheelhouse / bad.name)
        expected = f"{bad.name}: not a readable wheel (zip archive): zlib.error: Error -3 while decompressing data"
    elif kind == "not a zip":
        bad = wheelhouse / "junk-1.0-py3-none-any.whl"
        bad.write_bytes(os.urandom(4096))
        expected = f"{bad.name}: not a readable wheel (zip archive): zipfile.BadZipFile: File is not a zip file"
    else:
        bad = wheelhouse / "junk-1.0-py3-none-any.whl"
        with zipfile.ZipFile(bad, "w") as archive:
            archive.writestr("junk/__init__.py", "")
        expected = f"{bad.name}: cannot be read as a wheel: Missing junk-1.0.dist-info/RECORD file"
    message = _error_line(_run_index(wheelhouse))
    assert message == f"error: cannot index {wheelhouse}:\n  {expected}" or message.startswith(
        f"error: cannot index {wheelhouse}:\n  {expected}"
    )
    assert message.count("\n") == 1  # one wheel, one line
    assert {p: p.read_bytes() for p in (wheelhouse / "simple").rglob("*") if p.is_file()} == before


@pytest.mark.parametrize(
    ("state", "problem"),
    [
        ("[]", "is a JSON list, not an object"),
        ('{"version": 1, "wheels": {}, "pages": []}', "wheels is dict, not a list"),
        ('{"version": 1, "wheels": [], "pages": 5}', "pages is int, not a list"),
        ('{"version": 1, "wheels": [7], "pages": []}', "wheels[0] is int, not an object"),
        ('{"version": 1, "wheels": [], "pages": [null]}', "pages[0] is None, not one of the index's pages"),
        ("[" * 100_000, "is not JSON (RecursionError"),
        ('{"version": 1, "wheels": [{"filename": "../x.whl"}], "pages": []}', "wheels[0] has the keys ['filename']"),
    ],
)
def test_a_state_file_of_the_wrong_shape_is_a_clear_error_and_changes_nothing(
    wheelhouse: Path, state: str, problem: str
) -> None:
    write_index(wheelhouse)
    state_file = wheelhouse / "simple" / ".index-state.json"
    state_file.write_text(state)
    standin.write_standin(wheelhouse, torch="2.15")
    before = {p: p.read_bytes() for p in wheelhouse.rglob("*") if p.is_file()}
    message = _error_line(_run_index(wheelhouse))
    assert message.startswith(f"error: {state_file}: {problem}"), message
    assert message.endswith("Nothing was changed; remove the file to rebuild the index from the wheels")
    assert {p: p.read_bytes() for p in wheelhouse.rglob("*") if p.is_file()} == before
    state_file.unlink()  # the documented way out: the next run rebuilds from the wheels
    assert "torch2.15" in write_index(wheelhouse).torch_indexes


@pytest.mark.parametrize("entry", ["../../victim.txt", "ABSOLUTE", "img2gray-cu130/../../../victim.txt",
                                   "torch2.13/index.html/../../../victim.txt"])
def test_state_pages_are_never_trusted_as_paths(wheelhouse: Path, tmp_path: Path, entry: str) -> None:
    write_index(wheelhouse)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    entry = str(victim) if entry == "ABSOLUTE" else entry
    state_file = wheelhouse / "simple" / ".index-state.json"
    state = json.loads(state_file.read_text())
    state["pages"].append(entry)
    state_file.write_text(json.dumps(state))
    message = _error_line(_run_index(wheelhouse))
    assert f"is {entry!r}, not one of the index's pages" in message
    assert victim.read_text() == "keep me"


def test_a_symlinked_page_folder_leading_outside_is_refused_before_anything_is_written(
    wheelhouse: Path, tmp_path: Path
) -> None:
    write_index(wheelhouse)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "index.html").write_text("not the index's")
    sub = wheelhouse / "simple" / "torch2.14"
    for page in sub.rglob("*"):
        if page.is_file():
            page.unlink()
    for folder in sorted(sub.rglob("*"), reverse=True):
        folder.rmdir()
    sub.rmdir()
    sub.symlink_to(outside, target_is_directory=True)
    message = _error_line(_run_index(wheelhouse))
    assert message == (f"error: {sub / 'img2gray-cu130' / 'index.html'} leads to {outside / 'img2gray-cu130' / 'index.html'}"
                       f", outside {(wheelhouse / 'simple').resolve()}; refusing to write or remove it")  # fmt: skip
    assert [p.name for p in outside.rglob("*")] == ["index.html"]
    assert (outside / "index.html").read_text() == "not the index's"


def test_a_same_size_replacement_with_its_mtime_kept_is_refused_by_its_hash(tmp_path: Path) -> None:
    house = tmp_path / "wheelhouse"
    first = _spelled_wheel(house, "pkg-1.0-py3-none-any.whl", name="pkg", body="X = 1\n", stored=True)
    write_index(house)
    page = house / "simple" / "pkg" / "index.html"
    old_sha = hashlib.sha256(first.read_bytes()).hexdigest()
    assert links(page)[first.name][1] == old_sha
    second = _spelled_wheel(tmp_path / "other", "pkg-1.0-py3-none-any.whl", name="pkg", body="X = 2\n", stored=True)
    stat = first.stat()
    assert second.stat().st_size == stat.st_size and second.read_bytes() != first.read_bytes()
    first.write_bytes(second.read_bytes())
    os.utime(first, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (first.stat().st_size, first.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    # Hashes follow content, never sizes or mtimes: the replacement is seen, and refused (a published file never
    # changes, as on PyPI), the page keeping the hash of the file it published.
    with pytest.raises(InvalidWheel, match=f"{first.name}: the index already serves this file name with other bytes"):
        write_index(house)
    assert links(page)[first.name][1] == old_sha


def test_a_tampered_metadata_file_is_rewritten_from_the_wheel(wheelhouse: Path) -> None:
    write_index(wheelhouse)
    metadata = wheelhouse / (T214 + ".metadata")
    good = metadata.read_bytes()
    metadata.write_bytes(good.replace(b"torch==2.14.*", b"torch>=2.0"))
    write_index(wheelhouse)
    assert metadata.read_bytes() == good


def test_names_that_normalise_to_the_same_wheel_are_refused(tmp_path: Path) -> None:
    house = tmp_path / "wheelhouse"
    for body, spelled in enumerate(["Foo_Bar", "foo.bar", "FOO_bar"]):
        _spelled_wheel(house, f"{spelled}-1.0-py3-none-any.whl", name=spelled, body=f"X = {body}\n")
    _spelled_wheel(house, "foo_bar-2.0-py3-none-any.whl", name="foo_bar")  # another version: fine on its own
    message = _error_line(_run_index(house))
    assert message == (
        f"error: cannot index {house}:\n  FOO_bar-1.0-py3-none-any.whl, Foo_Bar-1.0-py3-none-any.whl, "
        "foo.bar-1.0-py3-none-any.whl: these names normalise to the same wheel (foo-bar 1.0 py3-none-any, "
        "PEP 503/427), so an installer would take any one of them; keep one"
    )
    assert not (house / "simple" / "foo-bar").exists()
    for spelled in ["FOO_bar", "foo.bar"]:
        (house / f"{spelled}-1.0-py3-none-any.whl").unlink()
    assert write_index(house).projects == ["foo-bar"]  # one spelling left: indexed


@pytest.mark.parametrize("name", ["fóo", "foo\u212a", "ſoo", "foo２"])
def test_a_non_ascii_project_name_is_refused(tmp_path: Path, name: str) -> None:
    house = tmp_path / "wheelhouse"
    _spelled_wheel(house, f"{name}-1.0-py3-none-any.whl", name=name)
    message = _error_line(_run_index(house))
    assert message == (
        f"error: cannot index {house}:\n  {name}-1.0-py3-none-any.whl: the project name {name!r} is not a PEP 508 "
        "name (ASCII letters, digits, '.', '_', '-'; starting and ending with a letter or digit)"
    )
    assert not (house / "simple" / name).exists() and not list((house / "simple").glob("*/index.html"))


_KILL_AT_METADATA = """
import os, signal, sys
from pathlib import Path
from kernelwheel.io import atomic
from kernelwheel.index.writer import write_index
real = os.replace
def replace(src, dst):
    if str(dst).endswith(".whl.metadata"):
        os.kill(os.getpid(), signal.SIGKILL)  # the .part is complete on disk, not yet moved into place
    real(src, dst)
atomic.os.replace = replace
write_index(Path(sys.argv[1]))
"""


def test_a_sigkilled_run_leaves_a_part_file_that_the_next_run_sweeps(wheelhouse: Path) -> None:
    killed = subprocess.run([sys.executable, "-c", _KILL_AT_METADATA, str(wheelhouse)], cwd=REPO_ROOT, timeout=120)
    assert killed.returncode == -9
    leftovers = list(wheelhouse.glob(".*.metadata.*.part"))
    assert len(leftovers) == 1 and leftovers[0].name.startswith(f".{T213}.metadata.")
    result = _run_index(wheelhouse)
    assert result.returncode == 0, result.stderr
    assert f"* Removed 1 temporaries left by an interrupted run: {leftovers[0].name}" in result.stderr
    assert not [p for p in wheelhouse.rglob("*.part")]
    for page in (wheelhouse / "simple").rglob("index.html"):
        for target, sha, _ in links(page).values():
            assert hashlib.sha256(target.read_bytes()).hexdigest() == sha


def test_a_live_writers_temporary_is_left_alone(wheelhouse: Path) -> None:
    live = wheelhouse / f".{T214}.metadata.{os.getppid()}.abcdefgh.part"  # pytest's parent: alive
    live.write_bytes(b"being written")
    assert write_index(wheelhouse).swept == []
    assert live.exists()


def test_a_symlinked_lock_file_is_not_followed(wheelhouse: Path, tmp_path: Path) -> None:
    (wheelhouse / "simple").mkdir()
    outside = tmp_path / "created-outside"
    (wheelhouse / "simple" / ".index.lock").symlink_to(outside)
    message = _error_line(_run_index(wheelhouse))
    assert message == (f"error: {wheelhouse / 'simple' / '.index.lock'}: Too many levels of symbolic links; the index "
                       "already in place is unchanged")  # fmt: skip
    assert not outside.exists()


def test_a_wheel_name_too_long_for_its_metadata_file_is_refused(tmp_path: Path) -> None:
    house = tmp_path / "wheelhouse"
    name = "a" * (255 - len("-1.0-py3-none-any.whl") - 2) + "-1.0-py3-none-any.whl"  # the .metadata name: 262 bytes
    _spelled_wheel(house, name, name="a" * (255 - len("-1.0-py3-none-any.whl") - 2))
    message = _error_line(_run_index(house))
    assert message == f"error: cannot index {house}:\n  {name}: the name is too long for its .metadata file (over 255 bytes)"
