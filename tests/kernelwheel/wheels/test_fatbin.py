"""kernelwheel.wheels.fatbin: CUDA fat binaries built by nvcc here for several -gencode targets (compressed ones
too), hostile containers and ROCm offload bundles (synthetic: no ROCm toolchain here) → one line, bounded."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelwheel.io.errors import InvalidVariant
from kernelwheel.wheels.fatbin import MAX_ENTRIES, arch_name, read_cuda_fatbin, read_offload_bundles
from kernelwheel.wheels.gpu_targets import read_gpu_targets
from tests.helpers import fatbins
from tests.helpers.peak_rss import run_with_peak_mib


@pytest.fixture(scope="session")
def nvcc_objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return fatbins.built(tmp_path_factory)


@pytest.mark.parametrize("name", sorted(fatbins.BUILDS))
def test_targets_of_objects_nvcc_builds(nvcc_objects: dict[str, Path], name: str) -> None:
    _, sass, ptx = fatbins.BUILDS[name]
    targets = read_gpu_targets(nvcc_objects[name], f"{name}.so")
    assert (list(targets.cuda_sass), list(targets.cuda_ptx), list(targets.rocm)) == (sass, ptx, [])


def test_same_as_cuobjdump(nvcc_objects: dict[str, Path]) -> None:
    """Where cuobjdump is installed (it is not on CI), its listing names the same architectures (without the "f"
    of a family-specific one, which it does not print)."""
    cuobjdump = shutil.which("cuobjdump")
    if cuobjdump is None:
        pytest.skip("cuobjdump is not installed (pip install nvidia-cuda-cuobjdump puts one in site-packages)")
    for name, path in nvcc_objects.items():
        listing = subprocess.run([cuobjdump, "--list-elf", "--list-ptx", str(path)], capture_output=True, text=True)
        elf = {_dotted(m) for m in re.findall(r"ELF file\s+\d+: \S+\.sm_(\w+)\.cubin", listing.stdout)}
        ptx = {_dotted(m) for m in re.findall(r"PTX file\s+\d+: \S+\.sm_(\w+)\.ptx", listing.stdout)}
        targets = read_gpu_targets(path, name)
        assert elf == {a.removesuffix("f") for a in targets.cuda_sass}, name
        assert ptx == {a.removesuffix("f") for a in targets.cuda_ptx}, name


def _dotted(arch: str) -> str:
    digits, suffix = arch.rstrip("af"), arch[len(arch.rstrip("af")):]
    return f"{digits[:-1]}.{digits[-1]}{suffix}"


def test_compressed_entries_are_read_from_their_headers(nvcc_objects: dict[str, Path]) -> None:
    from elftools.elf.elffile import ELFFile

    with nvcc_objects["compressed_all"].open("rb") as fh:
        data = ELFFile(fh).get_section_by_name(".nv_fatbin").data()
    found = read_cuda_fatbin(data, "compressed_all.so")
    assert found.compressed == found.entries > 0
    assert found.sass == {"7.5", "8.6", "10.0f"}


def test_a_cpu_library_holds_no_gpu_code(tmp_path: Path) -> None:
    plain = fatbins.elf_with_section(tmp_path, "cpu", ".comment.extra", b"nothing")
    assert not read_gpu_targets(plain, "cpu.so")


def test_synthetic_containers_and_padding() -> None:
    one = fatbins.container([fatbins.entry(2, 80), fatbins.entry(1, 90, b"ptx text", flags=0x8011)])
    two = fatbins.container([fatbins.entry(2, 120, flags=0x100011, header_size=112), fatbins.entry(8, 90)])
    found = read_cuda_fatbin(one + b"\0" * 8 + two, "x.so")
    assert found.sass == {"8.0", "12.0a"} and found.ptx == {"9.0"} and found.entries == 4
    assert arch_name(103, 0x200000) == "10.3f" and arch_name(0, 0) is None


@pytest.mark.parametrize(("data", "message"), [
    (fatbins.container([fatbins.entry(2, 80)])[:40], "says 72 bytes of entries, the section has 24 left"),
    (fatbins.container([b"\2\0" + b"\0" * 38]), "an entry header needs 64 bytes, the container has 40"),
    (fatbins.container([fatbins.entry(2, 80)], fat_size=1 << 40), "says 1099511627776 bytes of entries"),
    (fatbins.container([fatbins.entry(2, 80, payload_size=1 << 62)]), "an entry of 4611686018427387904 bytes"),
    (fatbins.container([fatbins.entry(2, 80, header_size=8)]), "an entry header of 8 bytes"),
    (fatbins.container([fatbins.entry(2, 80)], magic=0x12345678), "magic 0x12345678"),
    (fatbins.container([fatbins.entry(2, 80)], header_size=2), "header size is 2 bytes"),
    (fatbins.container([fatbins.entry(2, 4_000_000)]), "architecture 4000000, which no GPU has"),
    (b"\x50\xed\x55\xba\x01\x00", "a fat binary header needs 16 bytes"),
], ids=["truncated", "short-entry", "fat-size-lies", "payload-size-lies", "tiny-entry-header", "wrong-magic",
        "tiny-container-header", "absurd-arch", "short-header"])
def test_hostile_containers_are_one_line(data: bytes, message: str) -> None:
    with pytest.raises(InvalidVariant) as caught:
        read_cuda_fatbin(data, "build/x/k.so (.nv_fatbin)")
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert str(caught.value).startswith("build/x/k.so (.nv_fatbin): unreadable GPU code at offset ")


def test_entry_count_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("kernelwheel.wheels.fatbin.MAX_ENTRIES", 3)
    with pytest.raises(InvalidVariant, match="more than 3 entries"):
        read_cuda_fatbin(fatbins.container([fatbins.entry(1, 80, b"")] * 5), "x.so")
    assert MAX_ENTRIES >= 1 << 20


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=600), st.integers(min_value=0, max_value=599), st.binary(min_size=1, max_size=8))
def test_damaged_containers_never_crash(noise: bytes, at: int, patch: bytes) -> None:
    """Any byte string, or an honest container with bytes overwritten: a result or one InvalidVariant line."""
    honest = bytearray(fatbins.container([fatbins.entry(2, 80), fatbins.entry(1, 90, b"ptx")]))
    honest[at % len(honest):at % len(honest) + len(patch)] = patch
    for data in (noise, bytes(honest)):
        try:
            found = read_cuda_fatbin(data, "x.so")
        except InvalidVariant as exc:
            assert "\n" not in str(exc)
        else:
            assert found.entries <= len(data) // 64


def test_lying_section_inside_a_real_object(nvcc_objects: dict[str, Path], tmp_path: Path) -> None:
    """A real .so whose first container claims more bytes than its section holds: refused, naming the file."""
    from elftools.elf.elffile import ELFFile

    source = nvcc_objects["sass80_90_ptx90"]
    with source.open("rb") as fh:
        offset = ELFFile(fh).get_section_by_name(".nv_fatbin")["sh_offset"]
    data = bytearray(source.read_bytes())
    data[offset + 8:offset + 16] = (1 << 50).to_bytes(8, "little")
    damaged = tmp_path / "damaged.so"
    damaged.write_bytes(bytes(data))
    with pytest.raises(InvalidVariant, match=r"^build/v/damaged\.so \(\.nv_fatbin\): unreadable GPU code at offset 0:"):
        read_gpu_targets(damaged, "build/v/damaged.so")


def test_offload_bundles() -> None:
    ids = ["host-x86_64-unknown-linux-gnu", "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-",
           "hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-", "hip-amdgcn-amd-amdhsa-gfx906",
           "hipv4-amdgcn-amd-amdhsa--gfx9-4-generic"]
    data = fatbins.bundle(ids) + b"\0" * 4096 + fatbins.bundle(["hipv4-amdgcn-amd-amdhsa--gfx1100"])
    found = read_offload_bundles(data, "x.so")
    assert found.rocm == {"gfx90a", "gfx942", "gfx906", "gfx9-4-generic", "gfx1100"}
    assert read_offload_bundles(b"CCOB\x02\x00\x01\x00" + b"\1" * 40, "x.so").unread_bundles == 1


@pytest.mark.parametrize(("data", "message"), [
    (fatbins.bundle(["hipv4-amdgcn-amd-amdhsa--gfx90a"], count=1 << 60), "declares 1152921504606846976 entries"),
    (fatbins.bundle(["hipv4-amdgcn-amd-amdhsa--gfx90a"])[:40], "declares 1 entries"),
    (b"__CLANG_OFFLOAD_BUNDLE__" + (1).to_bytes(8, "little") + (0).to_bytes(8, "little") + (1 << 40).to_bytes(
        8, "little") + (1).to_bytes(8, "little") + b"g" + b"\0" * 32, "entry of 1099511627776 bytes"),
    (b"not a bundle at all", "expected an offload bundle"),
], ids=["absurd-count", "truncated", "payload-size-lies", "wrong-magic"])
def test_hostile_bundles_are_one_line(data: bytes, message: str) -> None:
    with pytest.raises(InvalidVariant, match=re.escape(message)) as caught:
        read_offload_bundles(data, "x.so (.hip_fatbin)")
    assert "\n" not in str(caught.value)


def test_rocm_section_inside_an_elf(tmp_path: Path) -> None:
    so = fatbins.elf_with_section(tmp_path, "hip", ".hip_fatbin",
                                  fatbins.bundle(["host-x86_64-unknown-linux-gnu", "hipv4-amdgcn-amd-amdhsa--gfx942"]))
    targets = read_gpu_targets(so, "hip.so")
    assert targets.rocm == ("gfx942",) and not targets.cuda_sass


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_damaged_bundles_never_crash(noise: bytes) -> None:
    for data in (noise, fatbins.bundle(["hipv4-amdgcn-amd-amdhsa--gfx90a"])[:len(noise)] + noise):
        try:
            read_offload_bundles(data, "x.so")
        except InvalidVariant as exc:
            assert "\n" not in str(exc)


def test_a_large_section_is_read_without_copying_it(tmp_path: Path) -> None:
    """96 MiB of GPU code in three entries: only their headers are read (the file is mapped, never copied)."""
    big = b"\0" * (32 << 20)
    section = fatbins.container([fatbins.entry(2, 80, big), fatbins.entry(2, 90, big), fatbins.entry(1, 90, big)])
    so = fatbins.elf_with_section(tmp_path, "big", ".nv_fatbin", section)
    del big, section
    script = ("import sys; from pathlib import Path; from kernelwheel.wheels.gpu_targets import read_gpu_targets; "
              "print(read_gpu_targets(Path(sys.argv[1]), 'big.so').describe())")
    ran, peak = run_with_peak_mib([sys.executable, "-c", script, str(so)], tmp_path / "peak")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "CUDA SASS 8.0, 9.0; CUDA PTX 9.0; ROCm none"
    assert peak < 80, f"peak RSS {peak:.0f} MiB for a 96 MiB section"
