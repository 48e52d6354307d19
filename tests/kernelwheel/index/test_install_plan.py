"""Tests for tools/kernelwheel/index/install_plan.py: wheel selection with reasons, sub-index choice, the torch pin, errors."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from kernelwheel.cli import install_command
from kernelwheel.index import client
from kernelwheel.index.client import Candidate
from kernelwheel.index.install_plan import choose_wheels, plan_install
from kernelwheel.index.target_environment import Environment
from kernelwheel.index.target_gpu import Gpu, GpuCheck, from_argument
from kernelwheel.io.errors import (
    DigestMismatch,
    IndexUnreachable,
    InvalidProjectName,
    InvalidWheel,
    NoCompatibleWheel,
    ToolError,
)
from kernelwheel.io.urls import redact
from kernelwheel.wheels.gpu_targets import GpuTargets
from tests.helpers.index_servers import QuietHandler, index_url, serve
from tests.helpers.peak_rss import run_with_peak_mib
from tests.helpers.repo import REPO_ROOT
from tests.helpers.servers import send_endless_body

TAGS = frozenset({"cp311-abi3-manylinux_2_28_x86_64", "cp39-abi3-manylinux_2_28_x86_64", "py3-none-any"})
T213 = "img2gray_cu130-0.1.0+torch2.13-cp39-abi3-manylinux_2_28_x86_64.whl"
T214 = "img2gray_cu130-0.1.0+torch2.14-cp39-abi3-manylinux_2_28_x86_64.whl"
NEWER_T213 = "img2gray_cu130-0.2.0+torch2.13-cp39-abi3-manylinux_2_28_x86_64.whl"
STABLE = "img2gray_cu130-0.3.0-cp39-abi3-manylinux_2_28_x86_64.whl"


def target(torch: str | None = "2.14.1", tags: frozenset[str] = TAGS) -> Environment:
    """A CUDA 13.0 torch (the stand-in wheels are img2gray-cu130 builds)."""
    return Environment("/env/bin/python", Version("3.11.7"), Version(torch) if torch else None, tags, Version("13.0"))


def test_select_keeps_the_build_for_the_installed_torch_and_says_why_not_the_others() -> None:
    candidates = [Candidate(f, f"http://x/{f}", None) for f in (T213, T214, NEWER_T213)]
    torch_of = {T213: SpecifierSet("==2.13.*"), T214: SpecifierSet("==2.14.*"), NEWER_T213: SpecifierSet("==2.13.*")}
    accepted, rejected = choose_wheels(candidates, target("2.14.1"), torch_of)
    assert [c.filename for c in accepted] == [T214]
    assert [(r.candidate.filename, r.reason) for r in rejected] == [
        (T213, "needs torch==2.13.*, not 2.14.1"),
        (NEWER_T213, "needs torch==2.13.*, not 2.14.1"),
    ]


def test_select_rejects_wheels_the_interpreter_cannot_install() -> None:
    candidate = Candidate(T214, "http://x/" + T214, None)
    accepted, rejected = choose_wheels([candidate], target(tags=frozenset({"cp311-cp311-macosx_14_0_arm64"})), {})
    assert accepted == []
    assert rejected[0].reason == "tag cp39-abi3-manylinux_2_28_x86_64 is not accepted by Python 3.11.7"


def test_select_prefers_the_highest_fitting_version_and_accepts_stable_abi_builds() -> None:
    stable = "img2gray_cu130-0.3.0-cp39-abi3-manylinux_2_28_x86_64.whl"
    candidates = [Candidate(f, f"http://x/{f}", None) for f in (T214, stable)]
    torch_of = {T214: SpecifierSet("==2.14.*"), stable: SpecifierSet(">=2.10")}
    accepted, _ = choose_wheels(candidates, target("2.15.0"), torch_of)
    assert [c.filename for c in accepted] == [stable]


def test_plan_uses_the_torch_sub_index_and_pins_the_installed_torch(simple: Path) -> None:
    plan = plan_install(simple.as_uri() + "/", "img2gray_cu130", target("2.14.1"))
    assert plan.wheel.filename == T214
    assert plan.index_url == simple.as_uri() + "/torch2.14/"
    assert plan.torch_pin == "torch==2.14.1"
    assert plan.argv == [
        "/env/bin/python", "-m", "pip", "install", "--index-url", plan.index_url, "img2gray-cu130", "torch==2.14.1",
    ]  # fmt: skip
    uv = plan_install(simple.as_uri() + "/", "img2gray-cu130", target("2.14.1"), installer="uv",
                      extra_index_urls=["https://pypi.org/simple"])  # fmt: skip
    assert uv.argv == [
        "uv", "pip", "install", "--python", "/env/bin/python", "--index-url", plan.index_url,
        "--extra-index-url", "https://pypi.org/simple", "img2gray-cu130", "torch==2.14.1",
    ]  # fmt: skip


def test_plan_falls_back_to_the_flat_index_when_it_has_no_sub_indexes(simple: Path) -> None:
    for sub in simple.glob("torch*/img2gray-cu130/index.html"):
        sub.unlink()
    plan = plan_install(simple.as_uri() + "/", "img2gray-cu130", target("2.14.1"))
    assert plan.index_url == simple.as_uri() + "/"
    assert plan.torch_pin == "torch==2.14.1"


def test_missing_torch_combination_is_a_clear_error(simple: Path) -> None:
    with pytest.raises(NoCompatibleWheel) as caught:
        plan_install(simple.as_uri() + "/", "img2gray-cu130", target("2.12.0"))
    message = str(caught.value)
    first = f"img2gray-cu130 has no wheel for torch 2.12.0 (CUDA 13.0) on Python 3.11.7 on {simple.as_uri()}/"
    assert message.splitlines()[0] == first
    assert f"  {T214}: needs torch==2.14.*, not 2.12.0" in message.splitlines()
    assert message.splitlines()[-1] == (
        "hint: this index has builds for torch 2.13, 2.14; install one of those torch versions first, or build "
        "img2gray-cu130 for torch 2.12 and add it to the index. Nothing was installed and torch was not touched."
    )


def test_unknown_project_is_a_clear_error(simple: Path) -> None:
    with pytest.raises(NoCompatibleWheel, match="the index has no page for this project"):
        plan_install(simple.as_uri() + "/", "img2gray-cu999", target())


@pytest.mark.parametrize("project", ["img2gray-cu130>=0.2", "img2gray-cu130[extra]", "img 2gray", "-img2gray", "",
                                     "\u212aernel"])  # the Kelvin sign: packaging's own check lets it through
def test_a_project_that_is_not_a_distribution_name_is_refused_before_any_request(project: str) -> None:
    # an unreachable index: had the name been let through, this would be IndexUnreachable
    with pytest.raises(InvalidProjectName, match=re.escape(f"expected a distribution name such as img2gray-cu130 "
                                                           f"(no version, extras or spaces: the wheel is chosen for "
                                                           f"the target's torch), got {project!r}")):
        plan_install("http://127.0.0.1:9/simple/", project, target())


def test_the_command_takes_a_bad_project_name_as_a_usage_error() -> None:
    result = _command("--index-url", "http://127.0.0.1:9/simple/", "img2gray-cu130==0.1.0")
    assert result.returncode == 2 and result.stdout == "", result
    assert result.stderr.splitlines()[-1] == (
        "python -m tools.cli.install_command: error: project: expected a distribution name such as img2gray-cu130 "
        "(no version, extras or spaces: the wheel is chosen for the target's torch), got 'img2gray-cu130==0.1.0'")


@pytest.mark.parametrize("seconds", ["0", "-1", "nan", "inf", "soon", "86401", "1e20"])  # 1e20: was an OverflowError
def test_the_timeout_must_be_a_positive_number_of_seconds(seconds: str) -> None:
    result = _command("--index-url", "http://127.0.0.1:9/simple/", "img2gray-cu130", "--timeout", seconds)
    assert result.returncode == 2 and result.stderr.splitlines()[-1] == (
        f"python -m tools.cli.install_command: error: argument --timeout: expected a positive number of seconds, at "
        f"most 86400 (a day), got {seconds!r}")


def test_run_with_uv_missing_is_a_usage_error_before_any_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Was a FileNotFoundError traceback from subprocess, after the plan had been made."""
    python = sys.executable
    monkeypatch.setenv("PATH", str(tmp_path))  # no uv on PATH
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))  # and none beside the interpreter
    with pytest.raises(SystemExit) as exit_info:
        install_command.main(["img2gray-cu130", "--index-url", "http://127.0.0.1:9/simple/", "--python", python,
                              "--installer", "uv", "--run"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"python -m tools.cli.install_command: error: --installer uv --run: uv is neither on PATH nor beside "
        f"{tmp_path / 'python'}; install it (pip install uv) or use --installer pip")


def test_unreachable_index_is_a_clear_error() -> None:
    with pytest.raises(IndexUnreachable, match="is the index URL right and the server running"):
        plan_install("http://127.0.0.1:9/simple/", "img2gray-cu130", target())


def test_plan_over_http_with_credentials_in_the_url(served: str) -> None:
    plan = plan_install(f"http://reader:pw@{served}/simple/", "img2gray-cu130", target("2.14.1"))
    assert plan.wheel.filename == T214
    assert plan.index_url == f"http://reader:pw@{served}/simple/torch2.14/"
    with pytest.raises(IndexUnreachable) as caught:
        plan_install(f"http://reader:wrong@{served}/simple/", "img2gray-cu130", target())
    assert "HTTP 401" in str(caught.value) and "wrong" not in str(caught.value)  # the password is not echoed


@pytest.mark.parametrize("scheme", ["file", "http"])
def test_a_metadata_file_that_does_not_match_the_page_hash_is_refused(simple: Path, scheme: str) -> None:
    # The .metadata of the newer torch-2.13 build now claims any torch >= 2.10 fits, but the page still
    # carries the hash of the real file (a stale or tampered index). Believed, 0.2.0+torch2.13 would fit
    # torch 2.14.1 and win as the highest version: exactly the torch downgrade this tool exists to prevent.
    metadata = simple.parent / (NEWER_T213 + ".metadata")
    original = metadata.read_bytes()
    assert b"Requires-Dist: torch==2.13.*\n" in original
    metadata.write_bytes(original.replace(b"Requires-Dist: torch==2.13.*", b"Requires-Dist: torch>=2.10"))
    with index_url(simple, scheme) as index:
        with pytest.raises(DigestMismatch) as caught:
            plan_install(index, "img2gray-cu130", target("2.14.1"))
        message = str(caught.value)
        url = index.replace("reader:pw@", "reader:***@").removesuffix("simple/") + NEWER_T213.replace("+", "%2B")
        assert message.startswith(f"{url}.metadata: the .metadata of {NEWER_T213} does not match the index's hash ")
        assert f"sha256 {hashlib.sha256(metadata.read_bytes()).hexdigest()}" in message
        assert f"the page says {hashlib.sha256(original).hexdigest()}" in message
        assert ":pw@" not in message

    # Control: with the page's hash updated to the tampered file, the hash check passes. Over http the lie is then
    # believed (the wheel is not downloaded to compare), so the check is what stopped it above; from a file://
    # index the wheel is at hand and its own METADATA refuses the lie (test_install_target.py).
    page = simple / "img2gray-cu130" / "index.html"
    tampered = hashlib.sha256(metadata.read_bytes()).hexdigest()
    page.write_text(page.read_text().replace(hashlib.sha256(original).hexdigest(), tampered))
    with index_url(simple, scheme) as index:
        if scheme == "file":
            with pytest.raises(InvalidWheel, match="differs from the METADATA inside"):
                plan_install(index, "img2gray-cu130", target("2.14.1"))
        else:
            assert plan_install(index, "img2gray-cu130", target("2.14.1")).wheel.filename == NEWER_T213


def _page_linking(root: Path, href: str, text: str) -> None:
    page = root / "simple" / "img2gray-cu130" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(f'<!DOCTYPE html>\n<html><body><a href="{href}">{text}</a><br></body></html>\n')


def test_a_remote_page_that_links_to_a_local_file_is_refused(simple: Path, tmp_path: Path) -> None:
    wheel = (simple.parent / T214).as_uri()
    root = tmp_path / "hostile"
    _page_linking(root, wheel, T214)
    with serve(root) as host, pytest.raises(ToolError) as caught:
        plan_install(f"http://{host}/simple/", "img2gray-cu130", target("2.14.1"))
    assert str(caught.value) == (
        f"http://{host}/simple/img2gray-cu130/ links {T214} to {wheel}: a remote index may not point at local "
        "files, refusing it"
    )
    # A file:// index linking to a local file is the user's own disk pointing at itself: still fine.
    local = client.list_candidates(root.joinpath("simple").as_uri() + "/", "img2gray-cu130")
    assert local == [Candidate(T214, wheel, None)]


@pytest.mark.needs_torch  # plans for this interpreter, whose torch decides the wheel
def test_main_prints_the_command_for_this_interpreter(simple: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert install_command.main(["--index-url", simple.as_uri() + "/", "img2gray-cu130", "--torch", "2.14.1"]) == 0
    captured = capsys.readouterr()
    assert captured.out == (
        f"{sys.executable} -m pip install --index-url {simple.as_uri()}/torch2.14/ img2gray-cu130 torch==2.14.1\n"
    )
    assert f"  skipped {NEWER_T213}: needs torch==2.13.*, not 2.14.1" in captured.err.splitlines()
    assert install_command.main(["--index-url", simple.as_uri() + "/", "img2gray-cu130", "--torch", "2.14.1",
                                 "--json", "--installer", "uv"]) == 0  # fmt: skip
    plan = json.loads(capsys.readouterr().out)
    assert plan["wheel"] == T214 and plan["torch_pin"] == "torch==2.14.1"
    assert plan["argv"][:3] == ["uv", "pip", "install"]


def test_main_reports_a_missing_combination_and_exits_1(simple: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert install_command.main(["--index-url", simple.as_uri() + "/", "img2gray-cu130", "--torch", "2.12.0"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "error: img2gray-cu130 has no wheel for torch 2.12.0" in captured.err


# ---------------------------------------------------------------------------------------------- hostile input (J)


class _RecordingHandler(QuietHandler):
    """Serves a folder and records every path asked for (on the class, per test via ``_recording``)."""

    requested: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).requested.append(self.path)
        super().do_GET()


@contextlib.contextmanager
def _recording(root: Path) -> Iterator[tuple[str, list[str]]]:
    handler = type("Recording", (_RecordingHandler,), {"requested": []})
    with serve(root, handler) as host:
        yield host, handler.requested


def _command(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m tools.cli.install_command ...`` as a user runs it (for this interpreter, torch 2.14.1)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "KERNELWHEEL_"))}
    full_env.update(PIP_CONFIG_FILE=os.devnull, **(env or {}))
    return subprocess.run([sys.executable, "-m", "tools.cli.install_command", "--torch", "2.14.1", *args],
                          capture_output=True, text=True, cwd=REPO_ROOT, env=full_env, timeout=timeout)  # fmt: skip


def _one_error(result: subprocess.CompletedProcess[str]) -> str:
    """The command failed with exit 1 and exactly one ``error:`` line, no traceback, nothing on stdout."""
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr and result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def _rewrite_page(simple: Path, old: str, new: str) -> None:
    page = simple / "img2gray-cu130" / "index.html"
    text = page.read_text()
    assert old in text
    page.write_text(text.replace(old, new))


def test_a_metadata_file_without_a_hash_on_the_page_is_never_fetched(simple: Path) -> None:
    # The page says data-core-metadata="true" (no hash) and the .metadata of the newer torch-2.13 build lies that
    # any torch fits. Unhashed, it proves nothing: the +torch2.13 label decides, and the file is not even fetched.
    metadata = simple.parent / (NEWER_T213 + ".metadata")
    metadata.write_bytes(metadata.read_bytes().replace(b"torch==2.13.*", b"torch>=2.10"))
    page = simple / "img2gray-cu130" / "index.html"
    page.write_text(re.sub(r'data-core-metadata="sha256=[0-9a-f]+" data-dist-info-metadata="sha256=[0-9a-f]+"',
                           'data-core-metadata="true"', page.read_text()))  # fmt: skip
    with _recording(simple.parent) as (host, requested):
        plan = plan_install(f"http://{host}/simple/", "img2gray-cu130", target("2.14.1"))
    assert plan.wheel.filename == T214
    assert not [path for path in requested if path.endswith(".metadata")]


def test_only_data_dist_info_metadata_is_read_as_no_metadata(simple: Path) -> None:
    """pypi-simple 1.8 reads data-core-metadata only; a page with just the older spelling gets no .metadata fetch."""
    page = simple / "img2gray-cu130" / "index.html"
    page.write_text(re.sub(r' data-core-metadata="sha256=[0-9a-f]+"', "", page.read_text()))
    assert "data-dist-info-metadata" in page.read_text() and "data-core-metadata" not in page.read_text()
    candidates = client.list_candidates(simple.as_uri() + "/", "img2gray-cu130")
    assert candidates and all(c.metadata_url is None for c in candidates)


@pytest.mark.needs_torch  # plans for this interpreter, whose torch decides the wheel
@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"\x00\xff garbage \xfe", "not core metadata (no Name and Version fields)"),
        (b"<html>login</html>", "not core metadata (no Name and Version fields)"),
        (b"Metadata-Version: 2.1\nName: other\nVersion: 0.2.0+torch2.13\nRequires-Dist: torch>=2.10\n",
         f"says other 0.2.0+torch2.13, but the file is {NEWER_T213} (img2gray-cu130 0.2.0+torch2.13)"),
        (b"Metadata-Version: 2.1\nName: img2gray-cu130\nVersion: 9.9\nRequires-Dist: torch>=2.10\n",
         f"says img2gray-cu130 9.9, but the file is {NEWER_T213}"),
    ],
)
def test_a_metadata_file_whose_hash_matches_but_is_not_the_wheels_metadata_is_refused(
    simple: Path, content: bytes, problem: str
) -> None:
    # A self-consistent hostile page: the hash on the page is the hash of the garbage it serves.
    metadata = simple.parent / (NEWER_T213 + ".metadata")
    _rewrite_page(simple, hashlib.sha256(metadata.read_bytes()).hexdigest(), hashlib.sha256(content).hexdigest())
    metadata.write_bytes(content)
    with _recording(simple.parent) as (host, _):
        result = _command("--index-url", f"http://{host}/simple/", "img2gray-cu130")
    url = f"http://{host}/{NEWER_T213.replace('+', '%2B')}.metadata"
    assert _one_error(result).startswith(f"error: {url}: {problem}")


