"""Shared fixtures: the classic wheel `make install` built, and the devices the op is tested on."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tools.wheelname import WheelName, torch_label, torch_minor

ROOT = Path(__file__).resolve().parent.parent
WHEELHOUSE = ROOT / "wheelhouse"


def _classic_wheels() -> list[Path]:
    minor = torch_minor(torch.__version__)
    return [
        p
        for p in sorted(WHEELHOUSE.glob("img2gray_*.whl"))
        if WheelName.parse(p.name).version.local == torch_label(minor)
    ]


@pytest.fixture(scope="session")
def classic_wheel() -> Path:
    """The repaired classic wheel for the running torch, as `make wheel` writes it into wheelhouse/."""
    wheels = _classic_wheels()
    if len(wheels) != 1:
        pytest.fail(f"expected one img2gray wheel for torch {torch.__version__} in {WHEELHOUSE}, found "
                    f"{[p.name for p in wheels]}: run `make wheel` (or `make test`, which builds it)")
    return wheels[0]


def _devices() -> list[object]:
    cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="requires a CUDA GPU")
    return ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, cuda])]


DEVICES = _devices()
