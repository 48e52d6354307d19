"""CPU speed of the installed img2gray op against its peers: ``python benchmarks/bench_cpu.py [--json FILE]``.

Every row (image size × dtype × thread count) runs in fresh Python processes, so no earlier row's threads or
worker pools (torch.compile starts inductor's) share the machine with it; and torch's contenders run in other
processes than OpenCV and Pillow (alternated, twice each), because two thread pools in one process slow each
other: beside torch's OpenMP workers OpenCV's 4K uint8 on 2 threads went from 1.18 to 1.8 ms, and torch's calls
stalled for ~8 ms while OpenCV's pool ran. The op is timed alone in its processes too: beside eager torch's
100 MB temporaries and the copy ceiling, its 1080p float32 2-thread call took 460 us against 329-350 us alone
(benchmarks/NOTES.md, C7). Within a process the contenders are timed round-robin after two
warm-up rounds; per round each contender makes two calls on the same input and the second is timed, so no
contender inherits a cache that another one filled. Each cell is the median over all rounds (the JSON also has
each best call, page faults per call, and the highest 1-minute load average: on a shared machine it shows):

* img2gray: the op as users call it (allocates its output) and with ``out=`` (no allocation);
* OpenCV ``cv2.cvtColor(COLOR_RGB2GRAY)``, likewise with and without ``dst=`` (opencv-python-headless; optional:
  without it those columns say "-");
* Pillow ``Image.convert("L")`` (uint8 only; always one thread), and the op's formula in eager torch;
* ceiling: ``torch.Tensor.copy_`` of the same total bytes (half read, half written): the memory bandwidth
  the machine gives this row's thread count, as a time the op would take at that rate.

Buffers: the input is one numpy array; ``out=``, ``dst=`` and the copy ceiling's buffers are numpy arrays too, so
every contender runs on the same kind of memory (numpy asks Linux for transparent huge pages from 4 MiB on; with
``torch.empty``'s 4 KiB pages the float32 4K call took up to 40 % longer on the 2-core development VM). The
allocating calls use each library's own allocator, as their users get it: torch's output lands in 4 KiB pages
(unless THP is ``always``), OpenCV's in numpy's. The header records the machine's THP mode.

``--tile-pixels N`` (repeatable) adds, per row, processes that time the op alone under
``IMG2GRAY_CPU_TILE_PIXELS=N``, alternated with the others, and a second table that sets them side by side.

``--size``, ``--dtype`` and ``--threads`` pick rows; ``--alternations N`` makes each row's process groups take
turns N times (default 2), which evens out a VM whose memory bandwidth drifts within minutes.

Thread counts: 1 and all (``torch.set_num_threads`` and ``cv2.setNumThreads``). Builds nothing: it measures
whatever ``import img2gray`` finds. Before timing, each row checks that img2gray matches Pillow (uint8) or the
documented fp32 formula (float32) on its input.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import record  # this script's folder is first on sys.path; record.py needs only the standard library

SIZES = {"3840x2160": (2160, 3840), "1920x1080": (1080, 1920)}
DTYPES = ("uint8", "float32")


def transparent_hugepage_mode() -> str:
    """The kernel's THP setting (``always``, ``madvise`` or ``never``): it decides which buffers get huge pages."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as setting:
            return next((word[1:-1] for word in setting.read().split() if word.startswith("[")), "unknown")
    except OSError:
        return "unknown"


def make_image(size: str, dtype_name: str) -> Any:
    """The row's input as a numpy array, the same in every process."""
    import numpy as np

    h, w = SIZES[size]
    image = np.random.default_rng(0).integers(0, 256, (h, w, 3), dtype=np.uint8)
    return image if dtype_name == "uint8" else (image.astype(np.float32) / 255).astype(np.float32)


