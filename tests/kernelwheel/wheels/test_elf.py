"""tools.elfinfo: ELF check, symbol versions → manylinux tag, abi3 detection; on binaries compiled here."""

from __future__ import annotations

import subprocess
import sysconfig
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelwheel.io.errors import InvalidVariant
from kernelwheel.wheels.elf import (
    ElfInfo,
    has_elf_magic,
    is_elf,
    looks_like_shared_object,
    platform_tag,
    python_tags,
    read_elf,
)
from tests.helpers import kernel_repos
from tests.helpers.elf import CXX_NEEDS, cxx_library, endless_version_needs, with_version_need


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


@pytest.mark.parametrize("unknown", [b"GLIBCXX_3.4.99", b"GLIBCXX_3.4.35"])
def test_a_symbol_version_no_policy_knows_is_refused_not_tagged_lower(tmp_path: Path, unknown: bytes) -> None:
    """GLIBCXX_3.4.99 made auditwheel answer with its generic linux policy, and the tag fell back to the GLIBC floor:
    manylinux_2_17, lower than the unpatched file's manylinux_2_24."""
    so = cxx_library(tmp_path / "libcxx.so")
    assert platform_tag([read_elf(tmp_path / "libcxx.so")], "x86_64") == "manylinux_2_24_x86_64"
    patched = tmp_path / "libpatched.so"
    patched.write_bytes(with_version_need(so, CXX_NEEDS, unknown))
    with pytest.raises(InvalidVariant) as refused:
        platform_tag([read_elf(patched, "libpatched.so")], "x86_64")
    assert str(refused.value) == (f"libpatched.so: needs symbol version {unknown.decode()}, which no manylinux policy "
                                  "in auditwheel allows; expected at most GLIBCXX_3.4.33 (a libstdc++/libgcc that a "
                                  "manylinux image ships)")


def test_cpython_specific_extension(tmp_path: Path) -> None:
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    include = sysconfig.get_paths()["include"]
    so = _compile(tmp_path, f"m{suffix}",
                  "#include <Python.h>\nstatic struct PyModuleDef d={PyModuleDef_HEAD_INIT,\"m\",0,-1,0};\n"
                  "PyMODINIT_FUNC PyInit_m(void){return PyModule_Create(&d);}\n", f"-I{include}")
    tags = python_tags([read_elf(so)])
    assert (tags.python_tag, tags.abi_tag, tags.requires_python) == ("cp311", "cp311", "==3.11.*")


def test_a_pyinit_the_library_only_calls_is_not_an_export(tmp_path: Path) -> None:
    # The name is in .dynstr (so the symbols are walked), but undefined: not a Python extension.
    so = _compile(tmp_path, "libcaller.so", "extern void *PyInit_other(void);\nvoid *f(void){return PyInit_other();}\n")
    assert not read_elf(so).is_extension
    exporting = _compile(tmp_path, "libexporter.so", "void *PyInit_other(void){return 0;}\n")
    assert read_elf(exporting).is_extension


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


