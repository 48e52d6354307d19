"""Where a small out= frame's host time goes, in one process: the version bump, and inputs that rotate.

Back-to-back 720p frames are host-bound. This times `img2gray(frame, out=gray)` with and without its version bump
(`img2gray.ops.increment_version` swapped for `len` around the timed loops), `_img2gray_into` through its
C++ entry (no wrapper), and NPP, each on rotated frames (as benchmarks/bench_img2gray.py's small-frame rows) and on one
frame called again and again. Contenders alternate over rounds; medians of CUDA-event time per call. The bump rows are
the stable build's: the classic build bumps in C++ (`img2gray.ops._OUT_GUARDED_IN_CPP`), so there both time one path.

    PYTHONPATH=<site> python benchmarks/frame_host_cost.py [--npp DIR] [--rounds 7] [--shape 720,1280] [--record FILE]

``--record FILE`` also writes the medians (µs per frame, range over the rounds) as a benchmark record
(benchmarks/result.schema.json), each row against NPP where NPP ran.
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable

import bench_img2gray as bench  # this script's folder is first on sys.path
import torch

import img2gray
import img2gray.ops as img2gray_ops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--npp", default=os.environ.get("IMG2GRAY_NPP_DIR"))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--shape", default="720,1280", help="H,W of the frames (default 720,1280)")
    parser.add_argument("--record", help="also write the medians as a benchmark record (benchmarks/result.schema.json)")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}; {bench.load_npp(args.npp)}")
    height, width = map(int, args.shape.split(","))
    shape = (height, width, 3)
    frames = [bench.random_image(shape, torch.uint8, "cuda") for _ in range(bench.L2_ROTATE_BYTES // (3 * height * width))]
    out = torch.empty(shape[:-1], dtype=torch.uint8, device="cuda")
    into = img2gray_ops._into  # what the wrapper's eager out= path calls
    wrapper: Callable[[torch.Tensor], object] = lambda image: img2gray.img2gray(image, out=out)  # noqa: E731
    named: dict[str, Callable[[torch.Tensor], object]] = {
        "img2gray(out=)": wrapper,
        "_img2gray_into entry": lambda image: into(image, out),
    }
    if bench.NPP is not None:
        npp = bench.NPP.bind(shape)
        named["NPP"] = lambda image: npp(image, out)
    samples: dict[str, list[float]] = {}
    bench.warm_gpu()
    for _ in range(args.rounds):
        for name, call in named.items():
            for inputs, label in ((frames, "rotated"), (frames[:1], "one frame")):
                samples.setdefault(f"{name}, {label}", []).append(bench.time_stream(call, inputs) * 1e3)
        # the bump swapped for `len` (a C call that leaves the tensor alone), around whole timed loops
        real = img2gray_ops.increment_version
        img2gray_ops.increment_version = len  # type: ignore[assignment]
        try:
            for inputs, label in ((frames, "rotated"), (frames[:1], "one frame")):
                samples.setdefault(f"img2gray(out=) without the bump, {label}", []).append(
                    bench.time_stream(wrapper, inputs) * 1e3)
        finally:
            img2gray_ops.increment_version = real
    for name, values in samples.items():
        print(f"{name:45} {statistics.median(values):6.2f} us  ({min(values):.2f} to {max(values):.2f})")
    if args.record:
        import record  # this script's folder is first on sys.path

        rows = []
        for name, values in samples.items():
            contender, frames = name.rsplit(", ", 1)
            peer = f"NPP, {frames}"
            rows.append(record.row(f"{width}x{height} {frames}", contender, values, peer=(
                {"contender": "NPP", "median": statistics.median(samples[peer])}
                if contender != "NPP" and peer in samples else None)))
        record.write(args.record, [record.make_record(
            "frame_host_cost.py", rows, unit="us", builds={"img2gray": f"img2gray {img2gray.build_info().abi} ABI"},
            method="frame_host_cost.py: CUDA events around 200 back-to-back out= frames (rotated frames, or one frame "
                   f"again and again), contenders alternated over {args.rounds} rounds in one process; median and "
                   "range over the rounds",
            software=record.software_facts({"npp": args.npp} if bench.NPP is not None else None))])


if __name__ == "__main__":
    main()
