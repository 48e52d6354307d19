"""``python -m img2gray [IMAGE OUTPUT]``: a sanity check of this install, and optionally one conversion.

Without arguments it prints the op's registration (which dispatch keys have kernels), what the build was
compiled with, and runs a tiny conversion on every available device. With ``IMAGE OUTPUT`` it also converts
an image file (Pillow reads and writes it) on the GPU if there is one, else on the CPU, and checks the result
against Pillow's own ``convert("L")``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from . import __version__, build_info, img2gray
from ._ops import add_op_namespace_prefix

_DISPATCH_KEYS = ("CPU", "CUDA", "Meta")


def _devices() -> list[torch.device]:
    devices = [torch.device("cpu")]
    if torch.cuda.is_available():
        devices += [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    return devices


def sanity_check() -> bool:
    info = build_info()
    print(f"img2gray {__version__} ({info.abi} ABI, backend {info.backend})")
    print(f"  built with torch {info.torch}, CUDA {info.cuda or '-'}, arch list {' '.join(info.cuda_arch_list) or '-'}")
    print(f"  running torch {torch.__version__}, CUDA {torch.version.cuda or '-'}")
    for overload in (add_op_namespace_prefix("img2gray"), add_op_namespace_prefix("img2gray.out")):
        keys = [k for k in _DISPATCH_KEYS if torch._C._dispatch_has_kernel_for_dispatch_key(overload, k)]
        print(f"  {overload}: kernels for {', '.join(keys)}")
    ok = True
    rgb = torch.tensor([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255]]], dtype=torch.uint8)
    expected = torch.tensor([[76, 150, 29, 255]], dtype=torch.uint8)  # Pillow's convert("L") of the same pixels
    for device in _devices():
        gray = img2gray(rgb.to(device)).cpu()
        good = torch.equal(gray, expected)
        ok &= good
        print(f"  {device}: {gray.tolist()[0]} {'ok' if good else f'WRONG (expected {expected.tolist()[0]})'}")
    return ok


def convert_file(source: Path, target: Path) -> bool:
    from PIL import Image  # only this command needs Pillow

    with Image.open(source) as opened:
        image = opened.convert("RGB")
    device = _devices()[-1]
    rgb = torch.frombuffer(bytearray(image.tobytes()), dtype=torch.uint8).reshape(image.height, image.width, 3)
    gray = img2gray(rgb.to(device)).cpu()
    Image.fromarray(gray.numpy(), mode="L").save(target)
    pillow = torch.frombuffer(bytearray(image.convert("L").tobytes()), dtype=torch.uint8)
    same = torch.equal(gray.flatten(), pillow)
    print(f"{source} ({image.width}x{image.height}) -> {target} on {device}: "
          f"{'identical to' if same else 'DIFFERS from'} Pillow's convert('L')")
    return same


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m img2gray", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("image", nargs="?", type=Path, help="an RGB image file to convert")
    parser.add_argument("output", nargs="?", type=Path, help="where to write the grayscale image")
    args = parser.parse_args(argv)
    if (args.image is None) != (args.output is None):
        parser.error("give both IMAGE and OUTPUT, or neither")
    ok = sanity_check()
    if args.image is not None:
        if not args.image.is_file():
            parser.error(f"cannot read {args.image}: no such file")
        ok &= convert_file(args.image, args.output)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
