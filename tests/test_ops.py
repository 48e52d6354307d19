"""The op contract (python/img2gray/ops.py and csrc/): results, layouts, dtypes, errors, opcheck, compile, export,
autograd, vmap.

Every check is written once and runs on the CPU and, where a GPU exists, on CUDA.
"""

from __future__ import annotations

import ast
import gc
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import img2gray
from tests.helpers.luma_reference import float_gray, pillow_gray
from tests.helpers.repo import REPO_ROOT


def _devices() -> list[object]:
    cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="requires a CUDA GPU")
    return ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, cuda])]


DEVICES = _devices()
FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16]
ALL_DTYPES = [torch.uint8, *FLOAT_DTYPES]


def all_rgb_triples() -> torch.Tensor:
    """Every one of the 2^24 RGB triples, as a 4096×4096 image."""
    v = torch.arange(1 << 24, dtype=torch.int32)
    return torch.stack([(v >> 16) & 255, (v >> 8) & 255, v & 255], dim=-1).to(torch.uint8).reshape(4096, 4096, 3)


def random_image(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> torch.Tensor:
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, dtype=dtype, device=device)
    return torch.rand(shape, dtype=torch.float32, device=device).to(dtype)


OUT_PATHS: dict[str, Callable[[torch.Tensor, torch.Tensor], object]] = {
    "img2gray(out=)": lambda image, out: img2gray.img2gray(image, out=out),
    "torch.ops img2gray.out": lambda image, out: torch.ops.img2gray.img2gray.out(image, out=out),
}


@pytest.mark.parametrize("device", DEVICES)
def test_uint8_matches_pillow_for_every_rgb_triple(device: str) -> None:
    rgb = all_rgb_triples()
    gray = img2gray.img2gray(rgb.to(device)).cpu()
    expected = pillow_gray(rgb)
    mismatches = (gray != expected).nonzero()
    assert mismatches.numel() == 0, f"{len(mismatches)} triples differ from Pillow, first at {mismatches[:3].tolist()}"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("photo", sorted((REPO_ROOT / "samples").glob("*.png")), ids=lambda p: p.name)
def test_uint8_matches_pillow_on_photographs(photo: Path, device: str) -> None:
    with Image.open(photo) as image:
        rgb = torch.from_numpy(np.asarray(image.convert("RGB")).copy())
    assert torch.equal(img2gray.img2gray(rgb.to(device)).cpu(), pillow_gray(rgb))


@pytest.mark.parametrize("device", DEVICES)
def test_float32_relative_error_against_float64(device: str) -> None:
    image = torch.rand(64, 257, 3, dtype=torch.float64) * 10 + 1e-3
    ref = 0.299 * image[..., 0] + 0.587 * image[..., 1] + 0.114 * image[..., 2]
    gray = img2gray.img2gray(image.float().to(device)).cpu().double()
    assert ((gray - ref).abs() / ref.abs()).max().item() <= 1e-6


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_float_dtypes_are_the_fp32_value_rounded_once(device: str, dtype: torch.dtype) -> None:
    image = random_image((3, 33, 65, 3), dtype, device)
    gray = img2gray.img2gray(image)
    assert gray.dtype == dtype and gray.device == image.device
    assert torch.equal(gray.cpu(), float_gray(image.cpu()))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(1, 1, 3), (1, 7, 3), (3, 5, 3), (4097, 3, 3), (2, 3, 31, 17, 3)], ids=str)
def test_shapes_and_leading_batch_dims(device: str, dtype: torch.dtype, shape: tuple[int, ...]) -> None:
    image = random_image(shape, dtype, device)
    gray = img2gray.img2gray(image)
    assert gray.shape == shape[:-1]
    assert torch.equal(gray.cpu(), img2gray.img2gray(image.cpu()))


@pytest.mark.parametrize("device", DEVICES)
def test_cpu_and_device_results_are_identical(device: str) -> None:
    for dtype in ALL_DTYPES:
        image = random_image((37, 129, 3), dtype, "cpu")
        assert torch.equal(img2gray.img2gray(image.to(device)).cpu(), float_gray(image) if dtype != torch.uint8
                           else pillow_gray(image))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_non_contiguous_input(device: str, dtype: torch.dtype) -> None:
    base = random_image((40, 50, 3), dtype, device)
    views = {
        "transposed": base.transpose(0, 1),
        "strided": base[::2, 1::3],
        "channels-first storage": random_image((3, 40, 50), dtype, device).permute(1, 2, 0),
        "offset (misaligned)": base.flatten()[1 : 1 + 39 * 50 * 3].reshape(39, 50, 3),
    }
    for name, view in views.items():
        assert torch.equal(img2gray.img2gray(view), img2gray.img2gray(view.contiguous())), name


@pytest.mark.parametrize("device", DEVICES)
def test_out_overload_writes_into_out(device: str) -> None:
    image = random_image((4, 9, 3), torch.uint8, device)
    out = torch.full((4, 9), 7, dtype=torch.uint8, device=device)
    result = img2gray.img2gray(image, out=out)
    assert result.data_ptr() == out.data_ptr()
    assert torch.equal(out, img2gray.img2gray(image))
    strided = torch.zeros(9, 4, dtype=torch.uint8, device=device).t()
    img2gray.img2gray(image, out=strided)
    assert torch.equal(strided, img2gray.img2gray(image))
    assert torch.equal(torch.ops.img2gray.img2gray.out(image, out=out), out)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(0, 5, 3), (5, 0, 3), (2, 0, 0, 3)], ids=str)
