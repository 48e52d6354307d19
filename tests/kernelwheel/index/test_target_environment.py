"""tools/kernelwheel/index/target_environment.py: the probe of the target interpreter, every answer of it checked (one
``error:`` line for a broken torch or a Python that is not one), and kernels' CUDA and ROCm rules: which builds a torch
loads, and which project to install instead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from kernelwheel.format.variant_pieces import Backend
from kernelwheel.index.install_plan import plan_install
from kernelwheel.index.target_environment import Environment, cuda_compatible, rocm_version
from kernelwheel.index.writer import write_index
from kernelwheel.io.errors import NoCompatibleWheel, ToolError
from tests.helpers import standin_wheels as standin
from tests.helpers.kernels_releases import RELEASES, ask
from tests.kernelwheel.index.test_install_plan import TAGS
from tests.kernelwheel.index.test_install_target import PYTHON, _command, _one_error


@pytest.mark.parametrize(("python", "reason"), [
    ("/nonexistent/python", "cannot run it (No such file or directory)"),
    ("/usr/bin/true", "expected a Python interpreter (3.9 or newer) answering in JSON, it printed ''"),
    ("/usr/bin/false", "it exited with 1"),
    ("sleeps", "it did not answer within 0.5 s"),
])
def test_a_target_that_is_not_a_python_is_one_line(python: str, reason: str, tmp_path: Path) -> None:
    if python == "sleeps":
        python = str(tmp_path / "python")
        Path(python).write_text("#!/bin/sh\nexec sleep 30\n")
        Path(python).chmod(0o755)
    with pytest.raises(ToolError) as info:
        Environment.probe(python, timeout_s=0.5)
    assert str(info.value) == f"cannot inspect the Python environment {python!r}: {reason}"


# ------------------------------------------------------------------------------------------ the target's answers


def test_a_torch_whose_version_is_not_a_version_is_one_line(tmp_path: Path) -> None:
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "version.py").write_text("__version__ = 'not a version'\ncuda = None\n")
    error = _one_error(_command("marked", "--index-url", "http://127.0.0.1:9/simple/", "--python", PYTHON,
                                env={"PYTHONPATH": str(tmp_path / "site")}))
    assert error == (f"error: cannot inspect the Python environment {PYTHON!r}: torch says __version__ = "
                     "'not a version', which is not a version; expected a PEP 440 version such as 2.14.1 "
                     "(reinstall torch)")


@pytest.mark.parametrize(("answer", "problem"), [
    ({"torch": 5, "cuda": None, "python": "3.11.7", "tags": [], "installed": []},
     "it gave its torch version as 5; expected a version string such as 2.14.1"),
    ({"torch": "2.14.1", "cuda": None, "python": "three", "tags": [], "installed": []},
     "its python version is 'three', which is not a version"),
    ({"torch": "2.14.1", "cuda": None, "python": "3.11.7", "tags": "cp311", "installed": []},
     "it gave tags as 'cp311'; expected a list of strings"),
    ([1, 2], "expected a Python interpreter (3.9 or newer) answering in JSON, it printed '[1, 2]'"),
])
def test_a_python_whose_answer_is_not_what_the_probe_asks_is_one_line(
    tmp_path: Path, answer: object, problem: str
) -> None:
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\necho '{json.dumps(answer)}'\n")
    python.chmod(0o755)
    error = _one_error(_command("marked", "--index-url", "http://127.0.0.1:9/simple/", "--python", str(python)))
    assert error.startswith(f"error: cannot inspect the Python environment {str(python)!r}: {problem}")


# --- CUDA: kernels' rule (same major, build minor <= the torch's), and which project to install instead ---------

@pytest.fixture
def cuda_index(tmp_path: Path) -> Path:
    house = tmp_path / "cuda-house"
    for backend in ("cu128", "cu130"):
        standin.write_standin(house, torch=None, distribution=f"img2gray-{backend}", stable_abi_floor="2.10")
    write_index(house)
    return house / "simple"


def cuda_target(cuda: str | None) -> Environment:
    return Environment("/env/bin/python", Version("3.11.7"), Version("2.14.1"), TAGS,
                       Version(cuda) if cuda else None)


def test_a_cuda_13_build_is_refused_for_a_cuda_12_9_torch_and_cu128_is_named(cuda_index: Path) -> None:
    with pytest.raises(NoCompatibleWheel) as raised:
        plan_install(cuda_index.as_uri() + "/", "img2gray-cu130", cuda_target("12.9"))
    message = str(raised.value)
    assert "img2gray-cu130 is built for CUDA 13.0, which a torch for CUDA 12.9 cannot load" in message
    assert "install img2gray-cu128 instead" in message


def test_a_compatible_cuda_build_is_planned(cuda_index: Path) -> None:
    assert plan_install(cuda_index.as_uri() + "/", "img2gray-cu128", cuda_target("12.9")).project == "img2gray-cu128"
    assert plan_install(cuda_index.as_uri() + "/", "img2gray-cu130", cuda_target("13.2")).project == "img2gray-cu130"


def test_a_cuda_build_for_a_cpu_only_torch_names_the_cpu_project(cuda_index: Path) -> None:
    with pytest.raises(NoCompatibleWheel, match="this index has none of img2gray-cpu"):
        plan_install(cuda_index.as_uri() + "/", "img2gray-cu130", cuda_target(None))


# kernels' CUDA rule itself, release by release: tests/kernelwheel/format/test_variants_releases.py


def test_a_second_backend_of_an_installed_kernel_is_refused(cuda_index: Path) -> None:
    with_cpu = Environment("/env/bin/python", Version("3.11.7"), Version("2.14.1"), TAGS, Version("13.0"),
                           frozenset({"img2gray-cpu", "torch"}))
    with pytest.raises(NoCompatibleWheel, match=r"img2gray-cpu is already installed, and every img2gray build "
                                                r"installs the same package folder"):
        plan_install(cuda_index.as_uri() + "/", "img2gray-cu130", with_cpu)
    reinstall = Environment("/env/bin/python", Version("3.11.7"), Version("2.14.1"), TAGS, Version("13.0"),
                            frozenset({"img2gray-cu130", "torch"}))
    assert plan_install(cuda_index.as_uri() + "/", "img2gray-cu130", reinstall).project == "img2gray-cu130"


# --- ROCm: kernels 0.19.1 gives it CUDA's rule (same major, build minor <= torch.version.rocm's) -------------------

@pytest.fixture
def rocm_index(tmp_path: Path) -> Path:
    house = tmp_path / "rocm-house"
    for backend in ("rocm71", "rocm72", "rocm714"):
        standin.write_standin(house, torch=None, distribution=f"img2gray-{backend}", stable_abi_floor="2.10")
    write_index(house)
    return house / "simple"


def rocm_target(rocm: str | None) -> Environment:
    return Environment("/env/bin/python", Version("3.11.7"), Version("2.14.1"), TAGS, None, frozenset(),
                       rocm_version(rocm))


@pytest.mark.parametrize(("text", "version"), [("6.4.43482-0f2d60242", "6.4"), ("7.14.0", "7.14"), ("7", "7.0"),
                                               (None, None)])
def test_rocm_version_is_read_as_kernels_0191_reads_torch_version_rocm(text: str | None, version: str | None) -> None:
    assert rocm_version(text) == (Version(version) if version else None)


def test_a_compatible_rocm_build_is_planned(rocm_index: Path) -> None:
    assert plan_install(rocm_index.as_uri() + "/", "img2gray-rocm71", rocm_target("7.2.1")).project == "img2gray-rocm71"
    plan = plan_install(rocm_index.as_uri() + "/", "img2gray-rocm714", rocm_target("7.14.0"))  # 7.14, not 71.4
    assert "a ROCm 7.14 build runs on torch's ROCm 7.14" in plan.reason


def test_a_newer_rocm_build_is_refused_and_the_newest_that_loads_is_named(rocm_index: Path) -> None:
    with pytest.raises(NoCompatibleWheel) as raised:
        plan_install(rocm_index.as_uri() + "/", "img2gray-rocm714", rocm_target("7.2"))
    message = str(raised.value)
    assert "img2gray-rocm714 is built for ROCm 7.14, which a torch for ROCm 7.2 cannot load" in message
    assert "install img2gray-rocm72 instead" in message
    with pytest.raises(NoCompatibleWheel, match=r"built for ROCm 7\.1, and this torch has no ROCm"):
        plan_install(rocm_index.as_uri() + "/", "img2gray-rocm71", rocm_target(None))


ROCM_CASES = [("rocm71", "7.2"), ("rocm72", "7.1"), ("rocm71", "7.1"), ("rocm714", "7.14"), ("rocm714", "7.2"),
              ("rocm64", "7.1")]


@pytest.mark.parametrize("release", RELEASES)
def test_rocm_rule_against_each_release(release: str) -> None:
    """The toolkit follows the newest release. 0.19.1 agrees on every case; 0.17.2 reads ``rocm714`` as 71.4, had
    no minor rule (a ROCm build loaded only under exactly its version)."""
    ours = {(tag, system): cuda_compatible(Backend.parse(tag).version or Version("0"),
                                           Version(system)) for tag, system in ROCM_CASES}
    theirs = {(tag, system): ask(release, "backends", "rocm_loads", {"tag": tag, "system": system})
              for tag, system in ROCM_CASES}
    agree = {case for case in ROCM_CASES if ours[case] == theirs[case]}
    if release == "0.17.2":
        assert ask(release, "backends", "rocm_version", {"tag": "rocm714"}) == "71.4"
        assert agree != set(ROCM_CASES)
    else:
        assert ask(release, "backends", "rocm_version", {"tag": "rocm714"}) == "7.14"
        assert agree == set(ROCM_CASES), {case: (ours[case], theirs[case]) for case in set(ROCM_CASES) - agree}
