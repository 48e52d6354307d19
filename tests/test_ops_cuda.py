"""CUDA-only behaviour of the kernels in csrc/img2gray_cuda.cu (skipped without a GPU)."""

from __future__ import annotations

import threading

import pytest
import torch

import img2gray
from tests.helpers.luma_reference import float_gray, pillow_gray
from tests.test_ops import ALL_DTYPES, random_image

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="requires a CUDA GPU")]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("width", [1, 7, 15, 16, 17, 1023, 1920, 4097])
@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "misaligned"])
def test_vector_and_scalar_kernels_match_the_cpu_reference(dtype: torch.dtype, width: int, offset: int) -> None:
    """Widths around the 16-byte chunk (the vector kernel and its scalar tail), and an input one element off 16-byte
    alignment (the one-pixel-per-thread kernel), against Pillow (uint8) or the documented fp32 formula on the CPU."""
    image = random_image((3, 11, width, 3), dtype, "cpu")
    storage = torch.empty(image.numel() + offset, dtype=dtype, device="cuda")
    on_device = storage[offset:].view(image.shape)
    on_device.copy_(image)
    if dtype == torch.uint8:
        expected = pillow_gray(image.reshape(33, width, 3)).reshape(3, 11, width)
    else:
        expected = float_gray(image)
    assert torch.equal(img2gray.img2gray(on_device).cpu(), expected)


def test_runs_on_the_current_stream() -> None:
    image = random_image((1080, 1920, 3), torch.uint8, "cuda")
    expected = img2gray.img2gray(image)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(10_000_000)  # keeps the side stream busy: a launch on another stream would finish first
        gray = img2gray.img2gray(image)
        out = torch.empty_like(expected)
        img2gray.img2gray(image, out=out)
    stream.synchronize()
    assert torch.equal(gray, expected) and torch.equal(out, expected)


def test_runs_on_a_thread_that_made_no_cuda_call_before() -> None:
    """The launch takes the driver's path only with a current context; a fresh thread may have none yet, and then the
    runtime's launch makes it current (csrc/img2gray_cuda.cu). The thread's first CUDA work is the op's launch."""
    image = random_image((720, 1280, 3), torch.uint8, "cuda")
    expected = img2gray.img2gray(image)
    out = torch.full_like(expected, 0x5A)
    torch.cuda.synchronize()
    results: list[torch.Tensor] = []

    def convert() -> None:
        img2gray.img2gray(image, out=out)
        results.append(img2gray.img2gray(image))
        torch.cuda.current_stream().synchronize()

    worker = threading.Thread(target=convert)
    worker.start()
    worker.join()
    assert torch.equal(out, expected) and len(results) == 1 and torch.equal(results[0], expected)


def test_device_guard_uses_the_tensors_device() -> None:
    last = torch.device("cuda", torch.cuda.device_count() - 1)
    image = random_image((64, 64, 3), torch.uint8, str(last))
    with torch.cuda.device(0):
        gray = img2gray.img2gray(image)
    assert gray.device == last and torch.equal(gray.cpu(), img2gray.img2gray(image.cpu()))


def test_more_than_2_to_the_31_elements() -> None:
    """int64 indexing: the input has 3 * (2^20 + 1) * 1024 > 2^31 elements (3.2 GB)."""
    free, _ = torch.cuda.mem_get_info()
    if free < 8 << 30:
        pytest.skip("needs 8 GiB of free GPU memory")
    h, w = (1 << 20) + 1, 1024
    image = torch.randint(0, 256, (h, w, 3), dtype=torch.uint8, device="cuda")
    assert image.numel() > 2**31
    gray = img2gray.img2gray(image)
    tail = image[-3:]
    assert torch.equal(gray[-3:], img2gray.img2gray(tail.contiguous()))
    assert torch.equal(gray[-3:].cpu(), img2gray.img2gray(tail.cpu()))
    del image, gray
    torch.cuda.empty_cache()


def test_an_out_on_the_other_device_is_refused() -> None:
    image = random_image((4, 5, 3), torch.uint8, "cuda")
    classic = img2gray.build_info().abi == "classic"
    for img, out, expected, given in [(image, torch.empty(4, 5, dtype=torch.uint8), "cuda:0", "cpu"),
                                      (image.cpu(), torch.empty(4, 5, dtype=torch.uint8, device="cuda"), "cpu", "cuda:0")]:
        with pytest.raises(ValueError if classic else RuntimeError,
                           match=rf"^img2gray: expected out on {expected} \(the image's device\), got {given}$"):
            torch.ops.img2gray.img2gray.out(img, out=out)
        with pytest.raises(ValueError, match=rf"expected out on {expected} \(the image's device\), got out on {given}"):
            img2gray.img2gray(img, out=out)


@pytest.mark.parametrize("use_out", [False, True], ids=["functional", "out"])
def test_cuda_graph_replay_recomputes_from_the_captured_input(use_out: bool) -> None:
    frame = random_image((720, 1280, 3), torch.uint8, "cuda")
    gray = torch.empty(720, 1280, dtype=torch.uint8, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        img2gray.img2gray(frame)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = img2gray.img2gray(frame, out=gray) if use_out else img2gray.img2gray(frame)
    for _ in range(3):
        new = random_image((720, 1280, 3), torch.uint8, "cuda")
        frame.copy_(new)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(result, img2gray.img2gray(new.cpu()).cuda())


def test_torch_compile_reduce_overhead_pipeline() -> None:
    def pipeline(frame: torch.Tensor) -> torch.Tensor:
        return img2gray.img2gray(frame).float().mul_(1 / 255)

    torch._dynamo.reset()
    compiled = torch.compile(pipeline, mode="reduce-overhead", fullgraph=True)
    for _ in range(4):
        frame = random_image((720, 1280, 3), torch.uint8, "cuda")
        assert torch.equal(compiled(frame), pipeline(frame))


def test_backward_on_cuda_matches_the_cpu() -> None:
    image = random_image((2, 33, 65, 3), torch.float32, "cuda").requires_grad_()
    grad = torch.rand(2, 33, 65, device="cuda")
    img2gray.img2gray(image).backward(grad)
    cpu = image.detach().cpu().requires_grad_()
    img2gray.img2gray(cpu).backward(grad.cpu())
    assert image.grad is not None and cpu.grad is not None and torch.equal(image.grad.cpu(), cpu.grad)
