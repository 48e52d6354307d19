"""Side-by-side speed of the installed img2gray op: ``python benchmarks/bench_img2gray.py [--cpu-only] [--also DIR]``.

``--also DIR`` adds another build of the op as a contender: a Hub-layout variant folder from
tools/build/variants.py (e.g. build/torch-stable-abi210-cu130-x86_64-linux), loaded the way the ``kernels``
library loads it. Its ops live in their own namespace, so both builds run in one process on the same inputs.

Builds nothing: it measures whatever ``import img2gray`` finds. For each input it first checks that every
contender computes the same result (fresh random input, poisoned output buffer), then times them in the same
run: CUDA events after warm-up, median of single calls; and for inputs that fit in L2, back-to-back calls over
rotated inputs (throughput) next to single-call latency. Effective bandwidth counts each input byte read once
and each output byte written once; "copy" is a device-to-device copy of the input's bytes, counted the same way.
CPU: img2gray against Pillow's ``convert("L")`` and eager torch on the same image.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType

import torch

import img2gray

OTHER_BUILDS: dict[str, ModuleType] = {}  # contender name → a variant package loaded with --also
WARMUP = 5
REPEATS = 50
L2_ROTATE_BYTES = 512 << 20  # rotate through enough inputs to keep them out of the 60 MB L2 (H200)


@dataclass
class Row:
    case: str
    dtype: str
    mode: str  # "single" (median of single calls) or "stream" (back-to-back, rotated inputs)
    bytes_moved: int
    ms: dict[str, float] = field(default_factory=dict)  # contender → milliseconds per call

    def gbps(self, name: str) -> float:
        return self.bytes_moved / (self.ms[name] * 1e-3) / 1e9


def reference_expression(image: torch.Tensor) -> torch.Tensor:
    """The op in plain torch (Pillow's fixed point for uint8, fp32 for floats): eager and torch.compile baseline."""
    if image.dtype == torch.uint8:
        x = image.to(torch.int32)
        y = (x[..., 0] * 19595 + x[..., 1] * 38470 + x[..., 2] * 7471 + 32768) >> 16
        return y.to(torch.uint8)
    x = image.float()
    return (0.299 * x[..., 0] + 0.587 * x[..., 1] + 0.114 * x[..., 2]).to(image.dtype)


def torchvision_gray() -> Callable[[torch.Tensor], torch.Tensor] | None:
    try:
        from torchvision.transforms.v2 import functional as tvf
    except ImportError:
        return None
    # torchvision wants (..., 3, H, W): give it the HWC tensor as a channels-first view (the op's layout).
    return lambda image: tvf.rgb_to_grayscale(image.movedim(-1, -3)).squeeze(-3)


def random_image(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> torch.Tensor:
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, dtype=dtype, device=device)
    return torch.rand(shape, device=device).to(dtype)


def time_single(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    for _ in range(WARMUP):
        fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def time_stream(fn: Callable[[torch.Tensor], object], inputs: list[torch.Tensor], calls: int = 200) -> float:
    for image in inputs:
        fn(image)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    results = []
    for _ in range(5):
        start.record()
        for i in range(calls):
            fn(inputs[i % len(inputs)])
        end.record()
        end.synchronize()
        results.append(start.elapsed_time(end) / calls)
    return statistics.median(results)


def load_variant(folder: Path) -> ModuleType:
    """Import a build/<variant>/ package under its metadata id, as kernels' importer does."""
    module_id = json.loads((folder / "metadata.json").read_text())["id"]
    spec = importlib.util.spec_from_file_location(module_id, folder / "__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_id] = module
    spec.loader.exec_module(module)
    return module


def contenders(dtype: torch.dtype, compiled: Callable[[torch.Tensor], torch.Tensor]) -> dict[str, Callable]:
    named: dict[str, Callable] = {
        "img2gray": img2gray.img2gray,
        **{name: build.img2gray for name, build in OTHER_BUILDS.items()},
        "simple kernel": torch.ops.img2gray._img2gray_simple,
        "torch.compile": compiled,
        "eager torch": reference_expression,
    }
    tv = torchvision_gray()
    if tv is not None and dtype in (torch.uint8, torch.float32):
        named["torchvision"] = tv
    return named


def check_same(named: dict[str, Callable], image: torch.Tensor) -> dict[str, str]:
    """Every contender against the op on a fresh input; the op's own output buffer starts poisoned."""
    expected = torch.full(image.shape[:-1], 0x5A if image.dtype == torch.uint8 else float("nan"),
                          dtype=image.dtype, device=image.device)
    img2gray.img2gray(image, out=expected)
    simple = torch.ops.img2gray._img2gray_simple(image)
    if not torch.equal(expected, simple):
        raise SystemExit(f"img2gray differs from the simple kernel on {tuple(image.shape)} {image.dtype}")
    notes = {}
    for name, fn in named.items():
        got = fn(image)
        if torch.equal(got, expected):
            continue
        # torchvision uses other weights / rounding: record how far, but it is timed all the same.
        diff = (got.float() - expected.float()).abs().max().item()
        tolerance = 1.0 if image.dtype == torch.uint8 else 1e-2
        if name == "torchvision" and diff <= tolerance * (255 if image.dtype == torch.uint8 else 1):
            notes[name] = f"max |diff| {diff:g} (other weights)"
        elif name in ("torch.compile", "eager torch") and image.dtype != torch.uint8 and diff <= 1e-2:
            notes[name] = f"max |diff| {diff:g} (FMA contraction)"
        else:
            raise SystemExit(f"{name} differs from img2gray on {tuple(image.shape)} {image.dtype}: max diff {diff}")
    return notes


def gpu_rows() -> tuple[list[Row], dict[str, str]]:
    compiled = torch.compile(reference_expression, dynamic=False)
    cases: list[tuple[str, tuple[int, ...], torch.dtype, str]] = [
        ("8192x8192", (8192, 8192, 3), torch.uint8, "single"),
        ("16x1080x1920", (16, 1080, 1920, 3), torch.uint8, "single"),
        ("8192x8192", (8192, 8192, 3), torch.float32, "single"),
        ("8192x8192", (8192, 8192, 3), torch.float16, "single"),
        ("8192x8192", (8192, 8192, 3), torch.bfloat16, "single"),
        ("3840x2160", (2160, 3840, 3), torch.uint8, "single"),
        ("3840x2160", (2160, 3840, 3), torch.uint8, "stream"),
        ("1920x1080", (1080, 1920, 3), torch.uint8, "single"),
        ("1920x1080", (1080, 1920, 3), torch.uint8, "stream"),
    ]
    rows, notes = [], {}
    for label, shape, dtype, mode in cases:
        image = random_image(shape, dtype, "cuda")
        named = contenders(dtype, compiled)
        for name, note in check_same(named, random_image(shape, dtype, "cuda")).items():
            notes[f"{label} {dtype}: {name}"] = note
        in_bytes = image.numel() * image.element_size()
        row = Row(label, str(dtype).replace("torch.", ""), mode, in_bytes + in_bytes // 3)
        copy_src = torch.empty(row.bytes_moved // 2, dtype=torch.uint8, device="cuda")
        copy_dst = torch.empty_like(copy_src)
        if mode == "single":
            row.ms["copy"] = time_single(lambda dst=copy_dst, src=copy_src: dst.copy_(src))
            for name, fn in named.items():
                row.ms[name] = time_single(lambda fn=fn, x=image: fn(x))
        else:
            count = max(2, L2_ROTATE_BYTES // in_bytes)
            inputs = [random_image(shape, dtype, "cuda") for _ in range(count)]
            srcs = [torch.empty(row.bytes_moved // 2, dtype=torch.uint8, device="cuda") for _ in range(count)]
            row.ms["copy"] = time_stream(lambda s, dst=copy_dst: dst.copy_(s), srcs)
            for name, fn in named.items():
                row.ms[name] = time_stream(fn, inputs)
            del inputs, srcs
        rows.append(row)
        print(f"  measured {label} {row.dtype} {mode}", file=sys.stderr, flush=True)
        del image, copy_src, copy_dst
        torch.cuda.empty_cache()
    return rows, notes


def host_overhead_rows(device: str) -> list[Row]:
    """Per-call cost on the host (dispatch, checks, allocation, launch) for a tiny image: wall-clock time of
    many back-to-back calls. On CUDA the calls only enqueue work, so this is the CPU cost a caller pays."""
    image = random_image((8, 8, 3), torch.uint8, device)
    named = {"img2gray": img2gray.img2gray, **{n: b.img2gray for n, b in OTHER_BUILDS.items()},
             "op without wrapper": torch.ops.img2gray.img2gray.default,
             **{f"{n} op without wrapper": b._ops.ops.img2gray.default for n, b in OTHER_BUILDS.items()},
             "eager torch": reference_expression}
    row = Row("8x8 per call", "uint8", f"host {device}", 0)
    for name, fn in named.items():
        samples = []
        for _ in range(7):
            for _ in range(100):
                fn(image)
            if device == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(2000):
                fn(image)
            samples.append((time.perf_counter() - start) / 2000 * 1e3)
            if device == "cuda":
                torch.cuda.synchronize()
        row.ms[name] = statistics.median(samples)
    row.ms["copy"] = row.ms["img2gray"]  # no copy baseline for overhead rows
    return [row]


def cpu_rows() -> list[Row]:
    from PIL import Image

    rows = []
    for label, shape in [("3840x2160", (2160, 3840, 3)), ("1920x1080", (1080, 1920, 3))]:
        image = random_image(shape, torch.uint8, "cpu")
        pil = Image.fromarray(image.numpy(), mode="RGB")
        expected = torch.frombuffer(bytearray(pil.convert("L").tobytes()), dtype=torch.uint8).reshape(shape[:-1])
        poisoned = torch.full(shape[:-1], 0x5A, dtype=torch.uint8)
        if not torch.equal(img2gray.img2gray(image, out=poisoned), expected):
            raise SystemExit(f"img2gray differs from Pillow on the CPU for {label}")
        row = Row(label, "uint8", f"cpu x{torch.get_num_threads()}", image.numel() + image.numel() // 3)
        dst = torch.empty_like(image)
        timed = {"img2gray": lambda: img2gray.img2gray(image),
                 **{n: (lambda b=b: b.img2gray(image)) for n, b in OTHER_BUILDS.items()},
                 "Pillow": lambda: pil.convert("L"),
                 "eager torch": lambda: reference_expression(image), "copy": lambda: dst.copy_(image)}
        for name, fn in timed.items():
            for _ in range(3):
                fn()
            times = []
            for _ in range(30):
                start = time.perf_counter()
                fn()
                times.append((time.perf_counter() - start) * 1e3)
            row.ms[name] = statistics.median(times)
        # copy moved 2x the input's bytes; express it per the op's byte count for the "% of copy" column
        row.ms["copy"] *= row.bytes_moved / (2 * image.numel())
        rows.append(row)
    return rows


def print_table(rows: list[Row]) -> None:
    for row in rows:
        others = [n for n in row.ms if n not in ("img2gray", "copy")]
        ratio = " ".join(f"{row.ms[n] / row.ms['img2gray']:.2f}x {n};" for n in others)
        if row.bytes_moved == 0:  # per-call overhead rows: times only
            times = " ".join(f"{n} {row.ms[n] * 1e3:.1f} us;" for n in others)
            print(f"| {row.case} | {row.dtype} | {row.mode} | - | {row.ms['img2gray'] * 1e3:.1f} us | - | - | {times} |")
            continue
        print(f"| {row.case} | {row.dtype} | {row.mode} | {row.gbps('img2gray'):.0f} GB/s | {row.ms['img2gray'] * 1e3:.1f} us "
              f"| {100 * row.ms['copy'] / row.ms['img2gray']:.1f} % | {row.gbps('copy'):.0f} GB/s | {ratio} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu-only", action="store_true")
    parser.add_argument("--json", help="also write every measurement to this file")
    parser.add_argument("--also", type=Path, action="append", default=[],
                        help="another build of the op to time alongside: a build/<variant>/ folder (repeatable)")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, img2gray {img2gray.__version__} ({img2gray.build_info().abi} ABI)")
    for folder in args.also:
        build = load_variant(folder)
        name = f"img2gray {build.build_info().abi} ABI ({folder.name})"
        OTHER_BUILDS[name] = build
        print(f"also: {name}, ops {build.build_info().ops_namespace}")
    rows: list[Row] = []
    notes: dict[str, str] = {}
    if torch.cuda.is_available() and not args.cpu_only:
        print(f"device: {torch.cuda.get_device_name()}, driver CUDA {torch.version.cuda}")
        gpu, notes = gpu_rows()
        rows += gpu + host_overhead_rows("cuda")
    rows += cpu_rows() + host_overhead_rows("cpu")
    print("| input | dtype | mode | img2gray | per call | % of copy | copy | time of others / img2gray |")
    print("|---|---|---|---|---|---|---|---|")
    print_table(rows)
    for key, note in notes.items():
        print(f"note: {key}: {note}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([asdict(r) for r in rows], f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
