"""tools.elfinfo: ELF check, symbol versions → manylinux tag, abi3 detection; on binaries compiled here."""

from __future__ import annotations

import subprocess
import sysconfig
from pathlib import Path

import pytest

from tests.helpers import kernel_repos
from tools.kernelwheel.elf import ElfInfo, is_elf, platform_tag, python_tags, read_elf
from tools.kernelwheel.errors import InvalidVariant


def _compile(tmp_path: Path, name: str, source: str, *flags: str) -> Path:
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    out = tmp_path / name
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", str(src), "-o", str(out), *flags], check=True)
    return out


def test_abi3_extension(tmp_path: Path) -> None:
    so = kernel_repos.compile_extension(tmp_path / "_k_cpu_abc.abi3.so", "_k_cpu_abc", tmp_path / "cache")
    info = read_elf(so)
    assert info.cpu == "x86_64" and info.is_extension and info.python_abi == "abi3"
    assert python_tags([info]).python_tag == "cp39" and python_tags([info]).abi_tag == "abi3"
    assert python_tags([info]).requires_python == ">=3.9"
    # only old glibc symbols → the manylinux floor
    assert platform_tag([info], "x86_64") == "manylinux_2_17_x86_64"


def test_glibc_symbol_version_raises_tag(tmp_path: Path) -> None:
    # getrandom() is GLIBC_2.25: the tag is exactly manylinux_2_25, never assumed.
    so = _compile(tmp_path, "librand.so", "#include <sys/random.h>\nint f(char*b){return getrandom(b,4,0);}\n")
    info = read_elf(so)
    assert info.glibc == (2, 25)
    assert not info.is_extension and info.python_abi is None
    assert platform_tag([info], "x86_64") == "manylinux_2_25_x86_64"
    assert python_tags([info]).python_tag == "py3"


def test_libstdcxx_versions_map_to_policy(tmp_path: Path) -> None:
    # GLIBCXX_3.4.30 (GCC 12's libstdc++) is first allowed by manylinux_2_35 in auditwheel's policy.
    info = ElfInfo("x.so", "x86_64", frozenset({("GLIBC", "2.17"), ("GLIBCXX", "3.4.30")}), False, None)
    assert platform_tag([info], "x86_64") == "manylinux_2_35_x86_64"
    newer = ElfInfo("y.so", "x86_64", frozenset({("GLIBC", "2.38"), ("GLIBCXX", "3.4.21")}), False, None)
    assert platform_tag([info, newer], "x86_64") == "manylinux_2_38_x86_64"


def test_cpython_specific_extension(tmp_path: Path) -> None:
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    include = sysconfig.get_paths()["include"]
    so = _compile(tmp_path, f"m{suffix}",
                  "#include <Python.h>\nstatic struct PyModuleDef d={PyModuleDef_HEAD_INIT,\"m\",0,-1,0};\n"
                  "PyMODINIT_FUNC PyInit_m(void){return PyModule_Create(&d);}\n", f"-I{include}")
    tags = python_tags([read_elf(so)])
    assert (tags.python_tag, tags.abi_tag, tags.requires_python) == ("cp311", "cp311", "==3.11.*")


def test_mixed_python_versions_rejected() -> None:
    a = ElfInfo("a", "x86_64", frozenset(), True, "cp310")
    b = ElfInfo("b", "x86_64", frozenset(), True, "cp311")
    with pytest.raises(InvalidVariant, match="several Python versions"):
        python_tags([a, b])
    assert python_tags([]).python_tag == "py3"


def test_not_elf(tmp_path: Path) -> None:
    fake = tmp_path / "_k.abi3.so"
    fake.write_bytes(b"MZ\x90\x00 this is a DLL")
    assert not is_elf(fake.read_bytes())
    with pytest.raises(InvalidVariant, match="not an ELF file"):
        read_elf(fake, display="build/v/_k.abi3.so")


@pytest.mark.parametrize("damage", ["truncated", "garbage-after-magic", "zeroed-sections"])
def test_damaged_elf_is_one_clear_error(tmp_path: Path, damage: str) -> None:
    good = _compile(tmp_path, "libok.so", "int f(void){return 1;}\n").read_bytes()
    bad = tmp_path / "libbad.so"
    if damage == "truncated":
        bad.write_bytes(good[:64])
    elif damage == "garbage-after-magic":
        bad.write_bytes(b"\x7fELF" + bytes(range(256)) * 8)
    else:
        bad.write_bytes(good[:0x28] + b"\xff" * 24 + good[0x40:])  # section-header fields overwritten
    with pytest.raises(InvalidVariant, match=r"libbad\.so: unreadable ELF file") as raised:
        read_elf(bad)
    assert "\n" not in str(raised.value)
