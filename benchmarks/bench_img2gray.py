"""Side-by-side speed of the installed img2gray op: ``python benchmarks/bench_img2gray.py [--cpu-only] [--also DIR]``.

``--also DIR`` adds another build of the op as a contender: a Hub-layout variant folder from
tools/build/variants.py (e.g. build/torch-stable-abi210-cu130-x86_64-linux), loaded the way the ``kernels``
library loads it. Its ops live in their own namespace, so both builds run in one process on the same inputs.

Builds nothing: it measures whatever ``import img2gray`` finds. For each input it first checks that every
contender computes the same result (fresh random input, poisoned output buffer), then times them in the same
run: CUDA events after warm-up, median of single calls; and for inputs that fit in L2, back-to-back calls over
rotated inputs (throughput) next to single-call latency. Effective bandwidth counts each input byte read once
and each output byte written once; "copy" is a device-to-device copy of the input's bytes, counted the same way.
NVIDIA NPP (``nppiRGBToGray_8u_C3C1R_Ctx``, called with ctypes from the nvidia-npp wheel's libnppc.so.13 and
libnppicc.so.13 in ``--npp DIR`` or $IMG2GRAY_NPP_DIR) is the small-frame peer: back-to-back 720p/1080p frames,
per-call host cost, and CUDA-graph replay of a per-frame pipeline. NPP gets its best Python path: its stream
context and ROI are built once, so each frame is one ctypes call with two data pointers.

CPU rows (``--cpu-only``) must run in a fresh process: once torch.compile has started inductor's workers, every
fresh large CPU allocation slows down by milliseconds (benchmarks/NOTES.md, K), so a GPU run reports no CPU rows; the CPU
kernel's own benchmark is benchmarks/bench_cpu.py.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: the repository root holds tests/
import img2gray
from tests.helpers.luma_reference import torch_gray

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
    ms: dict[str, float] = field(default_factory=dict)  # contender → milliseconds per call (median)
    reference: str = "img2gray"  # the contender the others are compared with
    spread_ms: dict[str, list[float]] = field(default_factory=dict)  # contender → [lowest, highest] sample
    n: dict[str, int] = field(default_factory=dict)  # contender → samples behind the median

    def add(self, name: str, samples: list[float]) -> None:
        """One contender's samples (ms): the median for the table, spread and count for the record."""
        self.ms[name] = statistics.median(samples)
        self.spread_ms[name] = [min(samples), max(samples)]
        self.n[name] = len(samples)

    def gbps(self, name: str) -> float:
        return self.bytes_moved / (self.ms[name] * 1e-3) / 1e9


# The op in plain torch (Pillow's fixed point for uint8, fp32 for floats): the eager and torch.compile baseline, the
# tests' own reference (tests/test_ops_cpu.py checks it against Pillow on every RGB triple).
reference_expression = torch_gray


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
    return statistics.median(single_samples(fn, repeats))


def single_samples(fn: Callable[[], object], repeats: int = REPEATS) -> list[float]:
    """Milliseconds of each of `repeats` single calls after warm-up, CUDA events around each."""
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
    return times


def time_stream(fn: Callable[[torch.Tensor], object], inputs: list[torch.Tensor], calls: int = 200) -> float:
    """Milliseconds per call of `calls` back-to-back calls over rotated inputs, between two CUDA events."""
    for image in inputs[:4]:
        fn(image)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(calls):
        fn(inputs[i % len(inputs)])
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls


def interleaved(blocks: dict[str, Callable[[], float]], rounds: int = 7) -> dict[str, list[float]]:
    """Each timed block's samples over rounds that take every contender in turn: clock ramps and neighbours'
    load then fall on all contenders alike (one run took its first row's contenders at a lower GPU clock)."""
    samples: dict[str, list[float]] = {name: [] for name in blocks}
    for _ in range(rounds):
        for name, block in blocks.items():
            samples[name].append(block())
    return samples


def warm_gpu(seconds: float = 0.5) -> None:
    """Large copies until the GPU's clocks have ramped up (it idles at 345 MHz SM between runs)."""
    src = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    begin = time.perf_counter()
    while time.perf_counter() - begin < seconds:
        dst.copy_(src)
        torch.cuda.synchronize()


