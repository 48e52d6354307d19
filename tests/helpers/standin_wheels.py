"""Stand-in ``img2gray-cu130`` wheels for index tests, written by ``kernelwheel.wheels.wheel_writer.write_wheel``.

They follow the real naming scheme (``0.1.0+torch2.14``, ``Requires-Dist: torch==2.14.*``,
``cp39-abi3-manylinux_2_28_x86_64``) but hold a pure-Python ``img2gray`` package, so they are cheap to
make in any number: builds for other torch versions serve as decoys next to the real classic wheel.
Loaded by path (``load()`` below) so that it works whatever pytest import mode the suite uses.

``write_standin_torch`` writes a stand-in torch of any version: the distribution ``torch`` with PyPI's version and a
``torch/version.py`` as PyTorch writes it (what installers and ``install-command`` read), a few kB instead of 4 GB.
It cannot run an op; a test that installs next to it checks what the installer did, not the op.
"""

from __future__ import annotations

from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from kernelwheel.wheels.naming import WheelName, kernel_version, torch_requirement
from kernelwheel.wheels.wheel_contents import WheelContents
from kernelwheel.wheels.wheel_writer import build_metadata, write_wheel

DISTRIBUTION = "img2gray-cu130"
TAGS = ("cp39", "abi3", "manylinux_2_28_x86_64")

_PACKAGE = '''"""Stand-in for the img2gray op (pure Python), built for torch {torch}."""
import torch

__version__ = "{version}"
BUILT_FOR_TORCH = "{torch}"


def img2gray(image: torch.Tensor) -> torch.Tensor:
    weights = torch.tensor([0.299, 0.587, 0.114], dtype=torch.float32)
    return (image.to(torch.float32) @ weights).round().clamp(0, 255).to(torch.uint8)
'''

DESCRIPTION = "# img2gray (stand-in)\n\nA pure-Python stand-in wheel used by the index tests.\n"


def write_standin(
    out_dir: Path,
    *,
    torch: str | None,
    base_version: str = "0.1.0",
    distribution: str = DISTRIBUTION,
    stable_abi_floor: str | None = None,
) -> Path:
    """Write ``<distribution>-<base_version>+torch<torch>`` (or a stable-ABI build without a label)."""
    minor = Version(torch) if torch is not None else None
    name = WheelName(distribution, kernel_version(base_version, minor), *TAGS)
    if minor is not None:
        requirement = torch_requirement(minor)
    elif stable_abi_floor is not None:
        requirement = torch_requirement(Version(stable_abi_floor), stable_abi=True)
    else:
        requirement = Requirement("torch")
    metadata = build_metadata(
        name,
        requires_dist=[requirement],
        requires_python=SpecifierSet(">=3.9"),
        summary="RGB to grayscale (stand-in for index tests)",
        base={
            "description": DESCRIPTION,
            "description_content_type": "text/markdown",
            "license": "Apache-2.0",
        },
    )
    source = _PACKAGE.format(torch=torch or "stable", version=name.version)
    contents = WheelContents(name=name, metadata=metadata, files={"img2gray/__init__.py": source.encode()})
    return write_wheel(contents, out_dir)


_TORCH_VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '{version}'
debug = False
cuda: Optional[str] = {cuda}
git_version = 'stand-in'
hip: Optional[str] = None
rocm: Optional[str] = None
xpu: Optional[str] = None
"""


def write_standin_torch(out_dir: Path, version: str, *, cuda: str | None = "13.0") -> Path:
    """``torch-<version>-py3-none-any.whl``: PyPI's torch ``version`` (its metadata) for CUDA ``cuda`` (its
    ``torch/version.py`` says ``<version>+cu130``, as PyPI's torch does; None: a CPU-only ``+cpu`` torch)."""
    name = WheelName("torch", Version(version), "py3", "none", "any")
    local = f"cu{cuda.replace('.', '')}" if cuda is not None else "cpu"
    version_py = _TORCH_VERSION_PY.format(version=f"{version}+{local}", cuda=repr(cuda) if cuda else "None")
    files = {"torch/__init__.py": b'"""A stand-in for torch: its version and CUDA, no ops."""\nfrom .version import __version__\n',
             "torch/version.py": version_py.encode()}
    metadata = build_metadata(name, requires_python=SpecifierSet(">=3.9"), summary="stand-in torch for install tests")
    return write_wheel(WheelContents(name=name, metadata=metadata, files=files), out_dir)
