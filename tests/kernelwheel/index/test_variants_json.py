"""kernelwheel.index.variants_json, and the index with variant wheels in it: each wheel's variant.json checked,
``<name>-<version>-variants.json`` merged, written beside the wheels and linked from every page that lists one of
them, kept in step incrementally; two variant wheels that disagree refused in one line, the index left as it was."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from packaging.version import Version

from kernelwheel.index import writer
from kernelwheel.index.state import STATE_FILE, read_state
from kernelwheel.index.variants_json import merged_documents, variant_document, variants_file_name
from kernelwheel.index.writer import write_index
from kernelwheel.io.errors import InvalidIndexState, InvalidWheel
from kernelwheel.wheels.variant_names import VariantWheelName
from kernelwheel.wheels.variant_wheels import PROVIDERS, SCHEMA, write_variant_wheel
from kernelwheel.wheels.wheel_contents import WheelContents
from kernelwheel.wheels.wheel_reader import read_wheel
from kernelwheel.wheels.wheel_writer import write_wheel
from tests.helpers import standin_wheels as standin

_LINK = re.compile(r'<a href="([^"#]+)#sha256=([0-9a-f]{64})"[^>]*>([^<]+)</a>')
NAME = VariantWheelName("img2gray", Version("0.1.0"), "cp39", "abi3", "manylinux_2_28_x86_64", "cu130")
CU130 = {"nvidia": {"cuda_version_lower_bound": ["13.0"]}}


def _document(label: str = "cu130", properties: object = None, **changes: object) -> dict[str, object]:
    document = {"$schema": SCHEMA, "default-priorities": {"namespace": ["nvidia", "abi_dependency"]},
                "providers": PROVIDERS, "variants": {label: CU130 if properties is None else properties}}
    return {**document, **changes}


def _raw(document: object) -> bytes:
    return json.dumps(document).encode()


def test_the_file_name_is_spelled_as_the_wheel() -> None:
    assert variants_file_name(NAME) == "img2gray-0.1.0-variants.json"
    dotted = VariantWheelName("my.kernel", Version("1.0"), "py3", "none", "any", "null")
    assert variants_file_name(dotted) == "my_kernel-1.0-variants.json"


def test_a_document_is_kept_as_canonical_json() -> None:
    text = variant_document(_raw(_document()), NAME.filename, "cu130")
    assert json.loads(text) == _document() and " " not in text


@pytest.mark.parametrize(("data", "label", "message"), [
    (None, "cu130", "a variant wheel (label 'cu130') without .dist-info/variant.json"),
    (b"{", "cu130", "not JSON (JSONDecodeError"),
    (_raw([]), "cu130", "expected an object with $schema, default-priorities, providers and variants, got 'list'"),
    (_raw(_document(providers=None) | {"extra": 1}), "cu130", "expected an object with $schema"),
    (_raw(_document("cu128")), "cu130", "expected variants to describe only the wheel's label 'cu130', got ['cu128']"),
    (_raw(_document(properties={"nvidia": {"sm_arch": "90_real"}})), "cu130", "must map namespaces to features"),
    (_raw(_document("null")), "null", "the null variant has properties; expected none"),
    (_raw(_document(properties={})), "cu130", "'cu130' has no properties; expected some"),
])
def test_a_bad_variant_json_is_one_line(data: bytes | None, label: str, message: str) -> None:
    with pytest.raises(InvalidWheel) as info:
        variant_document(data, NAME.filename, label)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_documents_of_one_version_merge() -> None:
    null = VariantWheelName("img2gray", Version("0.1.0"), "cp39", "abi3", "manylinux_2_28_x86_64", "null")
    arm = VariantWheelName("img2gray", Version("0.1.0"), "cp39", "abi3", "manylinux_2_28_aarch64", "cu130")
    merged = merged_documents([
        (NAME, NAME.filename, json.dumps(_document())),
        (arm, arm.filename, json.dumps(_document())),  # the same label on another platform: one entry
        (null, null.filename, json.dumps(_document("null", {}))),
    ])
    assert list(merged) == ["img2gray-0.1.0-variants.json"]
    assert json.loads(merged["img2gray-0.1.0-variants.json"]) == {**_document(), "variants": {"cu130": CU130,
                                                                                            "null": {}}}


def test_documents_that_disagree_are_refused_naming_both_wheels() -> None:
    arm = VariantWheelName("img2gray", Version("0.1.0"), "cp39", "abi3", "manylinux_2_28_aarch64", "cu130")
    other = _document(properties={"nvidia": {"cuda_version_lower_bound": ["12.8"]}})
    with pytest.raises(InvalidWheel) as info:
        merged_documents([(NAME, NAME.filename, json.dumps(_document())), (arm, arm.filename, json.dumps(other))])
    assert str(info.value) == (f"{arm.filename} and {NAME.filename}: the variant label 'cu130' has other properties "
                               "in each; expected one meaning per label in img2gray-0.1.0")
    with pytest.raises(InvalidWheel, match=r"their variant\.json give another providers; expected one for every"):
        merged_documents([(NAME, NAME.filename, json.dumps(_document())),
                          (arm, arm.filename, json.dumps(_document(providers={"nvidia": {"builtin": "nvidia"}})))])


@pytest.fixture
def variant_house(tmp_path: Path) -> Path:
    """Backend-named stand-ins (stable CUDA and CPU, classic CUDA for torch 2.14) and their variant wheels."""
    house = tmp_path / "wheelhouse"
    stable = standin.write_standin(house, torch=None, stable_abi_floor="2.10")
    cpu = standin.write_standin(house, torch=None, stable_abi_floor="2.10", distribution="img2gray-cpu")
    classic = standin.write_standin(house, torch="2.14")
    for wheel in (stable, cpu, classic):
        write_variant_wheel(wheel, house)
    return house


def _links(page: Path) -> dict[str, tuple[Path, str]]:
    return {text: ((page.parent / href).resolve(), sha) for href, sha, text in _LINK.findall(page.read_text())}


def test_the_index_writes_and_links_variants_json(variant_house: Path) -> None:
    report = write_index(variant_house)
    assert report.variants_files == ["img2gray-0.1.0-variants.json"]
    variants = variant_house / "img2gray-0.1.0-variants.json"
    assert json.loads(variants.read_bytes())["variants"] == {
        "cu130": CU130, "null": {}, "cu130_torch214": {**CU130, "abi_dependency": {"torch": ["2.14"]}}}
    page = _links(variant_house / "simple" / "img2gray" / "index.html")
    assert set(page) == {"img2gray-0.1.0-cp39-abi3-manylinux_2_28_x86_64-cu130.whl",
                         "img2gray-0.1.0-cp39-abi3-manylinux_2_28_x86_64-null.whl",
                         "img2gray-0.1.0-cp39-abi3-manylinux_2_28_x86_64-cu130_torch214.whl",
                         "img2gray-0.1.0-variants.json"}
    assert page["img2gray-0.1.0-variants.json"] == (variants, hashlib.sha256(variants.read_bytes()).hexdigest())
    # The backend-named projects are as before, without the file; the torch sub-indexes list what admits them.
    assert "variants.json" not in (variant_house / "simple" / "img2gray-cu130" / "index.html").read_text()
    in_213 = _links(variant_house / "simple" / "torch2.13" / "img2gray" / "index.html")
    assert set(in_213) == {"img2gray-0.1.0-cp39-abi3-manylinux_2_28_x86_64-cu130.whl",
                           "img2gray-0.1.0-cp39-abi3-manylinux_2_28_x86_64-null.whl", "img2gray-0.1.0-variants.json"}
    assert "img2gray-0.1.0-cp39-abi3-manylinux_2_28_x86_64-cu130_torch214.whl" in _links(
        variant_house / "simple" / "torch2.14" / "img2gray" / "index.html")
    assert "img2gray" in (variant_house / "simple" / "index.html").read_text()
    assert not report.warnings  # variant wheels of one version are told apart by label, not reported as overlaps


def test_a_rerun_reads_no_wheel_and_writes_nothing(variant_house: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_index(variant_house)
    state = read_state(variant_house / "simple")
    assert sum(w.variant is not None for w in state.wheels.values()) == 3
    monkeypatch.setattr(writer, "inspect_wheel", lambda path: pytest.fail(f"{path.name} was re-read"))
    report = write_index(variant_house)
    assert (report.files_written, report.variants_files) == (0, ["img2gray-0.1.0-variants.json"])


def test_variants_json_goes_with_the_last_variant_wheel(variant_house: Path) -> None:
    write_index(variant_house)
    (variant_house / "img2gray-0.1.0-cp39-abi3-manylinux_2_28_x86_64-cu130_torch214.whl").unlink()
    write_index(variant_house)
    assert "cu130_torch214" not in (variant_house / "img2gray-0.1.0-variants.json").read_text()
    for wheel in variant_house.glob("img2gray-*-*-*-*-*.whl"):
        wheel.unlink()
    report = write_index(variant_house)
    assert report.variants_files == [] and not (variant_house / "img2gray-0.1.0-variants.json").exists()
    assert not (variant_house / "simple" / "img2gray").exists()


def test_variant_wheels_that_disagree_leave_the_index_unchanged(variant_house: Path) -> None:
    write_index(variant_house)
    before = {p: p.read_bytes() for p in variant_house.rglob("*") if p.is_file() and p.name != ".index.lock"}
    # An aarch64 build labelled cu130 whose variant.json says CUDA 12.8.
    source = read_wheel(variant_house / "img2gray-0.1.0-cp39-abi3-manylinux_2_28_x86_64-cu130.whl")
    name = VariantWheelName("img2gray", Version("0.1.0"), "cp39", "abi3", "manylinux_2_28_aarch64", "cu130")
    files = dict(source.files)
    files["img2gray-0.1.0.dist-info/variant.json"] = _raw(_document(
        properties={"nvidia": {"cuda_version_lower_bound": ["12.8"]}}))
    write_wheel(WheelContents(name, source.metadata, files), variant_house)
    with pytest.raises(InvalidWheel) as info:
        write_index(variant_house)
    assert str(info.value).splitlines()[1].strip() == (
        f"{name.filename} and img2gray-0.1.0-cp39-abi3-manylinux_2_28_x86_64-cu130.whl: the variant label 'cu130' "
        "has other properties in each; expected one meaning per label in img2gray-0.1.0")
    assert {p: p.read_bytes() for p in before} == before
    assert not (variant_house / f"{name.filename}.metadata").exists()


def test_a_state_whose_variant_entry_is_forged_is_refused(variant_house: Path) -> None:
    write_index(variant_house)
    path = variant_house / "simple" / STATE_FILE
    state = json.loads(path.read_text())
    entry = next(w for w in state["wheels"] if w["variant"] is not None)
    entry["variant"] = json.dumps(_document("other"))
    path.write_text(json.dumps(state))
    with pytest.raises(InvalidIndexState, match=r"variant: .*expected variants to describe only the wheel.s label"):
        write_index(variant_house)
