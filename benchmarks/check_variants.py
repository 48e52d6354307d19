"""``python benchmarks/check_variants.py build/<variant> ...``: each Hub variant, imported the way the ``kernels``
library imports it (``bench_img2gray.load_variant``), against the installed img2gray on the CPU and, if there
is a GPU, on CUDA.

Used by gpu_run.sh's variants phase on a CUDA host, where the ``kernels`` library itself need not be installed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from bench_img2gray import load_variant, random_image

import img2gray

SHAPE = (3, 257, 1031, 3)


def main(folders: list[Path]) -> int:
    devices = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
    all_ok = True
    for folder in folders:
        module_id = json.loads((folder / "metadata.json").read_text())["id"]
        if module_id in sys.modules:  # same build id as a variant already loaded: Python would hand back that one
            print(f"{folder.name}: skipped, its id {module_id} is already loaded (one process, one build per id)")
            continue
        try:
            variant = load_variant(folder)
        except Exception as exc:  # a classic variant for another torch minor may not load: say so, go on
            print(f"{folder.name}: does not load under torch {torch.__version__}: {type(exc).__name__}: {exc}")
            all_ok = False
            continue
        ok = True
        for device in devices:
            for dtype in (torch.uint8, torch.float32, torch.float16, torch.bfloat16):
                x = random_image(SHAPE, dtype, device)
                ok &= torch.equal(variant.img2gray(x), img2gray.img2gray(x))
        all_ok &= ok
        print(f"{folder.name}: ops {module_id}, same results as the installed img2gray on {' and '.join(devices)}: {ok}")
    return 0 if all_ok else 1


if __name__ == "__main__":
    raise SystemExit(main([Path(p) for p in sys.argv[1:]]))
