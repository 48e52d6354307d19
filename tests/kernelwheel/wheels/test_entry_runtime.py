"""kernelwheel.wheels.entry_runtime: the code an entry package runs, on its own (it is copied into wheels).

The CUDA rule is compared with kernels 0.17.2's own (``kernels.archs``) on a grid of declared archs and device
capabilities. On a machine with a GPU, an entry is generated for a build compiled for other archs and imported.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kernelwheel.wheels import entry_runtime
from kernelwheel.wheels.entry_package import Entry, entry_source
from tests.helpers.kernels_releases import RELEASES, ask

ARCHS = ["7.5", "8.0", "8.6", "8.9", "9.0", "9.0a", "10.0f", "10.0a", "12.0", "8.0+PTX", "9.0a+PTX", "10.0f+PTX",
         "sm_90", "9", "x.y", ""]
CAPABILITIES = [(7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (10, 3), (12, 0), (12, 1)]


@pytest.mark.parametrize("release", RELEASES)
def test_cuda_rule_matches_kernels(release: str) -> None:
    single = [(arch, capability) for arch in ARCHS for capability in CAPABILITIES]
    many = [(archs, capability) for archs in (["8.0", "9.0"], ["9.0a"], ["sm_90"], ["sm_90", "8.0"],
                                              ["10.0f", "12.0"], ["8.0+PTX"]) for capability in CAPABILITIES]
    theirs = ask(release, "format_data", "cuda_archs", {"single": single, "any": many})
    assert [entry_runtime.cuda_arch_supports(a, c) for a, c in single] == theirs["single"]
    assert [entry_runtime.supports_cuda_capability(a, c) for a, c in many] == theirs["any"]


@pytest.mark.needs_torch
def test_device_problem_names_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    # Without a GPU here, torch.cuda is given one GPU's answers; the decision is the real code (and on a GPU
    # machine, test_entry_on_this_gpu runs it for real).
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    assert entry_runtime.device_problem("cuda", ["8.0", "9.0"]) is None
    assert entry_runtime.device_problem("cuda", ["8.0", "8.6"]) == "this GPU has CUDA capability 9.0"
    assert entry_runtime.device_problem("cpu", ["8.0"]) is None
    monkeypatch.setenv(entry_runtime.SKIP_ARCH_CHECK, "1")
    assert entry_runtime.device_problem("cuda", ["8.0", "8.6"]) is None


def _site(root: Path, archs: list[str]) -> Path:
    """A build package and the entry generated for it, as a wheel installs them."""
    (root / "_demo_build_abc").mkdir(parents=True)
    (root / "_demo_build_abc" / "__init__.py").write_text("VALUE = 42\n")
    (root / "demo").mkdir()
    entry = Entry("_demo_build_abc", "demo", "torch-stable-abi210-cu130-x86_64-linux", "cuda", tuple(archs))
    (root / "demo" / "__init__.py").write_bytes(entry_source(entry))
    return root


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.mark.needs_torch
@pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA GPU")
def test_entry_on_this_gpu(tmp_path: Path) -> None:
    import torch

    major, minor = torch.cuda.get_device_capability()
    own = _site(tmp_path / "own", [f"{major}.{minor}"])
    ok = subprocess.run([sys.executable, "-c", "import demo; print(demo.VALUE)"], cwd=own, capture_output=True,
                        text=True)
    assert ok.returncode == 0 and ok.stdout.strip() == "42", ok.stderr
    other = _site(tmp_path / "other", ["7.5"] if major != 7 else ["12.0"])
    refused = subprocess.run([sys.executable, "-c", "import demo"], cwd=other, capture_output=True, text=True)
    assert refused.returncode == 1
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: demo (torch-stable-abi210-cu130-x86_64-linux) does not support the current "
                           f"device: this GPU has CUDA capability {major}.{minor}")
