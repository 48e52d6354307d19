"""The Python way into ``torch.ops.img2gray.img2gray``: the wrapper, the fake kernels, the backward and the
batching rules, all through public torch API (``torch.library``, ``torch.ops``, ``torch.compiler``,
``torch.autograd.graph``).

The op checks its arguments in C++, once per call; on the success path the wrapper adds only what the stable ABI
cannot do from C++ (out='s autograd refusal and version bump), and it turns a refusal into the typed error the docs
promise (the stable-ABI build can only raise RuntimeError from C++).
The fake (meta) kernels let ``torch.compile`` and other tracing tools infer output shapes without running the
op, so a compiled function that calls it traces with ``fullgraph=True`` and no graph break. The functional
overload is differentiable for float dtypes (``torch.library.register_autograd``; the op is linear), and
``torch.vmap`` batches it into one call (``torch.library.register_vmap``).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple, TypeVar

import torch
from torch import Tensor
from torch.autograd.graph import increment_version

from ._build_info import build_info
from ._ops import add_op_namespace_prefix, impl_library, ops

__all__ = ["LUMA_WEIGHTS", "SUPPORTED_DTYPES", "img2gray"]

SUPPORTED_DTYPES = (torch.uint8, torch.float16, torch.bfloat16, torch.float32)
LUMA_WEIGHTS = (0.299, 0.587, 0.114)  # ITU-R 601-2; the float kernels' weights, and the backward's
_DTYPE_NAMES = "uint8, float16, bfloat16 or float32"
OUT_AUTOGRAD_MESSAGE = ("img2gray(): functions with out=... arguments don't support automatic differentiation, "
                        "but one of the arguments requires grad.")

# The public overloads, which traced code (torch.compile, torch.export) calls.
_functional: Callable[[Tensor], Tensor] = ops.img2gray.default
_out: Callable[..., Tensor] = ops.img2gray.out
# The private ops the eager wrapper calls (csrc/op_schema.h says why each exists), as their OpOverloads' `__call__`
# bound once: calling an OpOverload itself looks that method up on every call (~0.1 us of the ~0.25 us it costs).
_no_grad: Callable[[Tensor], Tensor] = ops._img2gray_no_grad.default.__call__
_into: Callable[[Tensor, Optional[Tensor]], None] = ops._img2gray_into.default.__call__

# The classic build refuses out= with autograd and bumps `out`'s version in C++, at the Autograd and ADInplaceOrView
# keys of both out= ops, as torch's own out= ops do, so the wrapper's eager out= path there is one C++ call. The
# stable ABI reaches neither requires_grad nor a version counter from C++: for that build, Python does both (the
# wrapper itself, and `img2gray.out`'s ADInplaceOrView kernel for direct `torch.ops` calls).
_OUT_GUARDED_IN_CPP = build_info().abi == "classic"
_library = impl_library()  # kept for the life of the module: its registrations go with it

# The private ops fall through the Autograd keys: the wrapper calls them only when no gradient is wanted (and refuses
# out= with one), so torch's boxed autograd fallback would only cost time (~0.05-0.1 us per call). Unlike a kernel
# there, a fallthrough runs nothing, so the modes below autograd (FakeTensorMode, functionalization) still see the
# call. The classic build's `_img2gray_into` keeps its C++ Autograd kernel, which refuses autograd.
for _private in ("_img2gray_no_grad",) + (() if _OUT_GUARDED_IN_CPP else ("_img2gray_into",)):
    _library.impl(_private, torch.library.fallthrough_kernel, "Autograd")  # type: ignore[no-untyped-call]


def _bump_then_into(image: Tensor, *, out: Optional[Tensor]) -> Optional[Tensor]:
    """The stable build's ADInplaceOrView kernel for `img2gray.out`, the key below autograd where torch bumps the
    version counter of an op's mutated arguments, so that autograd refuses to backward through a tensor modified
    after it was saved (for an op defined in C++ the key falls through to nothing, and a saved `out` would silently
    carry the new values). After the bump it runs `_img2gray_into` rather than going on down to the out kernels: the
    modes below (functionalization, fake tensors) then see an op that returns nothing, which torch.compile and
    torch.export's run_decompositions can functionalize; they refuse `img2gray.out` itself, whose result carries an
    alias annotation (`-> Tensor(a!)`, without torch's `out` tag, which the stable ABI can set only from torch 2.12).

    First it refuses out= with autograd, as torch's own out= ops do (and the classic build's C++ Autograd kernel):
    torch's autograd fallback, which runs just above this key for an op without an Autograd kernel, changes neither
    grad mode nor the arguments, so the refusal here is the one the classic build makes a key earlier, before anything
    is written.

    The classic build has this kernel in C++. Here it is Python, like the kernel torch.library.custom_op gives mutable
    ops, and costs ~2.7 us per direct `torch.ops` call; the wrapper's eager path checks and bumps itself and does not
    pay it. Like custom_op's kernel it leaves inference tensors alone (increment_version skips them): they have no
    version and can never be saved for backward."""
    if torch.is_grad_enabled() and (image.requires_grad or (out is not None and out.requires_grad)):
        raise RuntimeError(OUT_AUTOGRAD_MESSAGE)
    if out is not None:  # None: `_img2gray_into`'s check says what it expected
        increment_version(out)
    _into(image, out)
    return out


if not _OUT_GUARDED_IN_CPP:
    _library.impl("img2gray.out", _bump_then_into, "ADInplaceOrView")  # type: ignore[no-untyped-call]

_Tensor = torch.Tensor
_grad_enabled = torch.is_grad_enabled
_is_compiling = torch.compiler.is_compiling
_is_dynamo_compiling = torch.compiler.is_dynamo_compiling  # ~0.02 us: `return False`, which Dynamo folds to True


def img2gray(image: Tensor, *, out: Optional[Tensor] = None) -> Tensor:
    """Convert channels-last RGB images ``(..., H, W, 3)`` to grayscale ``(..., H, W)``.

    uint8 results are bit-exact with Pillow's ``Image.convert("L")`` (ITU-R 601-2 luma); float results are
    ``0.299 r + 0.587 g + 0.114 b`` accumulated in float32 and rounded once to the input dtype. Runs on the
    image's device (CPU or CUDA). Any leading batch dimensions and any strides are accepted. Differentiable
    for float dtypes (without ``out``: like torch's own ops, ``out=`` refuses arguments that require grad).

    Raises ``TypeError`` for a non-tensor, an unsupported dtype or layout, and ``ValueError`` for a wrong shape,
    or an ``out`` of the wrong shape, dtype or device; ``RuntimeError`` for an ``out`` that overlaps the image
    or itself, and for ``out=`` with autograd.
    """
    try:
        # Traced calls take the public overloads: an exported program should name the public op, and the private
        # ones exist for eager speed. A plain torch.Tensor outside Dynamo is an eager call, so only Dynamo and tensor
        # subclasses (FakeTensor under non-strict torch.export) ask torch.compiler.is_compiling(), which costs about
        # twice what the type check and Dynamo's own flag cost. (A plain tensor captured as a constant in a
        # non-strict export is taken for eager: its call is recorded as the private op it runs, which exports and
        # runs the same.)
        traced = (type(image) is not _Tensor or _is_dynamo_compiling()) and _is_compiling()
        if out is None:
            if traced:
                _check_image(image)  # traced once: the typed error, as in eager (a fake kernel's differs by torch)
                return _functional(image)
            if image.requires_grad and _grad_enabled():
                return _functional(image)
            return _no_grad(image)
        if traced or not _OUT_GUARDED_IN_CPP:
            if (image.requires_grad or out.requires_grad) and _grad_enabled():
                raise RuntimeError(OUT_AUTOGRAD_MESSAGE)
            if traced:
                return _traced_out(image, out)
            increment_version(out)  # what _bump_then_into does, without a Python kernel in the dispatcher
        _into(image, out)
        return out
    except Exception as exc:
        error = _explain(exc, image, out)
        if error is exc:
            raise
        raise error from None


def _traced_out(image: Tensor, out: Tensor) -> Tensor:
    """out= under torch.compile or torch.export: the public out overload, after the wrapper's own checks, whose typed
    errors a traced call would otherwise not give on every torch (a fake kernel's error reaches the caller differently
    from one torch version to the next). Functionalization sees `_img2gray_into` there (the out overload's
    ADInplaceOrView kernel: _bump_then_into, or its C++ twin in the classic build)."""
    _check_image(image)
    _check_out(image, out)
    return _out(image, out=out)


def _explain(exc: Exception, image: object, out: object) -> Exception:
    """The typed, one-line error for a refused call (the C++ checks ran first and said no), else ``exc``."""
    try:
        _check_image(image)
        if out is not None:
            _check_out(image, out)  # type: ignore[arg-type]
    except (TypeError, ValueError) as error:
        return error
    message = str(exc)
    if message.startswith("img2gray: expected a strided (dense) image"):
        return TypeError(message)
    if message.startswith("Batching rule not implemented for ") and "_img2gray_into" in message:
        # torch names the private op the wrapper's out= path calls; say it in the caller's terms.
        return RuntimeError("img2gray: out= is not supported under torch.vmap, as with torch's own out= ops; "
                            "use the returned tensor (img2gray(image)) instead")
    return exc


def _check_image(image: object) -> None:
    if not isinstance(image, Tensor):
        raise TypeError(f"img2gray: expected image to be a torch.Tensor, got {type(image).__name__}")
    if image.is_nested or image.layout != torch.strided:
        kind = "a nested tensor" if image.is_nested else f"layout {image.layout}"
        raise TypeError(f"img2gray: expected a strided (dense) image of shape (..., H, W, 3), got {kind} "
                        "(convert each image separately, or call .to_dense())")
    if image.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"img2gray: expected image of dtype {_DTYPE_NAMES}, got {image.dtype}")
    _check_image_shape(tuple(image.shape))


def _check_image_shape(shape: Tuple[int, ...]) -> None:
    if len(shape) < 3:
        raise ValueError(
            f"img2gray: expected image of rank >= 3 with shape (..., H, W, 3), got rank {len(shape)} "
            f"with shape {shape}"
        )
    if shape[-1] != 3:
        raise ValueError(f"img2gray: expected 3 channels in the last dimension (..., H, W, 3), got {shape[-1]} "
                         f"(shape {shape})")


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


_Kernel = TypeVar("_Kernel", bound=Callable[..., Any])


def _fake_kernel(op_name: str) -> Callable[[_Kernel], _Kernel]:
    """``torch.library.register_fake`` for one of this library's ops, as a typed decorator."""

    def register(kernel: _Kernel) -> _Kernel:
        torch.library.register_fake(add_op_namespace_prefix(op_name), kernel)
        return kernel

    return register


@_fake_kernel("img2gray")
def _img2gray_fake(image: Tensor) -> Tensor:
    if image.dim() < 3 or image.shape[-1] != 3:
        raise RuntimeError("img2gray: expected (..., H, W, 3)")
    if image.dtype not in SUPPORTED_DTYPES:
        raise RuntimeError(f"img2gray: unsupported dtype {image.dtype}")
    return image.new_empty(image.shape[:-1])


@_fake_kernel("img2gray.out")
def _img2gray_out_fake(image: Tensor, *, out: Tensor) -> Tensor:
    # Also the Meta kernel: a meta image with a CPU out (or the reverse) dispatches here, and must not "succeed".
    if out.device != image.device:
        raise RuntimeError(f"img2gray: expected out on {image.device} (the image's device), got {out.device}")
    if out.dtype != image.dtype:
        raise RuntimeError(f"img2gray: expected out of dtype {image.dtype} (the image's), got {out.dtype}")
    if tuple(out.shape) != tuple(image.shape[:-1]):
        raise RuntimeError(f"img2gray: expected out of shape {tuple(image.shape[:-1])}, got {tuple(out.shape)}")
    return out


@_fake_kernel("_img2gray_into")
def _img2gray_into_fake(image: Tensor, out: Tensor) -> None:
    _img2gray_out_fake(image, out=out)


# The functional overloads share the checks and kernels, so they share the fake kernel too.
_fake_kernel("_img2gray_no_grad")(_img2gray_fake)


def _vmap_rule(op: Callable[[Tensor], Tensor]) -> Callable[..., Tuple[Tensor, Optional[int]]]:
    """``torch.vmap`` support for a functional overload. (..., H, W, 3) -> (..., H, W) takes any leading
    dimensions, so the vmapped dimension becomes the first of them and the op runs once for the whole batch
    (without a rule, torch falls back to one call per sample and warns)."""

    def rule(info: object, in_dims: Tuple[Optional[int]], image: Tensor) -> Tuple[Tensor, Optional[int]]:
        (dim,) = in_dims
        if dim is None:
            return op(image), None
        batched = image.movedim(dim, 0)
        _check_image_shape(tuple(batched.shape[1:]))  # one sample is an image, not just the batch
        return op(batched), 0

    return rule


torch.library.register_vmap(add_op_namespace_prefix("img2gray"), _vmap_rule(_functional))
# Under vmap the wrapper's `image` is a batched tensor whose requires_grad is False whatever the tensor it wraps says,
# so the wrapper takes its no-grad shortcut there even when a gradient is wanted: the rule runs the whole op, autograd
# included, on the unwrapped batch (without it `vmap(img2gray)(x).sum().backward()` left x.grad None). Checking for
# transforms in the wrapper instead would cost every eager call ~0.07 us.
torch.library.register_vmap(add_op_namespace_prefix("_img2gray_no_grad"), _vmap_rule(_functional))


def _img2gray_backward(ctx: object, grad: Tensor) -> Tensor:
    """d gray / d image: the op is linear, so grad_image = grad[..., None] * weights, in the grad's dtype."""
    r, g, b = LUMA_WEIGHTS
    return torch.stack((grad * r, grad * g, grad * b), dim=-1)


torch.library.register_autograd(add_op_namespace_prefix("img2gray"), _img2gray_backward)