def test_empty_input_gives_empty_output(device: str, shape: tuple[int, ...]) -> None:
    gray = img2gray.img2gray(torch.empty(shape, dtype=torch.uint8, device=device))
    assert gray.shape == shape[:-1] and gray.numel() == 0


@pytest.mark.parametrize(
    ("image", "error", "message"),
    [
        (torch.zeros(4, 4, 4, dtype=torch.uint8), ValueError, "expected 3 channels in the last dimension (..., H, W, 3), got 4"),
        (torch.zeros(4, 3, dtype=torch.uint8), ValueError, "expected image of rank >= 3 with shape (..., H, W, 3), got rank 2"),
        (torch.zeros(4, 4, 3, dtype=torch.int32), TypeError, "expected image of dtype uint8, float16, bfloat16 or float32, got torch.int32"),
        (np.zeros((4, 4, 3), dtype=np.uint8), TypeError, "expected image to be a torch.Tensor, got ndarray"),
    ],
    ids=["channels", "rank", "dtype", "not-a-tensor"],
)
def test_bad_image_is_refused_with_expected_and_given(image: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        img2gray.img2gray(image)  # type: ignore[arg-type]
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("out", "error", "message"),
    [
        (torch.empty(4, 5, dtype=torch.uint8), ValueError, "expected out of shape (4, 4), got (4, 5)"),
        (torch.empty(4, 4, dtype=torch.float32), TypeError, "expected out of dtype torch.uint8 (the image's), got torch.float32"),
        (torch.empty(4, 4, dtype=torch.uint8, device="meta"), ValueError, "expected out on cpu (the image's device), got out on meta"),
    ],
    ids=["shape", "dtype", "device"],
)
def test_bad_out_is_refused(out: torch.Tensor, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        img2gray.img2gray(torch.zeros(4, 4, 3, dtype=torch.uint8), out=out)
    assert message in str(info.value)


def test_the_op_itself_checks_its_input() -> None:
    """Callers of torch.ops.img2gray.img2gray directly get the C++ checks, with the same messages in both builds.

    The classic build raises ValueError/TypeError (TORCH_CHECK_VALUE/TYPE); the stable ABI has only
    STD_TORCH_CHECK, which surfaces as RuntimeError (the Python wrapper raises the typed errors first).
    """
    classic = img2gray.build_info().abi == "classic"
    with pytest.raises(ValueError if classic else RuntimeError,
                       match=r"expected an RGB image of shape \(..., H, W, 3\), got shape \[2, 2\]"):
        torch.ops.img2gray.img2gray(torch.zeros(2, 2, dtype=torch.uint8))
    with pytest.raises(TypeError if classic else RuntimeError,
                       match="expected dtype uint8, float16, bfloat16 or float32, got Double"):
        torch.ops.img2gray.img2gray(torch.zeros(2, 2, 3, dtype=torch.float64))
    with pytest.raises(TypeError if classic else RuntimeError, match=r"expected out of dtype Byte \(the image's\), got Float"):
        torch.ops.img2gray.img2gray.out(torch.zeros(2, 2, 3, dtype=torch.uint8), out=torch.empty(2, 2))
    with pytest.raises(ValueError if classic else RuntimeError, match=r"expected out of shape \[2, 2\], got \[2, 3\]"):
        torch.ops.img2gray.img2gray.out(torch.zeros(2, 2, 3, dtype=torch.uint8), out=torch.empty(2, 3, dtype=torch.uint8))


def test_the_wrappers_out_path_op_runs_the_out_overloads_checks_and_kernel() -> None:
    """_img2gray_into (the wrapper's eager out= path) is img2gray.out without the keyword and the return."""
    classic = img2gray.build_info().abi == "classic"
    image = random_image((3, 5, 3), torch.uint8, "cpu")
    out = torch.empty(3, 5, dtype=torch.uint8)
    assert torch.ops.img2gray._img2gray_into(image, out) is None
    assert torch.equal(out, torch.ops.img2gray.img2gray(image))
    with pytest.raises(ValueError if classic else RuntimeError, match=r"expected out of shape \[3, 5\], got \[5, 3\]"):
        torch.ops.img2gray._img2gray_into(image, torch.empty(5, 3, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="out overlaps the image's memory"):
        torch.ops.img2gray._img2gray_into(image, image[..., 1])
    with pytest.raises(TypeError if classic else RuntimeError, match="expected a strided"):
        torch.ops.img2gray._img2gray_into(image.to_sparse(), out)


BACKEND_KEYS = ("CPU", "CUDA", "Meta", "NestedTensorCPU", "NestedTensorCUDA", "SparseCPU", "SparseCUDA",
                "SparseCsrCPU", "SparseCsrCUDA")


@pytest.mark.parametrize("private", ["_img2gray_no_grad", "_img2gray_into"])
def test_the_wrappers_private_ops_have_kernels_wherever_the_op_has(private: str) -> None:
    """The wrapper's eager paths take every call the op would: same backends (CUDA in a CUDA build), same refusals."""
    def keys(name: str) -> list[str]:
        return [k for k in BACKEND_KEYS if torch._C._dispatch_has_kernel_for_dispatch_key(f"img2gray::{name}", k)]

    assert keys(private) == keys("img2gray") and "CPU" in keys("img2gray")
    assert ("CUDA" in keys(private)) == (img2gray.build_info().backend != "cpu")


@pytest.mark.parametrize("device", DEVICES)
def test_the_wrappers_no_grad_op_runs_the_functional_overloads_checks_and_kernel(device: str) -> None:
    """_img2gray_no_grad (the wrapper's eager path when no gradient is wanted) is img2gray without its autograd."""
    classic = img2gray.build_info().abi == "classic"
    for dtype in ALL_DTYPES:
        image = random_image((2, 3, 5, 3), dtype, device)[:, :, ::2]  # strided: the op's dense() copy too
        assert torch.equal(torch.ops.img2gray._img2gray_no_grad(image), torch.ops.img2gray.img2gray(image))
    with pytest.raises(ValueError if classic else RuntimeError, match=r"expected an RGB image .* got shape \[3, 4\]"):
        torch.ops.img2gray._img2gray_no_grad(torch.zeros(3, 4, device=device))
    with pytest.raises(TypeError if classic else RuntimeError, match="expected a strided"):
        torch.ops.img2gray._img2gray_no_grad(torch.zeros(2, 2, 3, device=device).to_sparse())


@pytest.fixture
def autograd_fallback_warns() -> Iterator[None]:
    """torch's default: an op without an autograd kernel runs torch's fallback, which marks its outputs as requiring
    grad through a node that warns on backward."""
    mode = torch._C._get_autograd_fallback_mode()
    torch._C._set_autograd_fallback_mode("warn")
    try:
        yield
    finally:
        torch._C._set_autograd_fallback_mode(mode)


@pytest.mark.usefixtures("autograd_fallback_warns")
def test_the_wrappers_private_ops_fall_through_the_autograd_keys() -> None:
    """The wrapper calls them only when no gradient is wanted, so torch's boxed fallback is skipped (it would mark the
    result as requiring grad); the classic build's _img2gray_into keeps its C++ kernel, which refuses."""
    image = random_image((3, 5, 3), torch.float32, "cpu").requires_grad_()
    gray = torch.ops.img2gray._img2gray_no_grad(image)
    assert gray.grad_fn is None and torch.equal(gray, torch.ops.img2gray.img2gray(image.detach()))
    out = torch.empty(3, 5)
    if img2gray.build_info().abi == "classic":
        with pytest.raises(RuntimeError, match=r"out=\.\.\. arguments don't support automatic differentiation"):
            torch.ops.img2gray._img2gray_into(image, out)
    else:
        torch.ops.img2gray._img2gray_into(image, out)
        assert torch.equal(out, gray)


RELEASE_CASES: dict[str, Callable[[], tuple[Callable[..., object], tuple[torch.Tensor, ...]]]] = {
    "functional": lambda: (torch.ops.img2gray.img2gray, (torch.rand(4, 5, 3),)),
    "no-grad": lambda: (torch.ops.img2gray._img2gray_no_grad, (torch.rand(4, 5, 3),)),
    "strided image (a copy)": lambda: (torch.ops.img2gray.img2gray, (torch.rand(4, 5, 3)[:, ::2],)),
    "out=": lambda: (lambda a, o: torch.ops.img2gray.img2gray.out(a, out=o), (torch.rand(4, 5, 3), torch.empty(4, 5))),
    "into": lambda: (torch.ops.img2gray._img2gray_into, (torch.rand(4, 5, 3), torch.empty(4, 5))),
    "into a strided out (a copy)": lambda: (torch.ops.img2gray._img2gray_into,
                                            (torch.rand(4, 3, 3), torch.empty(4, 6)[:, ::2])),
    "refused shape": lambda: (torch.ops.img2gray._img2gray_into, (torch.rand(4, 5, 3), torch.empty(5, 4))),
    "refused layout": lambda: (torch.ops.img2gray._img2gray_into, (torch.rand(4, 5, 3).to_sparse(), torch.empty(4, 5))),
}


@pytest.mark.parametrize("case", RELEASE_CASES)
def test_each_kernel_releases_the_tensors_it_was_given_and_returned(case: str) -> None:
    """The stable build's kernels (csrc/stable/torch_binding.cpp, boxed by TORCH_BOX) own their arguments' handles:
    once Python drops a tensor, nothing in C++ may keep it alive (torch keeps a tensor's Python object, and so a
    weak reference to it, alive while C++ holds the tensor), refusals included. A double release would crash."""
    op, tensors = RELEASE_CASES[case]()
    refs = [weakref.ref(t) for t in tensors]
    try:
        result = op(*tensors)
    except (RuntimeError, TypeError, ValueError):
        result = None
    if isinstance(result, torch.Tensor):
        refs.append(weakref.ref(result))
    del op, tensors, result
    gc.collect()
    assert [ref() is None for ref in refs] == [True] * len(refs)


def test_the_op_refuses_an_out_that_overlaps_its_input() -> None:
    image = torch.zeros(4, 4, 3, dtype=torch.uint8)
    with pytest.raises(RuntimeError, match="out overlaps the image's memory"):
        torch.ops.img2gray.img2gray.out(image, out=image[..., 0])
    with pytest.raises(RuntimeError, match=r"more than one element of out may refer to a single memory location"):
        torch.ops.img2gray.img2gray.out(image, out=torch.zeros(1, dtype=torch.uint8).expand(4, 4))


@pytest.mark.parametrize("device", DEVICES)
def test_a_self_overlapping_out_is_refused(device: str) -> None:
    """as_strided((4, 4), (1, 1)) puts 16 elements in 7 bytes: ATen calls that "too hard" and would write
    through it; the op refuses it, with nothing written. A non-contiguous out that does not overlap is fine."""
    image = random_image((4, 4, 3), torch.uint8, device)
    base = torch.full((16,), 7, dtype=torch.uint8, device=device)
    for call in (lambda: torch.ops.img2gray.img2gray.out(image, out=base.as_strided((4, 4), (1, 1))),
                 lambda: img2gray.img2gray(image, out=base.as_strided((4, 4), (1, 1))),
                 lambda: img2gray.img2gray(image, out=base.as_strided((4, 4), (2, 1)))):
        with pytest.raises(RuntimeError, match=r"out may refer to a single memory location \(internal overlap\)"):
            call()
        assert torch.equal(base, torch.full((16,), 7, dtype=torch.uint8, device=device))
    roomy = torch.zeros(64, dtype=torch.uint8, device=device).as_strided((4, 4), (3, 12))
    assert torch.equal(img2gray.img2gray(image, out=roomy), img2gray.img2gray(image))


def test_an_out_on_another_device_is_refused_not_skipped() -> None:
    """A meta tensor wins dispatch, so these reached the fake kernel, which returned `out` without computing."""
    image = random_image((4, 4, 3), torch.uint8, "cpu")
    meta_out = torch.empty(4, 4, dtype=torch.uint8, device="meta")
    with pytest.raises(RuntimeError, match=r"expected out on cpu \(the image's device\), got meta"):
        torch.ops.img2gray.img2gray.out(image, out=meta_out)
    cpu_out = torch.full((4, 4), 9, dtype=torch.uint8)
    with pytest.raises(RuntimeError, match=r"expected out on meta \(the image's device\), got cpu"):
        torch.ops.img2gray.img2gray.out(image.to("meta"), out=cpu_out)
    assert torch.equal(cpu_out, torch.full((4, 4), 9, dtype=torch.uint8))
    with pytest.raises(ValueError, match=r"expected out on meta \(the image's device\), got out on cpu"):
        img2gray.img2gray(image.to("meta"), out=cpu_out)
    # Both on meta is shape inference, and allowed.
    assert img2gray.img2gray(image.to("meta")).shape == (4, 4)
    assert torch.ops.img2gray.img2gray.out(image.to("meta"), out=meta_out) is meta_out


def test_out_none_through_torch_ops_is_a_clear_error() -> None:
    classic = img2gray.build_info().abi == "classic"
    with pytest.raises(TypeError if classic else RuntimeError, match=r"^img2gray: expected out to be a Tensor, got None$"):
        torch.ops.img2gray.img2gray.out(torch.zeros(2, 2, 3, dtype=torch.uint8), out=None)


@pytest.mark.parametrize(
    "image",
    [
        pytest.param(lambda: torch.nested.nested_tensor([torch.rand(2, 2, 3), torch.rand(3, 2, 3)]), id="nested"),
        pytest.param(lambda: torch.rand(2, 2, 3).to_sparse(), id="sparse"),
    ],
)
def test_nested_and_sparse_images_are_clear_errors(image: object) -> None:
    tensor = image()  # type: ignore[operator]
    with pytest.raises(TypeError, match=r"^img2gray: expected a strided \(dense\) image of shape \(\.\.\., H, W, 3\), got "):
        img2gray.img2gray(tensor)
    classic = img2gray.build_info().abi == "classic"
    with pytest.raises(TypeError if classic else RuntimeError, match=r"^img2gray: expected a strided \(dense\) image"):
        torch.ops.img2gray.img2gray(tensor)


def test_a_jagged_nested_image_is_a_clear_error() -> None:
    jagged = torch.nested.nested_tensor([torch.rand(2, 2, 3), torch.rand(3, 2, 3)], layout=torch.jagged)
    with pytest.raises(TypeError, match=r"expected a strided \(dense\) image .* got a nested tensor"):
        img2gray.img2gray(jagged)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_opcheck(device: str, dtype: torch.dtype) -> None:
    image = random_image((2, 5, 7, 3), dtype, device)
    torch.library.opcheck(torch.ops.img2gray.img2gray.default, (image,))
    out = torch.empty(2, 5, 7, dtype=dtype, device=device)
    # Every test, test_aot_dispatch_dynamic included: functionalization refuses a custom op whose result carries an
    # alias annotation (`-> Tensor(a!)`), but below autograd img2gray.out runs _img2gray_into, which returns nothing.
    torch.library.opcheck(torch.ops.img2gray.img2gray.out, (image,), {"out": out})
    # The wrapper's eager paths; the no-grad functional op has no autograd kernel (torch's fallback), which opcheck's
    # registration test allows.
    torch.library.opcheck(torch.ops.img2gray._img2gray_into.default, (image, out))
    torch.library.opcheck(torch.ops.img2gray._img2gray_no_grad.default, (image,))


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph_has_no_graph_break(device: str) -> None:
    def normalised_gray(image: torch.Tensor) -> torch.Tensor:
        return img2gray.img2gray(image).float() / 255.0

    torch._dynamo.reset()
    explanation = torch._dynamo.explain(normalised_gray)(random_image((8, 8, 3), torch.uint8, device))
    assert explanation.graph_break_count == 0, explanation.break_reasons
    compiled = torch.compile(normalised_gray, fullgraph=True)
    for shape in [(16, 24, 3), (2, 5, 7, 3)]:
        image = random_image(shape, torch.uint8, device)
        assert torch.equal(compiled(image), normalised_gray(image))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("path", OUT_PATHS)
def test_torch_compile_writes_into_out(device: str, path: str) -> None:
    """out= under torch.compile: functionalized (below autograd img2gray.out runs `_img2gray_into`, which returns
    nothing) and written into the caller's buffer, whose version torch bumps."""
    compiled = torch.compile(OUT_PATHS[path], fullgraph=True)
    for shape in [(16, 24, 3), (2, 5, 7, 3)]:
        image, out = random_image(shape, torch.uint8, device), torch.zeros(shape[:-1], dtype=torch.uint8, device=device)
        version = out._version
        assert compiled(image, out) is out
        assert torch.equal(out, img2gray.img2gray(image)) and out._version > version


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_refuses_bad_arguments_as_eager_does(device: str) -> None:
    """The wrapper checks before a traced call too: a fake kernel's error reaches the caller differently by torch
    version (torch 2.13 wrapped it in a TorchRuntimeError, 2.14 fell back to eager)."""
    image = random_image((4, 5, 3), torch.float32, device)
    with pytest.raises(ValueError, match=r"expected out of shape \(4, 5\), got \(1, 5\)"):
        torch.compile(lambda image, out: img2gray.img2gray(image, out=out))(image, torch.empty(1, 5, device=device))
    with pytest.raises(TypeError, match=r"expected out of dtype torch.float32 \(the image's\), got torch.float16"):
        torch.compile(lambda image, out: img2gray.img2gray(image, out=out))(
            image, torch.empty(4, 5, dtype=torch.float16, device=device))
    with pytest.raises(ValueError, match=r"expected 3 channels in the last dimension \(\.\.\., H, W, 3\), got 4"):
        torch.compile(img2gray.img2gray)(torch.zeros(4, 5, 4, device=device))


class _GrayScaled(torch.nn.Module):
    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return img2gray.img2gray(image) * 2


class _GrayIntoBuffer(torch.nn.Module):
    def forward(self, image: torch.Tensor) -> torch.Tensor:
        gray = torch.empty(image.shape[:-1], dtype=image.dtype, device=image.device)
        img2gray.img2gray(image, out=gray)
        return gray + 1


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("strict", [False, True], ids=["non-strict", "strict"])
@pytest.mark.parametrize(("module", "public_op"), [(_GrayScaled, "img2gray.img2gray.default"), (_GrayIntoBuffer, "img2gray.img2gray.out")],
                         ids=["functional", "out"])
def test_torch_export_records_the_public_op(device: str, strict: bool, module: type[torch.nn.Module],
                                            public_op: str) -> None:
    """An exported program names the public overloads, never the wrapper's eager-only private ops (non-strict export
    traces the wrapper in Python without Dynamo and hands it FakeTensors, which is what tells it apart), and it
    decomposes to a functional program, out= included."""
    image = random_image((4, 5, 3), torch.float32, device)
    program = torch.export.export(module(), (image,), strict=strict)
    ops = [str(node.target) for node in program.graph.nodes if str(node.target).startswith("img2gray.")]
    assert ops == [public_op]
    assert torch.equal(program.module()(image), module()(image))
    assert torch.equal(program.run_decompositions().module()(image), module()(image))


@pytest.mark.parametrize("device", DEVICES)
def test_a_non_strict_export_runs_a_captured_constant_as_eager_does(device: str) -> None:
    """A plain tensor the module captures (not an input) reaches the wrapper as itself under non-strict export, so the
    wrapper takes the call for an eager one and the program records the private op it runs: it must still run and
    decompose to the eager result."""
    constant = random_image((4, 5, 3), torch.uint8, device)

    class WithConstant(torch.nn.Module):
        def forward(self, image: torch.Tensor) -> torch.Tensor:
            return img2gray.img2gray(constant) // 2 + img2gray.img2gray(image) // 2

    image = random_image((4, 5, 3), torch.uint8, device)
    program = torch.export.export(WithConstant(), (image,), strict=False)
    expected = WithConstant()(image)
    assert torch.equal(program.module()(image), expected)
    assert torch.equal(program.run_decompositions().module()(image), expected)


def luma_jacobian(pixels: int, dtype: torch.dtype) -> torch.Tensor:
    """The op's analytic derivative on `pixels` pixels: gray[p] = sum_c w_c * rgb[p, c], so d gray / d rgb is
    block-diagonal with (0.299, 0.587, 0.114) in each row."""
    weights = torch.tensor(img2gray.ops.LUMA_WEIGHTS, dtype=torch.float64)
    return torch.kron(torch.eye(pixels, dtype=torch.float64), weights[None, :]).to(dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck_float32(device: str) -> None:
    """float64 is not a supported dtype, so gradcheck runs in float32: the op is linear, so the finite
    difference only carries rounding (|x| <= 1, eps 1e-2 → about 1e-5); atol 1e-3 leaves room for that."""
    image = torch.rand(2, 3, 5, 3, dtype=torch.float32, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(torch.ops.img2gray.img2gray, (image,), eps=1e-2, atol=1e-3, rtol=1e-3,
                                    fast_mode=False)
    assert torch.autograd.gradcheck(img2gray.img2gray, (image,), eps=1e-2, atol=1e-3, rtol=1e-3)
    assert torch.autograd.gradgradcheck(img2gray.img2gray, (image,), eps=1e-2, atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_jacobian_is_the_analytic_linear_map(device: str, dtype: torch.dtype) -> None:
    image = random_image((3, 4, 3), dtype, device).requires_grad_()
    jacobian = torch.autograd.functional.jacobian(img2gray.img2gray, image)  # (3, 4) x (3, 4, 3)
    assert jacobian.dtype == dtype
    assert torch.equal(jacobian.reshape(12, 36).cpu(), luma_jacobian(12, dtype))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_backward_through_a_strided_view(device: str, dtype: torch.dtype) -> None:
    base = random_image((6, 8, 3), dtype, device).requires_grad_()
    view = base.transpose(0, 1)[::2]
    grad = random_image((4, 6), dtype, device)
    img2gray.img2gray(view).backward(grad)
    expected = torch.zeros_like(base).transpose(0, 1)
    expected[::2] = torch.stack([grad * w for w in img2gray.ops.LUMA_WEIGHTS], dim=-1)
    assert base.grad is not None and torch.equal(base.grad, expected.transpose(0, 1))


@pytest.mark.parametrize("device", DEVICES)
def test_no_grad_paths_build_no_graph(device: str) -> None:
    image = random_image((4, 5, 3), torch.float32, device)
    assert img2gray.img2gray(image).grad_fn is None
    with torch.no_grad():
        gray = img2gray.img2gray(image.requires_grad_())
        assert gray.grad_fn is None and not gray.requires_grad
    assert img2gray.img2gray(image).grad_fn is not None
    assert torch.ops.img2gray.img2gray(image).grad_fn is not None


def test_uint8_cannot_require_grad() -> None:
    """The op is differentiable for float dtypes only; torch itself refuses a uint8 leaf that requires grad."""
    with pytest.raises(RuntimeError, match=r"(?i)only Tensors of floating point .*can require gradients"):
        torch.zeros(2, 2, 3, dtype=torch.uint8).requires_grad_()


def _torch_out_autograd_message(name: str) -> str:
    """What torch's own out= ops say when an argument requires grad, with ``name`` for ``add``."""
    with pytest.raises(RuntimeError) as refused:
        torch.add(torch.zeros(2, requires_grad=True), 1, out=torch.empty(2))
    assert str(refused.value).startswith("add(): ")
    return name + str(refused.value)[len("add"):]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("path", OUT_PATHS)
@pytest.mark.parametrize("which", ["image", "out"])
def test_out_with_autograd_is_refused_as_torch_does(device: str, path: str, which: str) -> None:
    """The wrapper and the registered out overload, in both builds (a C++ Autograd kernel in the classic one, the
    Python ADInplaceOrView kernel in the stable one): torch's own message, and nothing written."""
    image = random_image((4, 5, 3), torch.float32, device)
    out = torch.full((4, 5), -1.0, device=device)
    if which == "image":
        image.requires_grad_()
    else:
        out.requires_grad_()
    with pytest.raises(RuntimeError) as refused:
        OUT_PATHS[path](image, out)
    assert str(refused.value) == _torch_out_autograd_message("img2gray")
    assert torch.equal(out, torch.full((4, 5), -1.0, device=device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("path", OUT_PATHS)
@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_out_with_arguments_requiring_grad_works_without_grad_mode(device: str, path: str, mode: str) -> None:
    """As torch's own out= ops: with grad mode off nothing is recorded, so there is nothing to refuse."""
    image = random_image((4, 5, 3), torch.float32, device).requires_grad_()
    outs = [torch.full((4, 5), -1.0, device=device), torch.full((4, 5), -1.0, device=device).requires_grad_()]
    expected = img2gray.img2gray(image.detach())
    for out in outs:
        with torch.no_grad() if mode == "no_grad" else torch.inference_mode():
            assert OUT_PATHS[path](image, out) is out
        assert torch.equal(out.detach(), expected) and out.grad_fn is None


@pytest.mark.parametrize("path", OUT_PATHS)
def test_torch_compile_refuses_out_with_autograd_and_takes_it_under_no_grad(path: str) -> None:
    compiled = torch.compile(OUT_PATHS[path], fullgraph=True)
    image = random_image((4, 5, 3), torch.float32, "cpu").requires_grad_()
    out = torch.full((4, 5), -1.0)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        compiled(image, out)
    assert torch.equal(out, torch.full((4, 5), -1.0))
    with torch.no_grad():
        assert compiled(image, out) is out
    assert torch.equal(out, img2gray.img2gray(image.detach()))


@pytest.mark.parametrize("device", DEVICES)
def test_the_classic_builds_private_out_op_refuses_autograd_too(device: str) -> None:
    """`_img2gray_into` has a C++ Autograd kernel in the classic build; the stable build's falls through (the wrapper,
    its only caller, refuses first), so it is checked here in the classic build only."""
    if img2gray.build_info().abi != "classic":
        pytest.skip("the stable build's private out op has no autograd kernel (the wrapper checks before calling it)")
    image = random_image((4, 5, 3), torch.float32, device).requires_grad_()
    with pytest.raises(RuntimeError) as refused:
        torch.ops.img2gray._img2gray_into(image, torch.empty(4, 5, device=device))
    assert str(refused.value) == _torch_out_autograd_message("img2gray")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("path", OUT_PATHS)
def test_out_bumps_its_version_so_autograd_sees_the_write(device: str, path: str) -> None:
    """As with torch's own out= ops: one bump per write (the classic build bumps in C++, the stable one partly in
    Python), and a backward through a tensor saved before the write is refused, not run on the new values."""
    image = random_image((4, 5, 3), torch.float32, device)
    out = torch.zeros(4, 5, device=device)
    weight = torch.ones(4, 5, device=device, requires_grad=True)
    loss = (out * weight).sum()  # saves out for weight's gradient
    version = out._version
    OUT_PATHS[path](image, out)
    assert out._version == version + 1 and torch.equal(out, img2gray.img2gray(image))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("path", OUT_PATHS)
def test_an_inference_tensor_out_is_written_as_custom_ops_do(device: str, path: str) -> None:
    """It has no version to bump and cannot be saved for backward; torch.autograd.graph.increment_version skips it,
    so both builds take it, in inference mode or not, as torch.library.custom_op's mutable ops do."""
    image = random_image((4, 5, 3), torch.float32, device)
    with torch.inference_mode():
        out = torch.full((4, 5), -1.0, device=device)
        assert OUT_PATHS[path](image, out) is out and torch.equal(out, img2gray.img2gray(image))
        out.fill_(-1.0)
    OUT_PATHS[path](image, out)
    assert out.is_inference() and torch.equal(out, img2gray.img2gray(image))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_opcheck_with_autograd(device: str, dtype: torch.dtype) -> None:
    """opcheck's autograd tests (registration, aot_dispatch_dynamic with a backward) on inputs requiring grad."""
    image = random_image((2, 5, 7, 3), dtype, device).requires_grad_()
    torch.library.opcheck(torch.ops.img2gray.img2gray.default, (image,))


def test_the_wrapper_works_under_fake_tensors_and_inference_mode() -> None:
    """The wrapper's no-grad shortcut (`_img2gray_no_grad`, no autograd kernel) must keep torch's modes working."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    with FakeTensorMode():
        image = torch.empty(2, 4, 5, 3, dtype=torch.uint8)
        gray = img2gray.img2gray(image)
        out = torch.empty(2, 4, 5, dtype=torch.uint8)
        assert isinstance(gray, FakeTensor) and gray.shape == (2, 4, 5)
        assert img2gray.img2gray(image, out=out) is out
    image = random_image((4, 5, 3), torch.float32, "cpu")
    with torch.inference_mode():
        assert torch.equal(torch.ops.img2gray.img2gray(image), float_gray(image))
        assert torch.equal(img2gray.img2gray(image), float_gray(image))


@pytest.fixture
def vmap_without_fallback() -> Iterator[None]:
    """A missing batching rule raises instead of quietly looping over the samples (torch's fallback)."""
    torch._C._functorch._set_vmap_fallback_enabled(False)
    try:
        yield
    finally:
        torch._C._functorch._set_vmap_fallback_enabled(True)


def functional_overloads(device: str) -> list[Callable[[torch.Tensor], torch.Tensor]]:
    """Every way to the functional kernels: the wrapper, the op, the wrapper's no-grad op."""
    ops = torch.ops.img2gray
    return [img2gray.img2gray, ops.img2gray, ops._img2gray_no_grad]


@pytest.mark.usefixtures("vmap_without_fallback")
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("in_dim", [0, 1, 3, -1], ids=lambda d: f"in_dims={d}")
def test_vmap_batches_into_one_call(device: str, dtype: torch.dtype, in_dim: int) -> None:
    """Each functional overload has a batching rule: the vmapped dimension, wherever it is, becomes a leading one."""
    images = random_image((4, 5, 6, 3), dtype, device)  # 4 images of (5, 6, 3)
    physical = images.movedim(0, in_dim)
    expected = img2gray.img2gray(images)
    for overload in functional_overloads(device):
        assert torch.equal(torch.vmap(overload, in_dims=in_dim)(physical), expected), overload
        assert torch.equal(torch.vmap(torch.vmap(overload))(images.reshape(2, 2, 5, 6, 3)),
                           expected.reshape(2, 2, 5, 6)), overload


@pytest.mark.usefixtures("vmap_without_fallback")
@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_of_vmap_has_no_graph_break(device: str) -> None:
    torch._dynamo.reset()
    batched = torch.vmap(img2gray.img2gray, in_dims=2)
    compiled = torch.compile(batched, fullgraph=True)
    images = random_image((5, 6, 4, 3), torch.uint8, device)  # 4 images of (5, 6, 3), batched along dim 2
    assert torch.equal(compiled(images), img2gray.img2gray(images.movedim(2, 0)))


@pytest.mark.usefixtures("vmap_without_fallback")
def test_vmap_checks_each_sample_is_an_image() -> None:
    """Batched (5, 3) rows are not an image: the rule refuses what the op would refuse for one sample."""
    message = r"^img2gray: expected image of rank >= 3 with shape \(\.\.\., H, W, 3\), got rank 2 with shape \(5, 3\)$"
    for overload in functional_overloads("cpu"):
        with pytest.raises(ValueError, match=message):
            torch.vmap(overload)(torch.zeros(4, 5, 3))
    with pytest.raises(ValueError, match=r"expected 3 channels in the last dimension \(\.\.\., H, W, 3\), got 4"):
        torch.vmap(img2gray.img2gray, in_dims=2)(torch.zeros(5, 6, 7, 4))


def test_out_under_vmap_is_refused_in_the_callers_terms() -> None:
    """As torch's own out= ops do under vmap; the message names img2gray's out=, not the private op behind it."""
    images, out = torch.zeros(4, 5, 6, 3), torch.full((4, 5, 6), -1.0)
    with pytest.raises(RuntimeError, match=r"^img2gray: out= is not supported under torch\.vmap, as with torch's own"):
        torch.vmap(lambda image, gray: img2gray.img2gray(image, out=gray))(images, out)
    assert torch.equal(out, torch.full((4, 5, 6), -1.0))


@pytest.mark.usefixtures("vmap_without_fallback")
@pytest.mark.parametrize("device", DEVICES)
def test_gradients_flow_through_vmap(device: str) -> None:
    """Under vmap the wrapper sees a batched tensor whose requires_grad is False whatever the input's: it must not
    take its no-grad shortcut there, or backward() silently leaves the input without a gradient."""
    images = random_image((4, 5, 6, 3), torch.float32, device).requires_grad_()
    for overload in (img2gray.img2gray, torch.ops.img2gray.img2gray):
        images.grad = None
        grad = random_image((4, 5, 6), torch.float32, device)
        torch.vmap(overload)(images).backward(grad)
        assert images.grad is not None, overload
        expected = torch.stack([grad * w for w in img2gray.ops.LUMA_WEIGHTS], dim=-1)
        assert torch.equal(images.grad, expected), overload
    with torch.no_grad():
        assert not torch.vmap(img2gray.img2gray)(images).requires_grad


@pytest.mark.parametrize("name", ["img2gray", "_img2gray_no_grad"])
def test_the_functional_fake_kernels_check_like_the_op(name: str) -> None:
    """Shapes are inferred on meta tensors (and under FakeTensorMode) by the fake kernels, which refuse what the op
    refuses rather than inventing an output."""
    overload = getattr(torch.ops.img2gray, name)
    assert overload(torch.empty(2, 4, 5, 3, device="meta")).shape == (2, 4, 5)
    with pytest.raises(RuntimeError, match=r"img2gray: expected \(\.\.\., H, W, 3\)"):
        overload(torch.empty(4, 5, device="meta"))
    with pytest.raises(RuntimeError, match=r"img2gray: unsupported dtype torch\.float64"):
        overload(torch.empty(4, 5, 3, dtype=torch.float64, device="meta"))


def test_the_library_defines_the_op_and_the_wrappers_two_private_ops_only() -> None:
    """Both bindings define csrc/op_schema.h's list; the CUDA reference kernel's op is not shipped."""
    names = sorted(name for name in torch._C._dispatch_get_all_op_names() if name.startswith("img2gray::"))
    assert names == ["img2gray::_img2gray_into", "img2gray::_img2gray_no_grad", "img2gray::img2gray",
                     "img2gray::img2gray.out"]


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_torch(node: ast.expr) -> bool:
    """`torch` or an attribute of it (`torch.library`, ...)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id == "torch"


def private_torch_uses(source: str) -> list[str]:
    """What `source` reaches of torch outside its public API: `torch._x` (an attribute, an import or a getattr) and
    `._op`, OpOverload's C++ entry point."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and (node.attr == "_op" or (_is_private(node.attr) and _is_torch(node.value))):
            found.append(ast.unparse(node))
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names
                      if alias.name.split(".")[0] == "torch" and any(map(_is_private, alias.name.split(".")))]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
            parts = (node.module or "").split(".")
            found += [f"{node.module}.{alias.name}" for alias in node.names
                      if any(map(_is_private, parts)) or _is_private(alias.name)]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
              and len(node.args) > 1 and _is_torch(node.args[0]) and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str) and _is_private(node.args[1].value)):
            found.append(ast.unparse(node))
    return found


def test_the_private_torch_scan_finds_each_kind_of_use() -> None:
    source = ("import torch._dynamo\nfrom torch._ops import OpOverload\nfrom torch import _C\n"
              "torch._C._increment_version(x)\ntorch.library._x\nop._op(x)\ngetattr(torch, '_C')\n"
              "torch.__version__\ntorch.library.register_fake\nfrom torch.autograd.graph import increment_version\n")
    assert sorted(private_torch_uses(source)) == sorted([
        "torch._dynamo", "torch._ops.OpOverload", "torch._C", "torch._C._increment_version", "torch._C",
        "torch.library._x", "op._op", "getattr(torch, '_C')"])


@pytest.mark.parametrize("module", sorted((REPO_ROOT / "python" / "img2gray").glob("*.py")), ids=lambda p: p.name)
def test_the_package_uses_public_torch_api_only(module: Path) -> None:
    """No `torch._C`, `torch._ops`, `torch._check`, ... nor `OpOverload._op`: what a torch release may change without
    notice. torch.library, torch.ops, torch.compiler and torch.autograd.graph give the op all it needs."""
    assert private_torch_uses(module.read_text(encoding="utf-8")) == []
