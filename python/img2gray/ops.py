"""The Python way into ``torch.ops.img2gray.img2gray``: input checks with clear errors, and fake kernels.

The fake (meta) kernels let ``torch.compile`` and other tracing tools infer output shapes without running
the op, so a compiled function that calls it traces with ``fullgraph=True`` and no graph break.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from ._ops import add_op_namespace_prefix, ops

__all__ = ["SUPPORTED_DTYPES", "img2gray"]

SUPPORTED_DTYPES = (torch.uint8, torch.float16, torch.bfloat16, torch.float32)
_DTYPE_NAMES = "uint8, float16, bfloat16 or float32"


def img2gray(image: Tensor, *, out: Optional[Tensor] = None) -> Tensor:
    """Convert channels-last RGB images ``(..., H, W, 3)`` to grayscale ``(..., H, W)``.

    uint8 results are bit-exact with Pillow's ``Image.convert("L")`` (ITU-R 601-2 luma); float results are
    ``0.299 r + 0.587 g + 0.114 b`` accumulated in float32 and rounded once to the input dtype. Runs on the
    image's device (CPU or CUDA). Any leading batch dimensions and any strides are accepted.

    Raises ``TypeError`` for a non-tensor or an unsupported dtype and ``ValueError`` for a wrong shape, or an
    ``out`` of the wrong shape, dtype or device.
    """
    _check_image(image)
    if out is None:
        return ops.img2gray.default(image)
    _check_out(image, out)
    return ops.img2gray.out(image, out=out)


def _check_image(image: object) -> None:
    if not isinstance(image, Tensor):
        raise TypeError(f"img2gray: expected image to be a torch.Tensor, got {type(image).__name__}")
    if image.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"img2gray: expected image of dtype {_DTYPE_NAMES}, got {image.dtype}")
    if image.dim() < 3:
        raise ValueError(
            f"img2gray: expected image of rank >= 3 with shape (..., H, W, 3), got rank {image.dim()} "
            f"with shape {tuple(image.shape)}"
        )
    if image.shape[-1] != 3:
        raise ValueError(
            f"img2gray: expected 3 channels in the last dimension (..., H, W, 3), got {image.shape[-1]} "
            f"(shape {tuple(image.shape)})"
        )


def _check_out(image: Tensor, out: object) -> None:
    if not isinstance(out, Tensor):
        raise TypeError(f"img2gray: expected out to be a torch.Tensor, got {type(out).__name__}")
    expected_shape = tuple(image.shape[:-1])
    if tuple(out.shape) != expected_shape:
        raise ValueError(f"img2gray: expected out of shape {expected_shape}, got {tuple(out.shape)}")
    if out.dtype != image.dtype:
        raise TypeError(f"img2gray: expected out of dtype {image.dtype} (the image's), got {out.dtype}")
    if out.device != image.device:
        raise ValueError(
            f"img2gray: expected out on {image.device} (the image's device), got out on {out.device}"
        )


@torch.library.register_fake(add_op_namespace_prefix("img2gray"))
def _img2gray_fake(image: Tensor) -> Tensor:
    torch._check(image.dim() >= 3 and image.shape[-1] == 3, lambda: "expected (..., H, W, 3)")
    torch._check(image.dtype in SUPPORTED_DTYPES, lambda: f"unsupported dtype {image.dtype}")
    return image.new_empty(image.shape[:-1])


@torch.library.register_fake(add_op_namespace_prefix("img2gray.out"))
def _img2gray_out_fake(image: Tensor, *, out: Tensor) -> Tensor:
    torch._check(tuple(out.shape) == tuple(image.shape[:-1]), lambda: "out has the wrong shape")
    return out


@torch.library.register_fake(add_op_namespace_prefix("_img2gray_simple"))
def _img2gray_simple_fake(image: Tensor) -> Tensor:
    return image.new_empty(image.shape[:-1])
