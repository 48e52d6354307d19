"""python_depends: logical python-depends → pip requirements, decided as each supported kernels release decides
them (asked in the release's oracle venv)."""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement

from kernelwheel.format.python_depends import depends_requirements, known_names, map_depends, read_depends
from kernelwheel.io.errors import InvalidVariant
from tests.helpers.kernels_releases import RELEASES, ask

NAMES = ["einops", "helion", "tvm-ffi", "nvidia-cutlass-dsl", "onednn", "nki", "kepler-22b", "numpy>=2", "torch"]
BACKENDS = ["cpu", "cuda", "rocm", "xpu", "metal", "neuron"]


@pytest.mark.parametrize("release", RELEASES)
def test_known_and_unknown_names_match_kernels(release: str) -> None:
    cases = [[name, backend] for backend in BACKENDS for name in NAMES]
    theirs = ask(release, "format_data", "python_depends_accepts", cases)
    ours = [name not in map_depends([name], backend).unknown for name, backend in cases]
    assert list(zip(cases, ours)) == list(zip(cases, theirs))


def test_logical_names_become_pip_projects() -> None:
    mapped = map_depends(["tvm-ffi", "einops", "nvidia-cutlass-dsl", "einops"], "cuda")
    assert [str(r) for r in mapped.requirements] == ["apache-tvm-ffi", "einops", "nvidia-cutlass-dsl"]
    assert [str(r) for r in map_depends(["onednn"], "xpu").requirements] == ["onednn-devel"]
    assert known_names("cpu") == ("einops", "helion", "tvm-ffi")


def test_cuda_only_name_on_a_cpu_variant_is_an_error_naming_it() -> None:
    with pytest.raises(InvalidVariant, match=r"build/torch-cpu/metadata.json: python-depends 'nvidia-cutlass-dsl' "
                                             r"is not a dependency kernels knows for the cpu backend"):
        depends_requirements(["nvidia-cutlass-dsl"], "cpu", "build/torch-cpu", allow_unknown=False)


def test_unknown_names_pass_through_only_when_allowed() -> None:
    got = depends_requirements(["einops", "numpy>=2"], "cpu", "build/v", allow_unknown=True)
    assert got == [Requirement("einops"), Requirement("numpy>=2")]
    with pytest.raises(InvalidVariant, match="is not a requirement"):
        depends_requirements(["not a requirement!"], "cpu", "build/v", allow_unknown=True)


@pytest.mark.parametrize("value", ["numpy", 123, [None, 1], {"numpy": 1}])
def test_python_depends_must_be_a_list_of_strings(value: object) -> None:
    with pytest.raises(InvalidVariant, match="python-depends must be a list of names"):
        read_depends(value, "build/v")
    assert read_depends(None, "build/v") == []


@pytest.mark.parametrize("entry", ["torch==2.1", "torch", "Torch>=2", "TORCH[cuda]", "torch ; python_version>'3'"])
def test_a_torch_requirement_is_refused_even_when_unknown_names_pass(entry: str) -> None:
    # found by fuzzing: ["torch==2.1"] gave the wheel a second torch pin, and the index then refused it
    with pytest.raises(InvalidVariant, match=r"build/v/metadata.json: python-depends entry .* pins (?i:torch); the "
                                             r"framework requirement comes from the variant name"):
        depends_requirements(["einops", entry], "cpu", "build/v", allow_unknown=True)


def test_a_direct_url_reference_is_refused() -> None:
    with pytest.raises(InvalidVariant, match="is a direct URL reference"):
        depends_requirements(["evil @ https://example.invalid/evil-1.0-py3-none-any.whl"], "cpu", "build/v",
                             allow_unknown=True)