@pytest.mark.parametrize(
    "href",
    ["FILE:///etc/hostname", "file:/etc/hostname", "ftp://127.0.0.1/x.whl", "data:,secret", "gopher://127.0.0.1/x"],
)
def test_a_remote_page_may_link_only_to_http(simple: Path, tmp_path: Path, href: str) -> None:
    root = tmp_path / "hostile"
    _page_linking(root, href, T214)
    with serve(root) as host:
        message = _one_error(_command("--index-url", f"http://{host}/simple/", "img2gray-cu130"))
    page = f"http://{host}/simple/img2gray-cu130/"
    if href.lower().startswith("file:"):
        assert message == (f"error: {page} links {T214} to file:///etc/hostname: a remote index may not "
                           "point at local files, refusing it")  # fmt: skip
    else:
        assert message.startswith(f"error: {page} links {T214} to {href}, which is not usable: its scheme is ")
        assert message.endswith("(usable here: http:, https:); refusing the page")


class _RedirectToFile(QuietHandler):
    def do_GET(self) -> None:
        self.send_response(302)
        self.send_header("Location", "file:///etc/passwd")
        self.end_headers()


def test_a_redirect_to_a_local_file_is_not_followed_and_nothing_local_is_read(tmp_path: Path) -> None:
    with serve(tmp_path, _RedirectToFile) as host:
        message = _one_error(_command("--index-url", f"http://{host}/simple/", "img2gray-cu130"))
    assert message.startswith(f"error: http://{host}/simple/img2gray-cu130/: ")
    assert "root:" not in message  # /etc/passwd's content is not quoted anywhere


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://[::1/simple/", "it cannot be parsed (Invalid IPv6 URL)"),
        ("http://127.0.0.1:99999/simple/", "it cannot be parsed (Port out of range 0-65535)"),
        ("http://127.0.0.1:abc/simple/", "it cannot be parsed (Port could not be cast to integer value as 'abc')"),
        ("http:///simple/", "it has no host"),
        ("http://a..b/simple/", "its host 'a..b' is not a valid host name"),
        ("http://exa mple.com/simple/", "it contains whitespace or a control character"),
        ("http://example.com/sim\nple/", "it contains whitespace or a control character"),
        ("http://user:p w@127.0.0.1/simple/", "it contains whitespace or a control character"),
        ("ftp://example.com/simple/", "its scheme is ftp: (usable here: http:, https:, file:)"),
        ("simple/", "its scheme is missing (usable here: http:, https:, file:)"),
        ("file://host/x/", "a file: URL must name a local path (file:///...)"),
        ("http://127.0.0.1:0/simple/", "port 0 is not a port a server listens on"),
    ],
)
def test_a_malformed_index_url_is_one_line(url: str, problem: str) -> None:
    message = _one_error(_command("--index-url", url, "img2gray-cu130"))
    shown = redact(url) if url.isprintable() else ascii(redact(url))
    assert message == (f"error: index URL {shown} is not usable: {problem}; expected http(s)://host[:port]/.../simple/ "
                       "or file:///path/to/simple/") or message.startswith(f"error: index URL {shown} is not usable: "
                                                                           f"{problem}")  # fmt: skip
    assert ":p w@" not in message


