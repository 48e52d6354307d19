"""The CPU kernel's paths (csrc/cpu_x86.h, picked at load time from the CPU's instruction sets).

Each check runs on the path the CPU gets by default (AVX-512 VBMI / AVX-512F where present), in this process but
for the one whose failure is a crash (IN_A_FRESH_PROCESS_ONLY), and
again in a fresh process for each narrower path (IMG2GRAY_CPU_ISA=avx2, =scalar) and with streaming stores for
every size (IMG2GRAY_CPU_STREAM_BYTES=0), so every path is checked on a machine that has them all: results against Pillow (uint8, all 2^24 triples) and the documented fp32 formula
(float32, bit for bit); odd widths, tiny images and misaligned input and output pointers (no byte outside the
output written); images that end flush against an unreadable page (no byte past the input read, prefetches
included); sizes on both sides of the streaming-store threshold; strided input; any thread count, with the
default tiles (8 a thread), with tiny ones and with one static share per thread (IMG2GRAY_CPU_TILE_PIXELS).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import img2gray
from tests.helpers.luma_reference import expected_gray, fixed_point_gray, pillow_gray
from tests.helpers.repo import REPO_ROOT

POISON = 0xAB
_PROT_NONE = 0  # <sys/mman.h>; the mmap module exports PROT_READ and PROT_WRITE only


def random_image(shape: tuple[int, ...], dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, dtype=dtype, generator=generator)
    return (torch.rand(shape, generator=generator) * 1.5 - 0.25).to(dtype)


def misaligned(image: torch.Tensor, offset: int) -> torch.Tensor:
    """The same values, contiguous, starting `offset` elements into a larger storage."""
    storage = torch.empty(image.numel() + offset + 5, dtype=image.dtype)
    view = storage[offset : offset + image.numel()].view(image.shape)
    view.copy_(image)
    return view


def convert_into_guarded_out(image: torch.Tensor, offset: int) -> tuple[torch.Tensor, torch.Tensor, slice]:
    """Runs the op with out= `offset` elements into a poisoned buffer; returns (result, buffer, result's slice)."""
    count = image.numel() // 3
    buffer = torch.full((count + offset + 70,), POISON, dtype=torch.uint8).to(image.dtype)
    where = slice(offset, offset + count)
    out = buffer[where].view(image.shape[:-1])
    result = img2gray.img2gray(image, out=out)
    assert result.data_ptr() == out.data_ptr()
    return result, buffer, where


def assert_exact_and_guarded(image: torch.Tensor, out_offset: int, what: str) -> None:
    result, buffer, where = convert_into_guarded_out(image, out_offset)
    expected = expected_gray(image)
    assert torch.equal(result, expected), f"{what}: {(result != expected).sum().item()} values differ"
    outside = torch.cat([buffer[: where.start], buffer[where.stop :]])
    assert torch.equal(outside, torch.full_like(outside, POISON)), f"{what}: wrote outside its output"


def check_every_rgb_triple() -> None:
    v = torch.arange(1 << 24, dtype=torch.int32)
    rgb = torch.stack([(v >> 16) & 255, (v >> 8) & 255, v & 255], dim=-1).to(torch.uint8).reshape(4096, 4096, 3)
    gray = img2gray.img2gray(rgb)
    mismatches = (gray != pillow_gray(rgb)).nonzero()
    assert mismatches.numel() == 0, f"{len(mismatches)} triples differ from Pillow, first at {mismatches[:3].tolist()}"


def check_odd_widths_tiny_images_and_misaligned_pointers() -> None:
    for dtype in (torch.uint8, torch.float32):
        for width in [*range(1, 70), 127, 128, 129, 255, 257]:
            for height in (1, 3):
                image = random_image((height, width, 3), dtype, seed=width * 7 + height)
                for in_offset, out_offset in ((0, 0), (1, 3), (2, 1), (3, 2)):
                    assert_exact_and_guarded(misaligned(image, in_offset), out_offset,
                                             f"{dtype} {height}x{width} offsets {in_offset}/{out_offset}")


def check_sizes_around_the_streaming_threshold() -> None:
    """Outputs of 256 KiB per thread and more are written with streaming stores after an aligned head."""
    threads = torch.get_num_threads()
    try:
        for dtype, pixels in ((torch.uint8, 1 << 18), (torch.float32, 1 << 16)):
            for count in (pixels - 1, pixels + 77, 3 * pixels + 5):
                image = random_image((1, count, 3), dtype, seed=count)
                for num_threads in (1, 2, 3):
                    torch.set_num_threads(num_threads)
                    for out_offset in (0, 1, 61):
                        assert_exact_and_guarded(misaligned(image, 1), out_offset,
                                                 f"{dtype} {count} px, {num_threads} threads, out offset {out_offset}")
    finally:
        torch.set_num_threads(threads)


def check_more_threads_than_tiles_and_tiles_than_threads() -> None:
    """Workers claim tiles from a shared counter: every pixel converted exactly once whatever the thread count,
    with the last tile short and tiles that do not start on an output cache line (odd output offsets)."""
    threads = torch.get_num_threads()
    try:
        for dtype in (torch.uint8, torch.float32):
            for shape in ((517, 389, 3), (3, 100003, 3)):
                image = random_image(shape, dtype, seed=shape[0])
                for num_threads in (2, 5, 8):
                    torch.set_num_threads(num_threads)
                    for out_offset in (0, 3):
                        assert_exact_and_guarded(image, out_offset,
                                                 f"{dtype} {shape}, {num_threads} threads, out offset {out_offset}")
    finally:
        torch.set_num_threads(threads)


def check_strided_input() -> None:
    for dtype in (torch.uint8, torch.float32):
        base = random_image((61, 83, 3), dtype)
        views = {
            "transposed": base.transpose(0, 1),
            "every other row and column": base[::2, 1::2],
            "channels-first storage": random_image((3, 61, 83), dtype).permute(1, 2, 0),
            "channels reversed": base.flip(-1),
        }
        for name, view in views.items():
            assert torch.equal(img2gray.img2gray(view), expected_gray(view)), f"{dtype} {name}"


def _page_before_a_hole(nbytes: int) -> tuple[mmap.mmap, int]:
    """An anonymous mapping whose last page is unreadable (PROT_NONE), and the offset at which ``nbytes`` end
    right before it: an image there makes any read past its end fault."""
    page = mmap.PAGESIZE
    pages = (nbytes + page - 1) // page + 1
    mapping = mmap.mmap(-1, pages * page)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    start = ctypes.addressof(ctypes.c_char.from_buffer(mapping))
    if libc.mprotect(start + (pages - 1) * page, page, _PROT_NONE) != 0:
        raise OSError(ctypes.get_errno(), "mprotect")
    return mapping, (pages - 1) * page - nbytes


def check_reads_nothing_past_the_input() -> None:
    """Every length ends flush against an unreadable page: the vector loops' tails and their prefetches (which
    may point past the end and must never fault) read nothing beyond the image. A read past it kills the process,
    so this check always runs in a fresh one."""
    for dtype in (torch.uint8, torch.float32):
        for width in (1, 2, 5, 8, 16, 31, 33, 35, 63, 64, 65, 127, 129, 1000, 4099, 70001):
            image = random_image((1, width, 3), dtype, seed=width)
            nbytes = image.numel() * image.element_size()
            mapping, offset = _page_before_a_hole(nbytes)
            flush = torch.frombuffer(mapping, dtype=dtype, count=image.numel(), offset=offset).view(image.shape)
            flush.copy_(image)
            assert torch.equal(img2gray.img2gray(flush), expected_gray(image)), f"{dtype} width {width}"
            del flush


CHECKS: dict[str, Callable[[], None]] = {
    "every_rgb_triple": check_every_rgb_triple,
    "odd_widths_tiny_images_and_misaligned_pointers": check_odd_widths_tiny_images_and_misaligned_pointers,
    "sizes_around_the_streaming_threshold": check_sizes_around_the_streaming_threshold,
    "more_threads_than_tiles_and_tiles_than_threads": check_more_threads_than_tiles_and_tiles_than_threads,
    "strided_input": check_strided_input,
    "reads_nothing_past_the_input": check_reads_nothing_past_the_input,
}
IN_A_FRESH_PROCESS_ONLY = {"reads_nothing_past_the_input"}


def run_all_checks() -> None:
    for check in CHECKS.values():
        check()
    print("all CPU checks passed")


@pytest.mark.parametrize("name", CHECKS)
def test_default_path(name: str) -> None:
    if name in IN_A_FRESH_PROCESS_ONLY:
        _run_in_a_fresh_process({}, f"CHECKS[{name!r}]()")
    else:
        CHECKS[name]()


def _run_in_a_fresh_process(settings: dict[str, str], code: str) -> None:
    site = Path(img2gray.__file__).resolve().parent.parent  # the build under test (--img2gray-site or installed)
    env = {**os.environ, **settings,
           "PYTHONPATH": os.pathsep.join([str(site), str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", f"from tests.test_ops_cpu import *; {code}; print('passed')"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    how = f"killed by {signal.Signals(-done.returncode).name}" if done.returncode < 0 else f"exit {done.returncode}"
    assert done.returncode == 0, f"{settings or 'default path'} ({how}):\n{done.stderr[-3000:]}"
    assert "passed" in done.stdout


@pytest.mark.parametrize(
    "settings",
    [{"IMG2GRAY_CPU_ISA": "avx2"}, {"IMG2GRAY_CPU_ISA": "scalar"},
     # streaming stores for every range, however small: their aligned-head and tail code on every odd shape
     {"IMG2GRAY_CPU_STREAM_BYTES": "0"}, {"IMG2GRAY_CPU_ISA": "avx2", "IMG2GRAY_CPU_STREAM_BYTES": "0"},
     # tiny tiles (100 pixels, rounded up to 128): thousands per call, a tile boundary every few vectors
     {"IMG2GRAY_CPU_TILE_PIXELS": "100"}, {"IMG2GRAY_CPU_TILE_PIXELS": "100", "IMG2GRAY_CPU_STREAM_BYTES": "0"},
     # one tile per thread (the static split)
     {"IMG2GRAY_CPU_TILE_PIXELS": "0"}],
    ids=lambda settings: ",".join(f"{key}={value}" for key, value in settings.items()),
)
def test_other_paths_in_a_fresh_process(settings: dict[str, str]) -> None:
    """The settings are read once, when the op library loads: hence a fresh interpreter per path."""
    _run_in_a_fresh_process(settings, "run_all_checks()")


def test_the_torch_formula_the_benchmarks_time_is_pillows_for_every_rgb_triple() -> None:
    """tests/helpers/luma_reference: the fixed-point formula in torch ops (the benchmarks' eager and torch.compile
    baseline) equals Pillow's own convert("L") on all 2^24 triples, so comparing with it compares with Pillow."""
    v = torch.arange(1 << 24, dtype=torch.int32)
    rgb = torch.stack([(v >> 16) & 255, (v >> 8) & 255, v & 255], dim=-1).to(torch.uint8).reshape(4096, 4096, 3)
    assert torch.equal(fixed_point_gray(rgb), pillow_gray(rgb))
