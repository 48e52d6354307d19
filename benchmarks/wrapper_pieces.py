"""What each piece of the Python wrapper's eager path costs on this host, on 8x8 CPU tensors (no launch, so the
Python and the `torch.ops` call are all there is): the wrapper, `_img2gray_into`'s C++ entry, and the calls the
wrapper makes around it (the objects img2gray.ops holds). Best of 5 x 200k calls each, three rounds.

    PYTHONPATH=<site> python benchmarks/wrapper_pieces.py [LABEL]
"""

from __future__ import annotations

import sys
import timeit

import torch

import img2gray
import img2gray.ops as img2gray_ops

PIECES = {
    "img2gray(out=)": "wrapper(image, out=out)",
    "img2gray()": "wrapper(image)",
    "_img2gray_into entry": "into(image, out)",
    "increment_version": "increment_version(out)",
    "is_compiling()": "is_compiling()",
    "is_dynamo_compiling()": "is_dynamo_compiling()",
    "type(image) is not Tensor": "type(image) is not Tensor",
    "image.requires_grad": "image.requires_grad",
}


def main() -> None:
    label = sys.argv[1] if len(sys.argv) > 1 else img2gray.build_info().abi
    scope = {
        "wrapper": img2gray.img2gray, "into": img2gray_ops._into, "Tensor": torch.Tensor,
        "increment_version": img2gray_ops.increment_version, "is_compiling": img2gray_ops._is_compiling,
        "is_dynamo_compiling": img2gray_ops._is_dynamo_compiling,
        "image": torch.randint(0, 256, (8, 8, 3), dtype=torch.uint8), "out": torch.empty(8, 8, dtype=torch.uint8),
    }
    for _ in range(3):
        cells = []
        for name, statement in PIECES.items():
            best = min(timeit.repeat(statement, number=200_000, repeat=5, globals=scope)) / 200_000
            cells.append(f"{name} {best * 1e6:.3f}")
        print(f"{label}: " + "; ".join(cells) + " (us)")


if __name__ == "__main__":
    main()
