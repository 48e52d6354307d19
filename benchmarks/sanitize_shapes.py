"""Runs both CUDA kernels over odd shapes and every dtype, through the functional and out= paths (contiguous and
strided outputs) and the backward; meant for ``compute-sanitizer --tool memcheck``."""

import torch

import img2gray

SHAPES = [(1, 1, 3), (1, 7, 3), (3, 5, 3), (4097, 3, 3), (2, 17, 33, 3), (1, 16, 3), (1, 15, 3), (720, 1280, 3)]
DTYPES = [torch.uint8, torch.float16, torch.bfloat16, torch.float32]

for dtype in DTYPES:
    for shape in SHAPES:
        image = (torch.randint(0, 256, shape, device="cuda") if dtype == torch.uint8
                 else torch.rand(shape, device="cuda")).to(dtype)
        # Same values 3 elements into a fresh buffer: contiguous, but not 16-byte aligned (scalar fallback).
        buffer = torch.empty(image.numel() + 3, dtype=dtype, device="cuda")
        misaligned = buffer[3:].view(shape)
        misaligned.copy_(image)
        for x in (image, misaligned):
            fast = img2gray.img2gray(x)
            assert torch.equal(fast.cpu(), img2gray.img2gray(x.cpu())), (shape, dtype)
            out = torch.empty(shape[:-1], dtype=dtype, device="cuda")
            assert torch.equal(img2gray.img2gray(x, out=out), fast), (shape, dtype)
            strided = torch.empty(tuple(reversed(shape[:-1])), dtype=dtype, device="cuda").permute(
                *reversed(range(len(shape) - 1)))
            assert torch.equal(img2gray.img2gray(x, out=strided), fast), (shape, dtype)
        if dtype != torch.uint8:
            leaf = image.clone().requires_grad_()
            img2gray.img2gray(leaf).sum().backward()
            assert leaf.grad is not None and leaf.grad.shape == leaf.shape
torch.cuda.synchronize()
print(f"sanitize_shapes: {len(SHAPES) * len(DTYPES) * 2} cases checked, each functional and out= (dense, strided)")
