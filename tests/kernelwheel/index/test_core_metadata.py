"""kernelwheel.index.core_metadata: the torch a candidate requires, read from its checked metadata or wheel."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from kernelwheel.index import core_metadata
from kernelwheel.index.client import Candidate
from kernelwheel.io.errors import DigestMismatch, InvalidWheel
from kernelwheel.io.urls import redact
from tests.helpers import standin_wheels as standin
from tests.helpers.index_servers import index_url

T213 = "img2gray_cu130-0.1.0+torch2.13-cp39-abi3-manylinux_2_28_x86_64.whl"
STABLE = "img2gray_cu130-0.3.0-cp39-abi3-manylinux_2_28_x86_64.whl"


def test_torch_requirement_without_pep658_metadata_comes_from_the_wheel(simple: Path) -> None:
    house = simple.parent
    stable = standin.write_standin(house, torch=None, stable_abi_floor="2.10", base_version="0.3.0")
    candidate = Candidate(stable.name, stable.as_uri(), None)
    assert core_metadata.wheel_facts(candidate).torch == SpecifierSet(">=2.10")
    labelled = Candidate(T213, (house / T213).as_uri(), None)
    assert core_metadata.wheel_facts(labelled).torch == SpecifierSet("==2.13.*")


@pytest.mark.parametrize("scheme", ["file", "http"])
def test_a_wheel_fetched_as_fallback_is_checked_against_its_page_hash(simple: Path, scheme: str) -> None:
    stable = standin.write_standin(simple.parent, torch=None, stable_abi_floor="2.10", base_version="0.3.0")
    digest = hashlib.sha256(stable.read_bytes()).hexdigest()
    with index_url(simple, scheme) as index:
        url = index.removesuffix("simple/") + stable.name
        good = Candidate(stable.name, url, None, digests={"sha256": digest})
        assert core_metadata.wheel_facts(good).torch == SpecifierSet(">=2.10")
        bad = Candidate(stable.name, url, None, digests={"sha256": "0" * 64})
        with pytest.raises(DigestMismatch) as caught:
            core_metadata.wheel_facts(bad)
    expected = f"{redact(url)}: the wheel {stable.name} does not match the index's hash"
    assert str(caught.value).startswith(expected)
    assert f"(sha256 {digest}, the page says {'0' * 64})" in str(caught.value)


def test_a_fallback_download_that_is_not_a_wheel_is_a_clear_error(tmp_path: Path) -> None:
    html = tmp_path / "html" / STABLE
    html.parent.mkdir()
    html.write_bytes(b"<html>please log in</html>")  # what a misconfigured proxy serves in place of the file
    with pytest.raises(InvalidWheel) as caught:
        core_metadata.wheel_facts(Candidate(STABLE, html.as_uri(), None))
    assert str(caught.value) == f"{html.as_uri()}: not a wheel (not a readable zip archive: File is not a zip file)"

    bare = tmp_path / "bare" / STABLE
    bare.parent.mkdir()
    with zipfile.ZipFile(bare, "w") as archive:
        archive.writestr("img2gray/__init__.py", "")
    with pytest.raises(InvalidWheel) as caught:
        core_metadata.wheel_facts(Candidate(STABLE, bare.as_uri(), None))
    assert str(caught.value) == f"{bare.as_uri()}: not a wheel: it has no *.dist-info/METADATA"
