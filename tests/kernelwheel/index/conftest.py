"""Fixtures of the index tests: a wheelhouse of stand-in builds for the writer (``wheelhouse``: img2gray-cu130 for
torch 2.13 and 2.14, and a stable-ABI build for torch >= 2.10); for the install tests a stand-in index of three
img2gray-cu130 builds (``simple``: 0.1.0 for torch 2.13 and 2.14, and a newer 0.2.0 for torch 2.13), and that index
served over http to the user reader:pw (``served``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelwheel.index.writer import write_index
from tests.helpers import standin_wheels as standin
from tests.helpers.index_servers import AuthHandler, serve


@pytest.fixture
def wheelhouse(tmp_path: Path) -> Path:
    house = tmp_path / "wheelhouse"
    standin.write_standin(house, torch="2.13")
    standin.write_standin(house, torch="2.14")
    standin.write_standin(house, torch=None, stable_abi_floor="2.10", distribution="img2gray-stable-cu130")
    return house


@pytest.fixture
def simple(tmp_path: Path) -> Path:
    house = tmp_path / "wheelhouse"
    standin.write_standin(house, torch="2.13")
    standin.write_standin(house, torch="2.14")
    standin.write_standin(house, torch="2.13", base_version="0.2.0")  # newer release, older torch: the trap
    write_index(house)
    return house / "simple"


@pytest.fixture
def served(simple: Path) -> Iterator[str]:
    with serve(simple.parent, AuthHandler) as host:
        yield host