def torch_contenders(array: Any, threads: int) -> dict[str, Callable[[], object]]:
    """img2gray, eager torch and the copy ceiling: everything that runs on torch's thread pool."""
    import numpy as np
    import torch
    from PIL import Image

    import img2gray

    torch.set_num_threads(threads)
    image = torch.from_numpy(array)
    # out= gets the same kind of buffer as OpenCV's dst=: numpy's (which asks Linux for transparent huge pages
    # from 4 MiB on), not torch.empty's 4 KiB pages; the page size alone moved float32 4K by up to 40 % (NOTES.md).
    out = torch.from_numpy(np.zeros(array.shape[:-1], dtype=array.dtype))
    total = image.numel() * image.element_size() * 4 // 3  # bytes read + written by the op
    copy_src = torch.from_numpy(np.ones(total // 2, dtype=np.uint8))
    copy_dst = torch.from_numpy(np.zeros(total // 2, dtype=np.uint8))

    def eager() -> torch.Tensor:
        if image.dtype == torch.uint8:
            x = image.to(torch.int32)
            return ((x[..., 0] * 19595 + x[..., 1] * 38470 + x[..., 2] * 7471 + 32768) >> 16).to(torch.uint8)
        return (0.299 * image[..., 0] + 0.587 * image[..., 1]) + 0.114 * image[..., 2]

    if image.dtype == torch.uint8:
        expected = torch.from_numpy(np.asarray(Image.fromarray(array, mode="RGB").convert("L")).copy())
    else:
        expected = eager()
    assert torch.equal(img2gray.img2gray(image), expected), "img2gray differs from the reference"
    return {
        "img2gray": lambda: img2gray.img2gray(image),
        "img2gray out=": lambda: img2gray.img2gray(image, out=out),
        "eager torch": eager,
        "ceiling: copy": lambda: copy_dst.copy_(copy_src),
    }


def other_contenders(array: Any, threads: int) -> dict[str, Callable[[], object]]:
    """OpenCV (its own thread pool) and Pillow (one thread), in a process that never imports torch."""
    import numpy as np
    from PIL import Image

    contenders: dict[str, Callable[[], object]] = {}
    try:
        import cv2
    except ImportError:
        cv2 = None
    if cv2 is not None:
        cv2.setNumThreads(threads)
        out_array = np.zeros(array.shape[:-1], dtype=array.dtype)  # touched once, like img2gray's out=
        contenders["opencv"] = lambda: cv2.cvtColor(array, cv2.COLOR_RGB2GRAY)
        contenders["opencv dst="] = lambda: cv2.cvtColor(array, cv2.COLOR_RGB2GRAY, dst=out_array)
    if array.dtype == np.uint8:
        pil_image = Image.fromarray(array, mode="RGB")
        contenders["pillow"] = lambda: pil_image.convert("L")
    return contenders


def measure_group(size: str, dtype_name: str, threads: int, group: str, rounds: int) -> dict[str, Any]:
    """One group of contenders, in this (fresh) process: call times in seconds and page faults per contender."""
    array = make_image(size, dtype_name)
    contenders = (other_contenders if group == "other" else torch_contenders)(array, threads)
    if group != "other":  # the op alone in its processes; eager torch and the copy ceiling in theirs
        alone = group == "img2gray"
        contenders = {name: fn for name, fn in contenders.items() if name.startswith("img2gray") == alone}
    times: dict[str, list[float]] = {name: [] for name in contenders}
    faults = dict.fromkeys(contenders, 0)  # minor page faults: fresh pages for an output cost time too
    for index in range(rounds + 2):
        for name, fn in contenders.items():
            if name == "eager torch" and index >= 5:  # 30-100x slower than the rest; 3 timed calls suffice
                continue
            fn()  # untimed: every timed call finds the caches as its own previous call left them
            faults_before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.perf_counter()
            fn()
            elapsed = time.perf_counter() - start
            if index >= 2:
                times[name].append(elapsed)
                faults[name] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults_before
    try:
        import cv2

        opencv = cv2.__version__ if group != "torch" else None
    except ImportError:
        opencv = None
    return {"times": times, "faults": faults, "opencv": opencv, "load_average": os.getloadavg()[0]}


def run_row(size: str, dtype_name: str, threads: int, alternations: int = 2,
            tile_settings: tuple[int, ...] = ()) -> dict[str, Any]:
    """The row's groups in fresh processes, alternated: the op alone, eager torch with the copy ceiling, OpenCV
    with Pillow; with ``tile_settings``, one more op-alone process per setting under ``IMG2GRAY_CPU_TILE_PIXELS``
    (read when the op loads), its contenders named ``img2gray [tile N]``."""
    h, w = SIZES[size]
    rounds = 12 if h * w > 4_000_000 else 40  # per process; float32 moves 4x the bytes
    if dtype_name != "uint8":
        rounds = rounds * 2 // 3
    times: dict[str, list[float]] = {}
    faults: dict[str, int] = {}
    opencv, loads = None, []
    groups: list[tuple[str, int | None]] = [("img2gray", None), *(("img2gray", t) for t in tile_settings),
                                            ("torch", None), ("other", None)]
    for _ in range(alternations):
        for group, tile in groups:
            command = [sys.executable, os.path.abspath(__file__), "--group", size, dtype_name, str(threads), group,
                       str(rounds)]
            env = None if tile is None else {**os.environ, "IMG2GRAY_CPU_TILE_PIXELS": str(tile)}
            done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
            if done.returncode != 0:
                raise SystemExit(f"row {size} {dtype_name} x{threads} ({group}) failed:\n{done.stderr.strip()}")
            part = json.loads(done.stdout.strip().splitlines()[-1])
            for measured, values in part["times"].items():
                name = measured if tile is None else f"{measured} [tile {tile}]"
                times.setdefault(name, []).extend(values)
                faults[name] = faults.get(name, 0) + part["faults"][measured]
            opencv = opencv or part["opencv"]
            loads.append(part["load_average"])
    order = ["img2gray", "img2gray out=", "opencv", "opencv dst=", "pillow", "eager torch", "ceiling: copy"]
    names = [name for name in order if name in times] + sorted(name for name in times if "[tile" in name)
    return {
        "size": size,
        "dtype": dtype_name,
        "threads": threads,
        "bytes": h * w * 4 * (1 if dtype_name == "uint8" else 4),
        "ms": {name: statistics.median(times[name]) * 1e3 for name in names},
        "best_ms": {name: min(times[name]) * 1e3 for name in names},
        "spread_ms": {name: [min(times[name]) * 1e3, max(times[name]) * 1e3] for name in names},
        "n": {name: len(times[name]) for name in names},
        "page_faults_per_call": {name: faults[name] / len(times[name]) for name in names},
        "load_average": max(loads),
        "opencv": opencv,
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    print("| image | dtype | threads | img2gray | out= | OpenCV | OpenCV dst= | Pillow | eager torch | copy ceiling |"
          " img2gray vs OpenCV | img2gray % of ceiling | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        ms = row["ms"]

        def cell(name: str) -> str:
            return f"{ms[name] * 1e3:.0f} us" if name in ms else "-"

        best = row["best_ms"]
        ratio = (f"{ms['opencv'] / ms['img2gray']:.2f}x (best {best['opencv'] / best['img2gray']:.2f}x)"
                 if "opencv" in ms else "-")
        ratio_out = f"{ms['opencv dst='] / ms['img2gray out=']:.2f}x" if "opencv dst=" in ms else "-"
        ceiling = f"{ms['ceiling: copy'] / ms['img2gray'] * 100:.0f} %"
        print(f"| {row['size']} | {row['dtype']} | {row['threads']} | {cell('img2gray')} | {cell('img2gray out=')} | "
              f"{cell('opencv')} | {cell('opencv dst=')} | {cell('pillow')} | {cell('eager torch')} | "
              f"{cell('ceiling: copy')} ({row['bytes'] / ms['ceiling: copy'] / 1e6:.0f} GB/s) | "
              f"{ratio} (out=/dst=: {ratio_out}) | {ceiling} | {row['load_average']:.1f} |")


def print_tile_table(rows: list[dict[str, Any]], tile_settings: tuple[int, ...]) -> None:
    """The op under each IMG2GRAY_CPU_TILE_PIXELS setting, beside the default build's own numbers and OpenCV's."""
    print("| image | dtype | threads | tile pixels | img2gray | out= | vs OpenCV (out=/dst=) |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        ms = row["ms"]
        for label, suffix in [("default", ""), *((str(t), f" [tile {t}]") for t in tile_settings)]:
            alloc, out = ms[f"img2gray{suffix}"], ms[f"img2gray out={suffix}"]
            ratio = (f"{ms['opencv'] / alloc:.2f}x ({ms['opencv dst='] / out:.2f}x)" if "opencv" in ms else "-")
            print(f"| {row['size']} | {row['dtype']} | {row['threads']} | {label} | {alloc * 1e3:.0f} us | "
                  f"{out * 1e3:.0f} us | {ratio} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="also write every measurement to this file")
    parser.add_argument("--record", help="also write the rows as a benchmark record (benchmarks/result.schema.json)")
    parser.add_argument("--threads", type=int, action="append",
                        help="thread counts to run (default: 1 and all of os.sched_getaffinity)")
    parser.add_argument("--tile-pixels", type=int, action="append", default=[], metavar="N",
                        help="also time the op with IMG2GRAY_CPU_TILE_PIXELS=N (0 = one tile per thread), "
                             "in its own processes between the default's and OpenCV's")
    parser.add_argument("--size", action="append", choices=list(SIZES), help="only these image sizes (default: all)")
    parser.add_argument("--dtype", action="append", choices=DTYPES, help="only these dtypes (default: both)")
    parser.add_argument("--alternations", type=int, default=2, metavar="N",
                        help="times each row's process groups take turns (default 2; more evens out a machine "
                             "whose memory bandwidth drifts)")
    parser.add_argument("--group", nargs=5, metavar=("SIZE", "DTYPE", "THREADS", "GROUP", "ROUNDS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.alternations < 1:
        parser.error(f"--alternations: expected a count of at least 1, got {args.alternations}")
    if args.group:
        size, dtype_name, threads, group, rounds = args.group
        print(json.dumps(measure_group(size, dtype_name, int(threads), group, int(rounds))))
        return 0

    import torch

    import img2gray

    cores = len(os.sched_getaffinity(0))
    thread_counts = args.threads or sorted({1, cores})
    tile_settings = tuple(args.tile_pixels)
    rows = []
    for size in args.size or SIZES:
        for dtype_name in args.dtype or DTYPES:
            for threads in thread_counts:
                rows.append(run_row(size, dtype_name, threads, args.alternations, tile_settings))
                medians = ", ".join(f"{name} {ms * 1e3:.0f} us" for name, ms in rows[-1]["ms"].items())
                print(f"{size} {dtype_name} x{threads}: {medians}", file=sys.stderr, flush=True)  # a cut run keeps these
    header = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": record.cpu_model(),
        "cores": cores,
        "torch": torch.__version__,
        "img2gray": f"{img2gray.__version__} ({img2gray.build_info().abi})",
        "opencv": rows[0]["opencv"],
        "python": platform.python_version(),
        "tile_pixels": os.environ.get("IMG2GRAY_CPU_TILE_PIXELS", "default"),
        "load_average": os.getloadavg(),
        "transparent_hugepages": transparent_hugepage_mode(),
    }
    print(" · ".join(f"{key}: {value}" for key, value in header.items()))
    print_table(rows)
    if tile_settings:
        print_tile_table(rows, tile_settings)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"header": header, "rows": rows}, out, indent=1)
    if args.record:

        other = {"opencv": str(header["opencv"])} if header["opencv"] else {}
        settings = {key: os.environ[key] for key in ("IMG2GRAY_CPU_ISA", "IMG2GRAY_CPU_TILE_PIXELS",
                                                     "IMG2GRAY_CPU_STREAM_BYTES") if key in os.environ}
        record.write(args.record, [record.make_record(
            "bench_cpu.py", record.from_bench_cpu({"rows": rows}), unit="us", method=record.BENCH_CPU_METHOD,
            host=record.host_facts(details={"transparent_hugepages": str(header["transparent_hugepages"])}),
            software=record.software_facts(other), builds={"img2gray": str(header["img2gray"])},
            notes=[f"environment: {key}={value}" for key, value in settings.items()])])
    return 0


if __name__ == "__main__":
    sys.exit(main())