# Fuzzing (44 of 2,000 mutants escaped pyelftools as ValueError/OSError, and one hung). Derandomized so CI
# runs the same examples every time; the deadline catches a walk that no longer terminates quickly.
_FUZZ = settings(max_examples=200, deadline=2000, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
_MUTATION = st.tuples(st.integers(min_value=0), st.sampled_from([b"\x00", b"\xff", b"\x7f\xff\xff\xff", b"\x01",
                                                                 b"\xff\xff\xff\xff\xff\xff\xff\xff"]))


@pytest.fixture(scope="module")
def good_so(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    folder = tmp_path_factory.mktemp("fuzz")
    so = kernel_repos.compile_extension(folder / "_k_cpu_abc.abi3.so", "_k_cpu_abc", folder / "cache")
    return so.read_bytes()


@_FUZZ
@given(mutations=st.lists(_MUTATION, min_size=1, max_size=12), cut=st.none() | st.integers(min_value=4))
def test_read_elf_on_mutated_files_returns_or_refuses_in_one_line(good_so: bytes, tmp_path: Path,
                                                                  mutations: list[tuple[int, bytes]],
                                                                  cut: int | None) -> None:
    data = bytearray(good_so)
    for position, chunk in mutations:
        at = position % len(data)
        data[at : at + len(chunk)] = chunk[: len(data) - at]
    if cut is not None:
        del data[max(4, cut % len(data)) :]
    path = tmp_path / "_k.abi3.so"
    path.write_bytes(bytes(data))
    try:
        info = read_elf(path, display="build/v/_k.abi3.so")
        if info.cpu in ("x86_64", "aarch64"):
            platform_tag([info], info.cpu)
        python_tags([info])
    except InvalidVariant as exc:
        message = str(exc)
        assert message.startswith("build/v/_k.abi3.so: ") and "\n" not in message and len(message) < 400


def test_an_endless_version_needs_section_is_refused_quickly(good_so: bytes, tmp_path: Path) -> None:
    path = tmp_path / "endless.so"
    path.write_bytes(endless_version_needs(good_so))  # pyelftools alone walks it for hours
    with pytest.raises(InvalidVariant, match=r"more symbol-version entries than a \d+-byte file can hold"):
        read_elf(path)


def test_elf_is_recognised_by_its_magic_not_its_name(good_so: bytes, tmp_path: Path) -> None:
    hidden = tmp_path / "_ops.bin"
    hidden.write_bytes(good_so)
    plain = tmp_path / "helper.py"
    plain.write_text("x = 1\n")
    assert has_elf_magic(hidden) and not has_elf_magic(plain)
    assert not looks_like_shared_object("_ops.bin") and looks_like_shared_object("libx.so.1")


@pytest.fixture
def fresh_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelwheel.wheels import elf

    monkeypatch.setattr(elf, "_VERDICTS", {})
    monkeypatch.setattr(elf, "_PLATFORMS", {})


def _parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the real parser's calls."""
    from kernelwheel.wheels import elf

    calls: list[int] = []
    real = elf._parse

    def counting(stream: object, size: int) -> object:
        calls.append(size)
        return real(stream, size)  # type: ignore[arg-type]

    monkeypatch.setattr(elf, "_parse", counting)
    return calls


@pytest.mark.usefixtures("fresh_verdicts")
def test_verdict_cache_by_content_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelwheel.format.digests import file_digest
    from kernelwheel.wheels import elf

    so = kernel_repos.compile_extension(tmp_path / "_k_cpu_abc.abi3.so", "_k_cpu_abc", tmp_path / "cache")
    first = read_elf(so, sha256=file_digest(so))
    cache = tmp_path / "verdicts.json"
    elf.save_verdicts(cache)
    monkeypatch.setattr(elf, "_VERDICTS", {})
    elf.load_verdicts(cache)
    calls = _parses(monkeypatch)
    # the same bytes under another name: the verdict is reused, the name-dependent facts are recomputed
    copy = tmp_path / "other" / "_k_cpu_abc.cpython-311-x86_64-linux-gnu.so"
    copy.parent.mkdir()
    copy.write_bytes(so.read_bytes())
    again = read_elf(copy, sha256=file_digest(copy))
    assert calls == [] and (again.cpu, again.needed_versions, again.is_extension) == \
        (first.cpu, first.needed_versions, first.is_extension)
    assert again.python_abi == "cp311" and first.python_abi == "abi3"
    # without a hash the file is parsed
    read_elf(so)
    assert len(calls) == 1


@pytest.mark.usefixtures("fresh_verdicts")
def test_verdict_cache_refuses_a_changed_bad_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelwheel.format.digests import file_digest
    from kernelwheel.wheels import elf

    so = kernel_repos.compile_extension(tmp_path / "_k_cpu_abc.abi3.so", "_k_cpu_abc", tmp_path / "cache")
    read_elf(so, sha256=file_digest(so))
    cache = tmp_path / "verdicts.json"
    elf.save_verdicts(cache)
    good = so.read_bytes()
    so.unlink()
    so.write_bytes(good[:64] + b"\0" * 16)  # ELF magic, damaged: a new hash, so it is parsed and refused
    monkeypatch.setattr(elf, "_VERDICTS", {})
    elf.load_verdicts(cache)
    with pytest.raises(InvalidVariant, match="unreadable ELF file"):
        read_elf(so, sha256=file_digest(so))
    with pytest.raises(InvalidVariant, match="unreadable ELF file"):  # refusals are never cached
        read_elf(so, sha256=file_digest(so))
    assert len(elf._VERDICTS) == 1


@pytest.mark.usefixtures("fresh_verdicts")
def test_verdict_cache_of_another_checker_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelwheel.format.digests import file_digest
    from kernelwheel.wheels import elf

    so = kernel_repos.compile_extension(tmp_path / "_k_cpu_abc.abi3.so", "_k_cpu_abc", tmp_path / "cache")
    read_elf(so, sha256=file_digest(so))
    assert platform_tag([read_elf(so)], "x86_64") == "manylinux_2_17_x86_64"
    cache = tmp_path / "verdicts.json"
    elf.save_verdicts(cache)
    monkeypatch.setattr(elf, "_VERDICTS", {})
    monkeypatch.setattr(elf, "_PLATFORMS", {})
    monkeypatch.setattr(elf, "_CHECKER_RULES", elf._CHECKER_RULES + 1)
    elf.checker_version.cache_clear()
    try:
        elf.load_verdicts(cache)
        assert elf._VERDICTS == {} and elf._PLATFORMS == {}
        calls = _parses(monkeypatch)
        read_elf(so, sha256=file_digest(so))
        assert len(calls) == 1
    finally:
        elf.checker_version.cache_clear()
    # a damaged cache file is ignored too
    cache.write_bytes(b"{not json")
    elf.load_verdicts(cache)


@pytest.mark.usefixtures("fresh_verdicts")
def test_platform_tag_cache_keys_on_versions_not_names() -> None:
    from kernelwheel.wheels import elf

    info = ElfInfo("x.so", "x86_64", frozenset({("GLIBC", "2.17"), ("GLIBCXX", "3.4.30")}), False, None)
    assert platform_tag([info], "x86_64") == "manylinux_2_35_x86_64"
    assert len(elf._PLATFORMS) == 1
    renamed = ElfInfo("y.so", "x86_64", info.needed_versions, False, None)
    assert platform_tag([renamed], "x86_64") == "manylinux_2_35_x86_64" and len(elf._PLATFORMS) == 1
    older = ElfInfo("x.so", "x86_64", frozenset({("GLIBC", "2.17"), ("GLIBCXX", "3.4.21")}), False, None)
    assert platform_tag([older], "x86_64") != "manylinux_2_35_x86_64" and len(elf._PLATFORMS) == 2
