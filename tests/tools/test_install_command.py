"""Tests for tools/install_command.py: wheel selection with reasons, sub-index choice, the torch pin, errors."""

from __future__ import annotations

import base64
import functools
import http.server
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tools import index, install_command
from tools.errors import IndexUnreachable, NoCompatibleWheel
from tools.install_command import Candidate, Target, plan_install, select
from tests.tools import standin_wheels as standin


TAGS = frozenset({"cp311-abi3-manylinux_2_28_x86_64", "cp39-abi3-manylinux_2_28_x86_64", "py3-none-any"})
T213 = "img2gray_cu130-0.1.0+torch2.13-cp39-abi3-manylinux_2_28_x86_64.whl"
T214 = "img2gray_cu130-0.1.0+torch2.14-cp39-abi3-manylinux_2_28_x86_64.whl"
NEWER_T213 = "img2gray_cu130-0.2.0+torch2.13-cp39-abi3-manylinux_2_28_x86_64.whl"


def target(torch: str | None = "2.14.1", tags: frozenset[str] = TAGS) -> Target:
    return Target("/env/bin/python", Version("3.11.7"), Version(torch) if torch else None, tags)


@pytest.fixture
def simple(tmp_path: Path) -> Path:
    house = tmp_path / "wheelhouse"
    standin.write_standin(house, torch="2.13")
    standin.write_standin(house, torch="2.14")
    standin.write_standin(house, torch="2.13", base_version="0.2.0")  # newer release, older torch: the trap
    index.write_index(house)
    return house / "simple"


def test_select_keeps_the_build_for_the_installed_torch_and_says_why_not_the_others() -> None:
    candidates = [Candidate(f, f"http://x/{f}", None) for f in (T213, T214, NEWER_T213)]
    torch_of = {T213: SpecifierSet("==2.13.*"), T214: SpecifierSet("==2.14.*"), NEWER_T213: SpecifierSet("==2.13.*")}
    accepted, rejected = select(candidates, target("2.14.1"), torch_of)
    assert [c.filename for c in accepted] == [T214]
    assert [(r.candidate.filename, r.reason) for r in rejected] == [
        (T213, "needs torch==2.13.*, not 2.14.1"),
        (NEWER_T213, "needs torch==2.13.*, not 2.14.1"),
    ]


def test_select_rejects_wheels_the_interpreter_cannot_install() -> None:
    candidate = Candidate(T214, "http://x/" + T214, None)
    accepted, rejected = select([candidate], target(tags=frozenset({"cp311-cp311-macosx_14_0_arm64"})), {})
    assert accepted == []
    assert rejected[0].reason == "tag cp39-abi3-manylinux_2_28_x86_64 is not accepted by Python 3.11.7"


def test_select_prefers_the_highest_fitting_version_and_accepts_stable_abi_builds() -> None:
    stable = "img2gray_cu130-0.3.0-cp39-abi3-manylinux_2_28_x86_64.whl"
    candidates = [Candidate(f, f"http://x/{f}", None) for f in (T214, stable)]
    accepted, _ = select(candidates, target("2.15.0"), {T214: SpecifierSet("==2.14.*"), stable: SpecifierSet(">=2.10")})
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
    assert message.splitlines()[0] == f"img2gray-cu130 has no wheel for torch 2.12.0 on Python 3.11.7 on {simple.as_uri()}/"
    assert f"  {T214}: needs torch==2.14.*, not 2.12.0" in message.splitlines()
    assert message.splitlines()[-1] == (
        "hint: this index has builds for torch 2.13, 2.14; install one of those torch versions first, or build "
        "img2gray-cu130 for torch 2.12 and add it to the index. Nothing was installed and torch was not touched."
    )


def test_unknown_project_is_a_clear_error(simple: Path) -> None:
    with pytest.raises(NoCompatibleWheel, match="the index has no page for this project"):
        plan_install(simple.as_uri() + "/", "img2gray-cu999", target())


def test_unreachable_index_is_a_clear_error() -> None:
    with pytest.raises(IndexUnreachable, match="is the index URL right and the server running"):
        plan_install("http://127.0.0.1:9/simple/", "img2gray-cu130", target())


class _AuthHandler(http.server.SimpleHTTPRequestHandler):
    expected = "Basic " + base64.b64encode(b"reader:pw").decode()

    def do_GET(self) -> None:
        if self.headers.get("Authorization") != self.expected:
            self.send_error(401)
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def served(simple: Path) -> Iterator[str]:
    handler = functools.partial(_AuthHandler, directory=str(simple.parent))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_plan_over_http_with_credentials_in_the_url(served: str) -> None:
    plan = plan_install(f"http://reader:pw@{served}/simple/", "img2gray-cu130", target("2.14.1"))
    assert plan.wheel.filename == T214
    assert plan.index_url == f"http://reader:pw@{served}/simple/torch2.14/"
    with pytest.raises(IndexUnreachable) as caught:
        plan_install(f"http://reader:wrong@{served}/simple/", "img2gray-cu130", target())
    assert "HTTP 401" in str(caught.value) and "wrong" not in str(caught.value)  # the password is not echoed


def test_torch_requirement_without_pep658_metadata_comes_from_the_wheel(simple: Path) -> None:
    house = simple.parent
    stable = standin.write_standin(house, torch=None, stable_abi_floor="2.10", base_version="0.3.0")
    candidate = Candidate(stable.name, stable.as_uri(), None)
    assert install_command.torch_requirement_of(candidate) == SpecifierSet(">=2.10")
    labelled = Candidate(T213, (house / T213).as_uri(), None)
    assert install_command.torch_requirement_of(labelled) == SpecifierSet("==2.13.*")


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
    assert plan["wheel"] == T214 and plan["torch_pin"] == "torch==2.14.1" and plan["argv"][:3] == ["uv", "pip", "install"]


def test_main_reports_a_missing_combination_and_exits_1(simple: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert install_command.main(["--index-url", simple.as_uri() + "/", "img2gray-cu130", "--torch", "2.12.0"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "error: img2gray-cu130 has no wheel for torch 2.12.0" in captured.err
