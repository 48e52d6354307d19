"""kernelwheel.wheels.checked_variant: a variant's folder is refused with the reason (paths, symlinks, ELF files,
digests, kernels.lock)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelwheel.format.lockfile import VariantLock, variant_hash
from kernelwheel.format.signatures import SignatureOptions
from kernelwheel.format.variants import Variant
from kernelwheel.hub.sources import Source
from kernelwheel.io.errors import DigestMismatch, InvalidVariant
from kernelwheel.wheels.checked_variant import check_variant_dir
from tests.helpers import kernel_repos

CPU_VARIANT = "torch213-cxx11-cpu-x86_64-linux"


@pytest.mark.parametrize(
    ("case", "error", "message"),
    [
        ("traversal", InvalidVariant, "path traversal"),
        ("symlink-outside", InvalidVariant, "secrets.txt is a symlink pointing outside"),
        ("not-elf", InvalidVariant, "not an ELF file"),
        ("tampered", DigestMismatch, "_ops.py does not match its sha256 digest"),
        ("not-locked", InvalidVariant, "not in kernels.lock"),
        ("lock-hash", DigestMismatch, "kernels.lock hash sha256-000"),
    ],
)
def test_check_variant_dir_refusals(case: str, error: type[Exception], message: str, tmp_path: Path,
                                    so_cache: Path) -> None:
    build = tmp_path / "repo" / "build"
    folder = kernel_repos.flat_variant(build, CPU_VARIANT, so_cache, with_digest=case != "symlink-outside")
    meta_path = folder / "metadata.json"
    meta = json.loads(meta_path.read_text())
    locks: dict[str, VariantLock] | None = None
    if case == "traversal":
        meta["digest"]["files"]["../../etc/passwd"] = meta["digest"]["files"].pop("_ops.py")
    elif case == "symlink-outside":
        (folder / "secrets.txt").symlink_to("/etc/hostname")
    elif case == "not-elf":
        meta.pop("digest")
        next(folder.glob("*.so")).write_bytes(b"not an elf at all")
    elif case == "tampered":
        (folder / "_ops.py").write_text("import os  # tampered\n")
    elif case == "not-locked":
        locks = {"torch-cpu": VariantLock(variant_hash(folder))}
    elif case == "lock-hash":
        locks = {CPU_VARIANT: VariantLock("sha256-" + "0" * 64)}
    meta_path.write_text(json.dumps(meta))
    source = Source(build, "testorg/img2gray@abc", "img2gray", locks=locks)
    with pytest.raises(error) as info:
        check_variant_dir(Variant.parse(CPU_VARIANT), folder, source, SignatureOptions())
    assert message in str(info.value)
