"""tools/kernelwheel/index/torch_minors.json, the torch minors released so far: read and checked here, and compared
with PyPI's torch releases by the upstream canary (``-m torch_release`` with ``TORCH_RELEASES`` set to the versions
PyPI lists, .github/workflows/upstream-canary.yml)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from packaging.version import Version

from kernelwheel.index import torch_minors
from kernelwheel.index.torch_minors import minor_version, minors_of_releases, parse_torch_minors, released_torch_minors

DATA = Path(torch_minors.__file__).with_name(torch_minors.DATA_FILE)
SHOWN = "tools/kernelwheel/index/torch_minors.json"


def test_the_file_lists_every_minor_from_2_0_on_in_order() -> None:
    minors = released_torch_minors()
    assert minors == parse_torch_minors(json.loads(DATA.read_text(encoding="utf-8")))
    assert minors[0] == Version("2.0") and minors[-1] >= Version("2.15")  # 2.15.0 was on PyPI when the file was made
    for before, after in zip(minors, minors[1:]):
        assert (after.major, after.minor) in ((before.major, before.minor + 1), (before.major + 1, 0)), (before, after)


@pytest.mark.parametrize(("value", "problem"), [
    ({"released": ["2.0"]}, 'expected a non-empty list of torch minors such as ["2.0", "2.1"]'),
    ([], 'expected a non-empty list of torch minors such as ["2.0", "2.1"]'),
    (["2.0", 2.1], 'expected a non-empty list of torch minors such as ["2.0", "2.1"]'),
    (["2.0", "2.1.0"], "'2.1.0' is not a torch minor X.Y"),
    (["2.0", "2.x"], "'2.x' is not a torch minor X.Y"),
    (["2.1", "2.0"], "expected the minors in ascending order, each once"),
    (["2.0", "2.0"], "expected the minors in ascending order, each once"),
])
def test_a_bad_file_says_what_is_wrong(value: object, problem: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_torch_minors(value)
    assert str(caught.value) == f"torch_minors.json: {problem}"


@pytest.mark.parametrize(("text", "minor"), [("2.14", "2.14"), ("3.0", "3.0"), ("2", None), ("2.14.1", None),
                                             ("2.14rc1", None), ("2.14+cu130", None), ("2.x", None), ("", None)])
def test_minor_version(text: str, minor: str | None) -> None:
    assert minor_version(text) == (Version(minor) if minor else None)


def test_the_minors_of_an_index_s_versions() -> None:
    versions = ["1.13.1", "2.0.0", "2.0.1", "2.10.0", "2.1.0", "2.16.0rc1", "2.17.0.dev20270101", "junk", "2.11.0.post1"]
    assert minors_of_releases(versions, Version("2.0")) == (Version("2.0"), Version("2.1"), Version("2.10"),
                                                            Version("2.11"))
    assert minors_of_releases(versions, Version("2.5")) == (Version("2.10"), Version("2.11"))
    assert minors_of_releases([], Version("2.0")) == ()


@pytest.mark.torch_release
@pytest.mark.skipif("TORCH_RELEASES" not in os.environ,
                    reason="the upstream canary sets TORCH_RELEASES to the torch versions PyPI lists")
def test_the_file_lists_the_minors_pypi_has_released() -> None:
    releases = os.environ["TORCH_RELEASES"]
    assert releases.strip(), "TORCH_RELEASES is empty; expected PyPI's torch versions, separated by spaces"
    ours = released_torch_minors()
    pypis = minors_of_releases(releases.split(), since=ours[0])
    missing = [str(m) for m in pypis if m not in ours]
    extra = [str(m) for m in ours if m not in pypis]
    assert not missing, (f"torch {', '.join(missing)} is released on PyPI: add {', '.join(map(json.dumps, missing))} "
                         f"to {SHOWN} so that kernelwheel index writes its sub-index")
    assert not extra, f"{SHOWN} lists {', '.join(extra)}, which PyPI has no final release of"