@pytest.mark.parametrize("href", ["http://[::1/x.whl", "http://a..b/" + STABLE, "http://127.0.0.1:99999/" + STABLE])
def test_a_malformed_link_on_a_page_is_one_line(tmp_path: Path, href: str) -> None:
    root = tmp_path / "hostile"
    _page_linking(root, href, STABLE)
    with serve(root) as host:
        message = _one_error(_command("--index-url", f"http://{host}/simple/", "img2gray-cu130"))
    assert message.startswith(f"error: http://{host}/simple/img2gray-cu130/")


@pytest.mark.needs_torch  # plans for this interpreter, whose torch decides the wheel
@pytest.mark.parametrize("kind", ["not a zip", "zip without METADATA"])
def test_a_served_wheel_that_is_not_a_wheel_is_one_line(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "hostile"
    _page_linking(root, f"../../{STABLE}", STABLE)  # no label, no .metadata: the wheel itself is read
    wheel = root / STABLE
    if kind == "not a zip":
        wheel.write_bytes(os.urandom(2048))
    else:
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr("img2gray/__init__.py", "")
    with serve(root) as host:
        message = _one_error(_command("--index-url", f"http://{host}/simple/", "img2gray-cu130"))
    expected = ("not a wheel (not a readable zip archive: File is not a zip file)" if kind == "not a zip"
                else "not a wheel: it has no *.dist-info/METADATA")  # fmt: skip
    assert message == f"error: http://{host}/{STABLE}: {expected}"


@contextlib.contextmanager
def _drip_server(phase: str) -> Iterator[str]:
    """A server that answers one byte every 5 s: from the status line on, or after prompt headers (the body)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            body = b"<html><body>" + b" " * 4096
            head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(body)
            if phase == "body":
                connection.sendall(head)
            for byte in (head if phase == "status line" else b"") + body:
                if stop.wait(5):
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return  # the client gave up: what the deadline is for

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()
        thread.join(10)


class _FloodHandler(QuietHandler):
    """Every page is an index page that never ends, sent as fast as the connection takes it."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        send_endless_body(self, b"<!-- " + b"x" * 65536 + b" -->", "text/html")


def test_a_page_that_never_ends_is_refused_at_4_mib_not_held_in_memory(tmp_path: Path) -> None:
    """The deadline bounds how long an index can talk; the size limit, what the command holds meanwhile."""
    with serve(tmp_path, _FloodHandler) as host:
        message = _one_error(_command("--index-url", f"http://{host}/simple/", "img2gray-cu130"))
    assert message == f"error: http://{host}/simple/img2gray-cu130/: the answer is over 4 MiB, refusing it"


def test_a_local_page_over_4_mib_is_refused_not_held_in_memory(tmp_path: Path) -> None:
    """A file:// index is read from disk, under the same limit as an http(s) answer."""
    page = tmp_path / "simple" / "img2gray-cu130" / "index.html"
    page.parent.mkdir(parents=True)
    with page.open("wb") as file:
        file.truncate((4 << 20) + 1)  # sparse: no disk used
    message = _one_error(_command("--index-url", (tmp_path / "simple").as_uri() + "/", "img2gray-cu130"))
    assert message == f"error: {page.parent.as_uri()}/: the answer is over 4 MiB, refusing it"


def _links_page(root: Path, count: int, torch: str = "2.13") -> Path:
    """``root/simple/img2gray-cu130/index.html`` listing ``count`` labelled wheels (no download needed to plan)."""
    page = root / "simple" / "img2gray-cu130" / "index.html"
    page.parent.mkdir(parents=True)
    with page.open("w") as out:
        out.write("<!DOCTYPE html><html><body>\n")
        for i in range(count):
            out.write(f'<a href="img2gray_cu130-1.{i}+torch{torch}-cp39-abi3-manylinux_2_17_x86_64.whl">x</a>\n')
        out.write("</body></html>\n")
    return page


def _command_peak_mib(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """``_command(*args)`` run under a wrapper that reports the command's peak RSS (``RUSAGE_CHILDREN``: its own
    and the target probe's, not this test process's); returns the run and that peak in MiB."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "KERNELWHEEL_"))}
    return run_with_peak_mib([sys.executable, "-m", "tools.cli.install_command", "--torch", "2.14.1", *args],
                             tmp_path / "peak-rss-kib", cwd=REPO_ROOT, env={**env, "PIP_CONFIG_FILE": os.devnull},
                             timeout=120)


def test_a_20_mb_page_of_200000_links_is_refused_within_200_mb(tmp_path: Path) -> None:
    """pypi-simple parsed it whole: the command reached 800-900 MB and took 36-54 s before the cap of 4 MiB."""
    page = _links_page(tmp_path, 200_000)
    assert page.stat().st_size > 16 << 20
    with serve(tmp_path) as host:
        run, peak = _command_peak_mib(tmp_path, "--index-url", f"http://{host}/simple/", "img2gray-cu130")
    assert _one_error(run) == f"error: http://{host}/simple/img2gray-cu130/: the answer is over 4 MiB, refusing it"
    assert peak < 200, f"peak RSS {peak:.0f} MiB"


def test_a_page_of_many_small_tags_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """Under 4 MiB but 30,000 elements: parsing holds a few kB per element, whatever its size in bytes."""
    page = tmp_path / "simple" / "img2gray-cu130" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_bytes(b"<a>" * 30_000)
    with serve(tmp_path) as host:
        run, peak = _command_peak_mib(tmp_path, "--index-url", f"http://{host}/simple/", "img2gray-cu130")
    assert _one_error(run) == (f"error: http://{host}/simple/img2gray-cu130/: the page holds 30000 tags or JSON "
                               "objects, more than the 24000 (about 8000 wheels) this tool reads; refusing it")
    local = _one_error(_command("--index-url", (tmp_path / "simple").as_uri() + "/", "img2gray-cu130"))
    assert local.endswith("the page holds 30000 tags or JSON objects, more than the 24000 (about 8000 wheels) this "
                          "tool reads; refusing it")
    assert peak < 200, f"peak RSS {peak:.0f} MiB"


@pytest.mark.needs_torch  # plans for this interpreter, whose torch decides the wheel
def test_a_page_just_under_the_element_limit_is_planned_within_200_mb(tmp_path: Path) -> None:
    """A page just under the element limit (two tags a link) is read and planned, in bounded memory."""
    _links_page(tmp_path, 11_900, torch="2.14")
    with serve(tmp_path) as host:
        run, peak = _command_peak_mib(tmp_path, "--index-url", f"http://{host}/simple/", "img2gray-cu130")
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    assert "img2gray_cu130-1.11899+torch2.14-cp39-abi3-manylinux_2_17_x86_64.whl" in run.stderr
    assert peak < 200, f"peak RSS {peak:.0f} MiB"


@pytest.mark.parametrize(("make", "kind"), [(os.mkfifo, "a FIFO"),
                                            (lambda path: path.symlink_to("/dev/zero"), "a character device")])
def test_a_local_page_that_is_not_a_regular_file_is_refused_before_reading(
        tmp_path: Path, make: Callable[[Path], object], kind: str) -> None:
    """open() of a FIFO waits for a writer; /dev/zero never ends."""
    page = tmp_path / "simple" / "img2gray-cu130" / "index.html"
    page.parent.mkdir(parents=True)
    make(page)
    message = _one_error(_command("--index-url", (tmp_path / "simple").as_uri() + "/", "img2gray-cu130"))
    assert message == f"error: {page.parent.as_uri()}/: not a regular file ({kind})"


@pytest.mark.parametrize("phase", ["status line", "body"])
def test_a_server_dripping_one_byte_every_5_s_ends_at_the_deadline(phase: str) -> None:
    with _drip_server(phase) as host:
        started = time.monotonic()
        result = _command("--index-url", f"http://{host}/simple/", "img2gray-cu130", "--timeout", "4", timeout=80)
        elapsed = time.monotonic() - started
    assert _one_error(result) == (
        f"error: http://{host}/simple/: no complete answer within 4 s (the deadline for reading the index, "
        "--timeout); the server is too slow or is holding the connection open. Nothing was installed"
    )
    # Functional, not a speed check: without the deadline this runs for hours (30 s per read never trips).
    assert elapsed < 60


# --------------------------------------------------------------------------------------------------- the target's GPU


def test_select_leaves_out_a_wheel_the_gpu_cannot_run() -> None:
    hopper = GpuTargets.of(["8.0", "9.0"])
    candidates = [Candidate(f, f"http://x/{f}", None) for f in (STABLE, T214)]
    gpu_of = {STABLE: hopper, T214: None}  # the older build records no targets: not checked
    torch_of = {STABLE: SpecifierSet(">=2.10"), T214: SpecifierSet("==2.14.*")}
    blackwell = GpuCheck((Gpu("NVIDIA GeForce RTX 5090", (12, 0)),), "nvidia-smi")
    accepted, rejected = choose_wheels(candidates, target("2.14.1"), torch_of, blackwell, gpu_of)
    assert [c.filename for c in accepted] == [T214]
    assert [(r.candidate.filename, r.reason, r.gpu) for r in rejected] == [(STABLE, (
        "NVIDIA GeForce RTX 5090 (CUDA capability 12.0) runs none of its GPU code: CUDA SASS 8.0, 9.0; CUDA PTX none; "
        "ROCm none (SASS runs on the same major with an equal or newer minor, PTX at or above its version)"), True)]
    accepted, _ = choose_wheels(candidates, target("2.14.1"), torch_of, from_argument("9.0"), gpu_of)
    assert [c.filename for c in accepted] == [STABLE, T214]


@pytest.fixture(scope="module")
def gpu_index(tmp_path_factory: pytest.TempPathFactory, so_cache: Path) -> Path:
    """An index holding the wheel hub2wheel wrote from a CUDA variant whose library nvcc built for SASS 8.0, 9.0
    and PTX 9.0."""
    from kernelwheel.cli import hub2wheel
    from kernelwheel.index.writer import write_index
    from tests.helpers import fatbins

    root = tmp_path_factory.mktemp("gpu-index")
    library = fatbins.built(tmp_path_factory)["sass80_90_ptx90"]
    repo = fatbins.cuda_variant_repo(root, so_cache, library, ["8.0", "9.0+PTX"])
    assert hub2wheel.main([str(repo), "--out", str(root / "house")]) == 0
    write_index(root / "house")
    return root / "house" / "simple"


def _probe_answer(folder: Path) -> str:
    """A stand-in interpreter answering the target probe: torch 2.14.1 for CUDA 13.0 on this machine's tags."""
    from packaging import tags

    answer = {"torch": "2.14.1", "cuda": "13.0", "rocm": None, "python": "3.11.7",
              "tags": [str(t) for t in tags.sys_tags()], "installed": [], "markers": {}}
    python = folder / "python"
    python.write_text(f"#!/bin/sh\nprintf '%s\\n' '{json.dumps(answer)}'\n")  # a builtin: no PATH needed
    python.chmod(0o755)
    return str(python)


def test_install_command_checks_the_gpu(gpu_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """--gpu-arch 12.0: SASS 8.0/9.0 cannot run there, but PTX 9.0 can; a build holding no PTX is refused in one
    line naming the GPU and its targets. Without nvidia-smi and --gpu-arch, --json says the GPU was not checked."""
    python = _probe_answer(tmp_path)
    index = gpu_index.as_uri() + "/"
    assert install_command.main(["gpukernel-cu130", "--index-url", index, "--python", python, "--gpu-arch", "12.0",
                                 "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["gpu"] == {"checked": True, "source": "--gpu-arch", "reason": None,
                           "gpus": [{"name": "the GPU named by --gpu-arch", "compute_capability": "12.0"}]}
    assert plan["gpu_targets"] == {"cuda_sass": ["8.0", "9.0"], "cuda_ptx": ["9.0"], "rocm": []}
    assert install_command.main(["gpukernel-cu130", "--index-url", index, "--python", python, "--gpu-arch", "8.6"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert ("the GPU named by --gpu-arch (CUDA capability 8.6) runs its GPU code (CUDA SASS 8.0, 9.0; CUDA PTX 9.0; "
            "ROCm none)") in err  # Ampere's 8.0 SASS runs on 8.6
    assert install_command.main(["gpukernel-cu130", "--index-url", index, "--python", python, "--gpu-arch", "7.5"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert ("the GPU named by --gpu-arch (CUDA capability 7.5) runs none of its GPU code: CUDA SASS 8.0, 9.0; CUDA "
            "PTX 9.0; ROCm none") in err
    assert "build it with SASS or PTX for capability 7.5" in err
    monkeypatch.setenv("PATH", str(tmp_path))
    assert install_command.main(["gpukernel-cu130", "--index-url", index, "--python", python, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["gpu"]["checked"] is False and "nvidia-smi is not on PATH" in plan["gpu"]["reason"]
