"""What the op must return, written once for the op tests and the benchmarks: Pillow's own ``convert("L")`` for uint8,
Pillow's fixed-point formula in plain torch (the eager and torch.compile baseline the benchmarks time), and the
documented float formula (fp32, no fused multiply-adds, rounded once to the input dtype)."""

from __future__ import annotations

import torch


def pillow_gray(rgb: torch.Tensor) -> torch.Tensor:
    """Pillow's ``convert("L")`` of a uint8 (H, W, 3) CPU tensor (numpy and Pillow imported here, on use)."""
    import numpy as np
    from PIL import Image

    return torch.from_numpy(np.asarray(Image.fromarray(rgb.contiguous().numpy(), mode="RGB").convert("L")).copy())


def fixed_point_gray(rgb: torch.Tensor) -> torch.Tensor:
    """Pillow's integer formula (``(R*19595 + G*38470 + B*7471 + 0x8000) >> 16``) in torch ops, on any device."""
    x = rgb.to(torch.int32)
    return ((x[..., 0] * 19595 + x[..., 1] * 38470 + x[..., 2] * 7471 + 32768) >> 16).to(torch.uint8)


def float_gray(image: torch.Tensor) -> torch.Tensor:
    """The documented float formula: fp32, left to right without fused multiply-adds, rounded once to the dtype."""
    x = image.float()
    return ((0.299 * x[..., 0] + 0.587 * x[..., 1]) + 0.114 * x[..., 2]).to(image.dtype)


def expected_gray(image: torch.Tensor) -> torch.Tensor:
    """What the op returns on the CPU: Pillow for uint8, the float formula for the float dtypes."""
    return pillow_gray(image) if image.dtype == torch.uint8 else float_gray(image)


def torch_gray(image: torch.Tensor) -> torch.Tensor:
    """The op in plain torch, on any device: the fixed-point formula for uint8, the float formula otherwise."""
    return fixed_point_gray(image) if image.dtype == torch.uint8 else float_gray(image)
