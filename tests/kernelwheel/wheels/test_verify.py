"""kernelwheel.wheels.verify: a written wheel verified again from Python, as `kernelwheel verify` does (the command's
output and the signed cases: tests/cli/test_verify_wheel.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from kernelwheel.format.signatures import SignatureOptions
from kernelwheel.hub.sources import local_source
from kernelwheel.io.errors import InvalidWheel, SignatureMissing
from kernelwheel.wheels.convert import Options, convert
from kernelwheel.wheels.verify import verify_wheel
from tests.helpers import kernel_repos

VARIANT = "torch213-cxx11-cpu-x86_64-linux"


@pytest.fixture
def unsigned_wheel(tmp_path: Path, so_cache: Path) -> Path:
    repo = tmp_path / "kernel"
    kernel_repos.flat_variant(repo / "build", VARIANT, so_cache, name="plainkernel")
    report = convert(local_source(repo), Options(out_dir=tmp_path / "wheelhouse"))
    (_, wheel), = report.converted
    return wheel


def test_an_unsigned_wheel_is_checked_then_refused_unless_allowed(unsigned_wheel: Path) -> None:
    with pytest.raises(SignatureMissing) as refused:
        verify_wheel(unsigned_wheel, SignatureOptions())
    assert "file(s) match their RECORD hashes; 3 file(s) match its sha256 digest" in str(refused.value)
    result = verify_wheel(unsigned_wheel, SignatureOptions(), allow_unsigned=True)
    assert result.target == str(unsigned_wheel) and len(result.lines) == 1
    assert result.lines[0].startswith(f"{unsigned_wheel.name}: unsigned; ")


def test_a_changed_file_and_a_wrong_target_are_one_error_each(unsigned_wheel: Path, tmp_path: Path) -> None:
    tampered = tmp_path / "tampered" / unsigned_wheel.name
    tampered.parent.mkdir()
    with zipfile.ZipFile(unsigned_wheel) as source, zipfile.ZipFile(tampered, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            target.writestr(info, data + b"# edited\n" if info.filename.endswith("/__init__.py") else data)
    with pytest.raises(InvalidWheel, match="Hash mismatch"):
        verify_wheel(tampered, SignatureOptions(), allow_unsigned=True)
    with pytest.raises(InvalidWheel, match=r"neither a \.whl file nor a distribution installed"):
        verify_wheel("no-such-distribution-xyz", SignatureOptions())
