"""img2gray._settings: the CPU kernels' load-time switches, read by the same rules as the compiled library."""

from __future__ import annotations

import ctypes
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

import img2gray
from img2gray._settings import COUNT_SETTINGS, ISA_SETTING, ignored_settings

LIBC = ctypes.CDLL(None)
LIBC.strtoll.restype = ctypes.c_longlong
LIBC.strtoll.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]


def library_accepts_count(value: str) -> bool:
    """csrc/img2gray_cpu.cpp's env_setting, through the same strtoll: the whole value read, and not negative."""
    text = ctypes.create_string_buffer(value.encode())
    end = ctypes.c_void_p()
    number = LIBC.strtoll(ctypes.addressof(text), ctypes.byref(end), 10)
    read_all = end.value == ctypes.addressof(text) + len(value.encode())
    return value != "" and read_all and number >= 0


@pytest.mark.parametrize("value", ["0", "100", "+7", " 12", "-0", "00", "99999999999999999999"])
def test_counts_the_library_reads_pass(value: str) -> None:
    assert library_accepts_count(value)
    assert ignored_settings({"IMG2GRAY_CPU_TILE_PIXELS": value}) == []


@pytest.mark.parametrize("value", ["", "-1", "1e3", "12 ", "0x10", "ten", "1_000", "٣"])
def test_counts_the_library_ignores_are_named(value: str) -> None:
    assert not library_accepts_count(value)
    for name in COUNT_SETTINGS:
        assert ignored_settings({name: value}) == [f"{name}={value!r} is ignored: expected a whole number >= 0"]


def test_count_rule_matches_strtoll_on_random_values() -> None:
    generator = random.Random(20261206)
    alphabet = "0123456789+- \t\nxe."
    for _ in range(20_000):
        value = "".join(generator.choice(alphabet) for _ in range(generator.randint(0, 6)))
        assert (ignored_settings({"IMG2GRAY_CPU_STREAM_BYTES": value}) == []) == library_accepts_count(value), value


def test_isa_choices_and_the_rest() -> None:
    assert ignored_settings({ISA_SETTING: "avx2"}) == []
    assert ignored_settings({ISA_SETTING: "scalar"}) == []
    assert ignored_settings({}) == []
    assert ignored_settings({ISA_SETTING: "avx512"}) == [
        "IMG2GRAY_CPU_ISA='avx512' is ignored: expected one of avx2, scalar (or unset, for the widest path the CPU runs)"
    ]
    assert len(ignored_settings({ISA_SETTING: "AVX2", "IMG2GRAY_CPU_STREAM_BYTES": "big"})) == 2


def _import_in_a_fresh_process(settings: dict[str, str], *args: str,
                                path: tuple[Path, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``python -c "import img2gray"`` (or ``python ARGS``) with only ``settings`` of the library's switches."""
    site = Path(img2gray.__file__).resolve().parent.parent  # the build under test
    env = {key: value for key, value in os.environ.items() if not key.startswith("IMG2GRAY_CPU_")}
    env.update(settings, PYTHONPATH=os.pathsep.join([*map(str, path), str(site), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, *(args or ("-c", "import img2gray"))], env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def test_importing_with_an_ignored_setting_warns_once_in_one_line() -> None:
    done = _import_in_a_fresh_process({ISA_SETTING: "avx-512"})
    assert done.returncode == 0, done.stderr
    # attributed to the importing line (here `python -c`), so the warning is that one line and no source echo
    assert done.stderr.splitlines() == [
        "<string>:1: RuntimeWarning: img2gray: IMG2GRAY_CPU_ISA='avx-512' is ignored: expected one of avx2, scalar "
        "(or unset, for the widest path the CPU runs)"
    ]


def test_importing_with_settings_the_library_reads_is_quiet() -> None:
    done = _import_in_a_fresh_process({ISA_SETTING: "scalar", "IMG2GRAY_CPU_TILE_PIXELS": "0"})
    assert done.returncode == 0, done.stderr
    assert "img2gray" not in done.stderr


AVX512_IGNORED = ("IMG2GRAY_CPU_ISA='avx-512' is ignored: expected one of avx2, scalar "
                  "(or unset, for the widest path the CPU runs)")


def test_python_m_img2gray_reports_an_ignored_setting_instead_of_a_warning_from_runpy() -> None:
    done = _import_in_a_fresh_process({ISA_SETTING: "avx-512"}, "-m", "img2gray")
    assert done.returncode == 0, done.stderr
    assert f"  warning: {AVX512_IGNORED}\n" in done.stdout
    assert "is ignored" not in done.stderr  # the import warned from "<frozen runpy>:112" before


def test_a_module_run_with_python_m_that_imports_img2gray_still_gets_the_warning(tmp_path: Path) -> None:
    (tmp_path / "uses_img2gray.py").write_text("import img2gray\n")
    done = _import_in_a_fresh_process({ISA_SETTING: "avx-512"}, "-m", "uses_img2gray", path=(tmp_path,))
    assert done.returncode == 0, done.stderr
    assert f"uses_img2gray.py:1: RuntimeWarning: img2gray: {AVX512_IGNORED}" in done.stderr