def load_variant(folder: Path) -> ModuleType:
    """Import a build/<variant>/ package under its metadata id, as kernels' importer does."""
    module_id = json.loads((folder / "metadata.json").read_text())["id"]
    spec = importlib.util.spec_from_file_location(module_id, folder / "__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_id] = module
    spec.loader.exec_module(module)
    return module


class NppiSize(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int), ("height", ctypes.c_int)]


class NppStreamContext(ctypes.Structure):  # nppdefs.h, NPP 13
    _fields_ = [("hStream", ctypes.c_void_p), ("nCudaDeviceId", ctypes.c_int),
                ("nMultiProcessorCount", ctypes.c_int), ("nMaxThreadsPerMultiProcessor", ctypes.c_int),
                ("nMaxThreadsPerBlock", ctypes.c_int), ("nSharedMemPerBlock", ctypes.c_size_t),
                ("nCudaDevAttrComputeCapabilityMajor", ctypes.c_int),
                ("nCudaDevAttrComputeCapabilityMinor", ctypes.c_int), ("nStreamFlags", ctypes.c_uint),
                ("hWorkspace", ctypes.c_uint32)]


class Npp:
    """``nppiRGBToGray_8u_C3C1R_Ctx`` through ctypes, for contiguous uint8 (..., H, W, 3) CUDA tensors."""

    def __init__(self, folder: Path) -> None:
        ctypes.CDLL(str(folder / "libnppc.so.13"), mode=ctypes.RTLD_GLOBAL)
        self._fn = ctypes.CDLL(str(folder / "libnppicc.so.13")).nppiRGBToGray_8u_C3C1R_Ctx
        self._fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int, NppiSize, NppStreamContext]
        self._fn.restype = ctypes.c_int

    def bind(self, shape: tuple[int, ...]) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
        """One frame shape on the current stream: context and ROI built here, once; per call, one ctypes call."""
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        ctx = NppStreamContext(torch.cuda.current_stream().cuda_stream, torch.cuda.current_device(),
                               props.multi_processor_count, props.max_threads_per_multi_processor,
                               props.max_threads_per_block, props.shared_memory_per_block, props.major, props.minor,
                               0, 0)
        width, rows = shape[-2], 1
        for n in shape[:-2]:
            rows *= n
        roi, fn = NppiSize(width, rows), self._fn

        def gray_into(image: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
            status = fn(image.data_ptr(), 3 * width, out.data_ptr(), width, roi, ctx)
            if status != 0:
                raise RuntimeError(f"nppiRGBToGray_8u_C3C1R_Ctx returned NppStatus {status}")
            return out

        return gray_into


NPP: Npp | None = None


def load_npp(folder: str | None) -> str:
    global NPP
    if not folder:
        return "NPP: not given (--npp DIR or $IMG2GRAY_NPP_DIR)"
    try:
        NPP = Npp(Path(folder))
    except OSError as exc:
        return f"NPP: could not load from {folder}: {exc}"
    return f"NPP: {folder}"


def contenders(dtype: torch.dtype, compiled: Callable[[torch.Tensor], torch.Tensor],
               shape: tuple[int, ...] | None = None) -> dict[str, Callable]:
    named: dict[str, Callable] = {
        "img2gray": img2gray.img2gray,
        **{name: build.img2gray for name, build in OTHER_BUILDS.items()},
        "torch.compile": compiled,
        "eager torch": reference_expression,
    }
    tv = torchvision_gray()
    if tv is not None and dtype in (torch.uint8, torch.float32):
        named["torchvision"] = tv
    if NPP is not None and dtype == torch.uint8 and shape is not None:
        npp = NPP.bind(shape)
        named["NPP + torch.empty"] = lambda image: npp(image, torch.empty(image.shape[:-1], dtype=image.dtype,
                                                                           device=image.device))
    return named


def check_same(named: dict[str, Callable], image: torch.Tensor) -> dict[str, str]:
    """Every contender against the op on a fresh input; the op's own output buffer starts poisoned."""
    expected = torch.full(image.shape[:-1], 0x5A if image.dtype == torch.uint8 else float("nan"),
                          dtype=image.dtype, device=image.device)
    img2gray.img2gray(image, out=expected)
    on_cpu = img2gray.img2gray(image.cpu())  # the CPU kernels agree with the CUDA ones bit for bit (docs/op.md)
    if not torch.equal(expected.cpu(), on_cpu):
        raise SystemExit(f"img2gray on {image.device} differs from the CPU kernels on {tuple(image.shape)} "
                         f"{image.dtype}")
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
        elif name.startswith("NPP") and diff <= 1:
            notes[name] = f"max |diff| {diff:g} (NPP rounds its float formula, not Pillow's fixed point)"
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
        ("1280x720", (720, 1280, 3), torch.uint8, "stream"),
    ]
    rows, notes = [], {}
    for label, shape, dtype, mode in cases:
        image = random_image(shape, dtype, "cuda")
        named = contenders(dtype, compiled, shape)
        for name, note in check_same(named, random_image(shape, dtype, "cuda")).items():
            notes[f"{label} {dtype}: {name}"] = note
        in_bytes = image.numel() * image.element_size()
        row = Row(label, str(dtype).replace("torch.", ""), mode, in_bytes + in_bytes // 3)
        copy_src = torch.empty(row.bytes_moved // 2, dtype=torch.uint8, device="cuda")
        copy_dst = torch.empty_like(copy_src)
        if mode == "single":
            row.add("copy", single_samples(lambda dst=copy_dst, src=copy_src: dst.copy_(src)))
            for name, fn in named.items():
                row.add(name, single_samples(lambda fn=fn, x=image: fn(x)))
        else:
            count = max(2, L2_ROTATE_BYTES // in_bytes)
            inputs = [random_image(shape, dtype, "cuda") for _ in range(count)]
            srcs = [torch.empty(row.bytes_moved // 2, dtype=torch.uint8, device="cuda") for _ in range(count)]
            blocks = {"copy": lambda dst=copy_dst, srcs=srcs: time_stream(lambda s: dst.copy_(s), srcs)}
            for name, fn in named.items():
                blocks[name] = lambda fn=fn, inputs=inputs: time_stream(fn, inputs)
            for name, samples in interleaved(blocks).items():
                row.add(name, samples)
            del inputs, srcs, blocks
        rows.append(row)
        print(f"  measured {label} {row.dtype} {mode}", file=sys.stderr, flush=True)
        del image, copy_src, copy_dst
        torch.cuda.empty_cache()
    return rows, notes


SMALL_FRAMES = [("1920x1080", (1080, 1920, 3)), ("1280x720", (720, 1280, 3))]


def small_frame_rows() -> list[Row]:
    """Back-to-back frames into a preallocated output (what a video pipeline does): the op's out= paths against
    NPP's, on rotated inputs. Host-bound at these sizes, so this is the per-call cost that users pay."""
    rows = []
    for label, shape in SMALL_FRAMES:
        in_bytes = 3 * shape[0] * shape[1]
        inputs = [random_image(shape, torch.uint8, "cuda") for _ in range(max(2, L2_ROTATE_BYTES // in_bytes))]
        out = torch.empty(shape[:-1], dtype=torch.uint8, device="cuda")
        named: dict[str, Callable] = {
            "img2gray(out=)": lambda image: img2gray.img2gray(image, out=out),
            "op.out": lambda image, op=torch.ops.img2gray.img2gray.out: op(image, out=out),
            "op._img2gray_into": lambda image, op=torch.ops.img2gray._img2gray_into.default: op(image, out),
        }
        if NPP is not None:
            npp = NPP.bind(shape)
            named["NPP"] = lambda image, npp=npp: npp(image, out)
            expected = img2gray.img2gray(inputs[0])
            diff = (npp(inputs[0], out).int() - expected.int()).abs().max().item()
            if diff > 1:
                raise SystemExit(f"NPP differs from img2gray by {diff} on {label}")
        row = Row(label, "uint8", "stream out=", in_bytes + in_bytes // 3, reference="img2gray(out=)")
        srcs = [torch.empty(row.bytes_moved // 2, dtype=torch.uint8, device="cuda") for _ in range(len(inputs))]
        dst = torch.empty_like(srcs[0])
        blocks = {"copy": lambda dst=dst, srcs=srcs: time_stream(lambda s: dst.copy_(s), srcs)}
        for name, fn in named.items():
            blocks[name] = lambda fn=fn, inputs=inputs: time_stream(fn, inputs)
        warm_gpu()
        for name, samples in interleaved(blocks).items():
            row.add(name, samples)
        rows.append(row)
        del inputs, srcs
        torch.cuda.empty_cache()
    return rows


def pipeline(frame: torch.Tensor) -> torch.Tensor:
    """A per-frame preprocessing step: RGB uint8 frame → gray float in [0, 1]."""
    return img2gray.img2gray(frame).float().mul_(1 / 255)


def time_graph(graph: torch.cuda.CUDAGraph, frames: int, replays: int = 20) -> float:
    """Milliseconds per frame of back-to-back replays of a graph that processes `frames` frames."""
    graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / (replays * frames)


def capture(body: Callable[[], object]) -> torch.cuda.CUDAGraph:
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up off the default stream, as torch.cuda.graph's docs ask
        body()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()
    return graph


def graph_rows() -> list[Row]:
    """CUDA-graph replay of a per-frame pipeline (gray, then float / 255) over 16 frame buffers (100 MB at 1080p,
    past the L2), against the same pipeline eagerly, through torch.compile(mode="reduce-overhead"), and with
    NPP doing the gray step (eager, and captured in a graph too). Per frame, back-to-back."""
    rows = []
    compiled = torch.compile(pipeline, mode="reduce-overhead", dynamic=False)
    for label, shape in SMALL_FRAMES:
        count = 16
        frames = [random_image(shape, torch.uint8, "cuda") for _ in range(count)]
        grays = [torch.empty(shape[:-1], dtype=torch.uint8, device="cuda") for _ in range(count)]
        floats = [torch.empty(shape[:-1], dtype=torch.float32, device="cuda") for _ in range(count)]
        expected = [pipeline(f) for f in frames]
        in_bytes = 3 * shape[0] * shape[1]
        # bytes of the whole pipeline: frame read, float written (the uint8 gray round trip is the pipeline's cost)
        row = Row(label, "uint8", "graph, per frame", in_bytes + 4 * in_bytes // 3, reference="graph: img2gray pipeline")

        def ours() -> None:
            for f, g, x in zip(frames, grays, floats):
                img2gray.img2gray(f, out=g)
                torch.mul(g, 1 / 255, out=x)

        graph = capture(ours)
        graph.replay()
        torch.cuda.synchronize()
        if not all(torch.equal(x, e) for x, e in zip(floats, expected)):
            raise SystemExit(f"graph replay of the img2gray pipeline differs from eager on {label}")
        gray_only = capture(lambda: [img2gray.img2gray(f, out=g) for f, g in zip(frames, grays)])
        for f in frames[:2]:
            compiled(f)
        if not torch.equal(compiled(frames[0]).clone(), expected[0]):
            raise SystemExit(f"torch.compile(mode='reduce-overhead') of the pipeline differs on {label}")
        blocks: dict[str, Callable[[], float]] = {
            "graph: img2gray pipeline": lambda graph=graph: time_graph(graph, count),
            "graph: img2gray only": lambda gray_only=gray_only: time_graph(gray_only, count),
            "eager pipeline": lambda frames=frames: time_stream(pipeline, frames),
            "torch.compile reduce-overhead": lambda frames=frames: time_stream(compiled, frames),
        }
        if NPP is not None:
            npp_eager = NPP.bind(shape)

            def npp_pipeline(f: torch.Tensor, npp_eager: Callable = npp_eager) -> torch.Tensor:
                return npp_eager(f, torch.empty(f.shape[:-1], dtype=torch.uint8, device=f.device)).float().mul_(1 / 255)

            blocks["NPP eager pipeline"] = lambda frames=frames, fn=npp_pipeline: time_stream(fn, frames)
            try:
                def npp_graph_body(frames: list = frames, grays: list = grays, floats: list = floats) -> None:
                    npp = NPP.bind(shape)  # the capture stream's context
                    for f, g, x in zip(frames, grays, floats):
                        npp(f, g)
                        torch.mul(g, 1 / 255, out=x)

                npp_graph = capture(npp_graph_body)
                npp_gray_only = capture(lambda frames=frames, grays=grays: [NPP.bind(shape)(f, g)
                                                                            for f, g in zip(frames, grays)])
                npp_gray_only.replay()
                torch.cuda.synchronize()
                if (grays[0].int() - img2gray.img2gray(frames[0]).int()).abs().max().item() > 1:
                    raise RuntimeError("NPP replayed from a CUDA graph gave other values")
                blocks["graph: NPP pipeline"] = lambda g=npp_graph: time_graph(g, count)
                blocks["graph: NPP only"] = lambda g=npp_gray_only: time_graph(g, count)
            except RuntimeError as exc:
                print(f"  NPP in a CUDA graph: {exc}", file=sys.stderr)
        warm_gpu()
        for name, samples in interleaved(blocks).items():
            row.add(name, samples)
        rows.append(row)
        print(f"  measured {label} graph rows", file=sys.stderr, flush=True)
    return rows


def host_overhead_rows(device: str) -> list[Row]:
    """Per-call cost on the host (dispatch, checks, allocation, launch) for a tiny image: wall-clock time of
    many back-to-back calls. On CUDA the calls only enqueue work, so this is the CPU cost a caller pays."""
    image = random_image((8, 8, 3), torch.uint8, device)
    out = torch.empty(8, 8, dtype=torch.uint8, device=device)
    empty, empty_out = image[:0], out[:0]
    cpu_image, cpu_out = image.cpu(), out.cpu()
    a, b = random_image((8, 8), torch.uint8, device), random_image((8, 8), torch.uint8, device)
    named: dict[str, Callable] = {
        "img2gray": img2gray.img2gray,
        "img2gray(out=)": lambda x: img2gray.img2gray(x, out=out),
        **{n: bld.img2gray for n, bld in OTHER_BUILDS.items()},
        "op.default": torch.ops.img2gray.img2gray.default,
        "op.out": lambda x, op=torch.ops.img2gray.img2gray.out: op(x, out=out),
        # the wrapper's eager out= path: img2gray.out with positional arguments and no return
        "op._img2gray_into": lambda x, op=torch.ops.img2gray._img2gray_into.default: op(x, out),
        # the same call on an empty image: every check and the whole torch.ops path, but no launch
        "op._img2gray_into, empty image": lambda x, op=torch.ops.img2gray._img2gray_into.default: op(empty, empty_out),
        # and on the CPU copies: the same torch.ops path and checks without any CUDA call (what the CUDA rows add is
        # the stream and device queries and the launch)
        "op._img2gray_into, CPU image": lambda x, op=torch.ops.img2gray._img2gray_into.default: op(cpu_image, cpu_out),
        **{f"{n} op.default": bld._ops.ops.img2gray.default for n, bld in OTHER_BUILDS.items()},
        "torch.add": lambda x: torch.add(a, b),
        "torch.empty": lambda x: torch.empty(8, 8, dtype=torch.uint8, device=device),
        # where the time goes: a torch.ops call that launches nothing
        "torch.ops.aten.alias": torch.ops.aten.alias.default,
    }
    if hasattr(torch.ops.img2gray, "_img2gray_no_grad"):  # the wrapper's allocating path when no gradient is wanted
        named["op._img2gray_no_grad"] = torch.ops.img2gray._img2gray_no_grad.default
    if device == "cuda" and NPP is not None:
        npp = NPP.bind(tuple(image.shape))
        named["NPP into out"] = lambda x: npp(x, out)
    row = Row("8x8 per call", "uint8", f"host {device}", 0)

    def block(fn: Callable) -> float:
        for _ in range(100):
            fn(image)
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(2000):
            fn(image)
        elapsed = (time.perf_counter() - start) / 2000 * 1e3
        if device == "cuda":
            torch.cuda.synchronize()
        return elapsed

    for name, samples in interleaved({name: lambda fn=fn: block(fn) for name, fn in named.items()}).items():
        row.add(name, samples)
    row.ms["copy"] = row.ms["img2gray"]  # no copy baseline for overhead rows (the record leaves it out)
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
            if name == "copy":  # copy moved 2x the input's bytes; per the op's byte count for the "% of copy" column
                times = [t * row.bytes_moved / (2 * image.numel()) for t in times]
            row.add(name, times)
        rows.append(row)
    return rows


def print_table(rows: list[Row]) -> None:
    for row in rows:
        ref = row.reference
        others = [n for n in row.ms if n not in (ref, "copy")]
        ratio = " ".join(f"{row.ms[n] / row.ms[ref]:.2f}x {n};" for n in others)
        if row.bytes_moved == 0:  # per-call overhead rows: times only
            times = " ".join(f"{n} {row.ms[n] * 1e3:.1f} us;" for n in others)
            print(f"| {row.case} | {row.dtype} | {row.mode} | {ref} | - | {row.ms[ref] * 1e3:.1f} us | - | - | {times} |")
            continue
        copy = (f"{100 * row.ms['copy'] / row.ms[ref]:.1f} % | {row.gbps('copy'):.0f} GB/s" if "copy" in row.ms
                else "- | -")
        print(f"| {row.case} | {row.dtype} | {row.mode} | {ref} | {row.gbps(ref):.0f} GB/s | {row.ms[ref] * 1e3:.1f} us "
              f"| {copy} | {ratio} |")


SECTIONS = ("large", "small", "graph", "host")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu-only", action="store_true", help="CPU rows only (run it in a fresh process)")
    parser.add_argument("--json", help="also write every measurement to this file (the rows as measured)")
    parser.add_argument("--record", help="also write the rows as a benchmark record (benchmarks/result.schema.json)")
    parser.add_argument("--also", type=Path, action="append", default=[],
                        help="another build of the op to time alongside: a build/<variant>/ folder (repeatable)")
    parser.add_argument("--npp", default=os.environ.get("IMG2GRAY_NPP_DIR"),
                        help="folder holding libnppc.so.13 and libnppicc.so.13 (default: $IMG2GRAY_NPP_DIR)")
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"GPU sections to run, comma-separated (default: all of {','.join(SECTIONS)})")
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
        print(f"device: {torch.cuda.get_device_name()}, CUDA {torch.version.cuda}; {load_npp(args.npp)}")
        sections = set(args.sections.split(","))
        runners: list[tuple[str, Callable[[], list[Row]]]] = [
            ("host", lambda: host_overhead_rows("cuda")), ("small", small_frame_rows), ("graph", graph_rows)]
        if "large" in sections:
            try:
                gpu, notes = gpu_rows()
                rows += gpu
            except Exception as exc:  # one broken section must not cost the others (one run on a CUDA host)
                print(f"section large failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        for name, run in runners:
            if name in sections:
                try:
                    rows += run()
                except Exception as exc:
                    print(f"section {name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("CPU rows: not in a process that ran torch.compile; run benchmarks/bench_cpu.py (or this with --cpu-only)")
    else:
        rows += cpu_rows() + host_overhead_rows("cpu")
    print("| input | dtype | mode | reference | reference GB/s | per call | % of copy | copy | time of others / reference |")
    print("|---|---|---|---|---|---|---|---|---|")
    print_table(rows)
    for key, note in notes.items():
        print(f"note: {key}: {note}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([asdict(r) for r in rows], f, indent=1)
    if args.record:
        import record  # this script's folder is first on sys.path

        build = f"img2gray {img2gray.build_info().abi} ABI"
        record.write(args.record, [record.make_record(
            "bench_img2gray.py", record.from_bench_img2gray([asdict(r) for r in rows]), unit="us",
            method=record.BENCH_IMG2GRAY_METHOD, builds={"img2gray": build, **{n: n for n in OTHER_BUILDS}},
            software=record.software_facts({"npp": args.npp} if NPP is not None else None),
            notes=[f"note: {key}: {note}" for key, note in notes.items()])])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
