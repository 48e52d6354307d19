"""``python -m img2gray [IMAGE OUTPUT]``: a sanity check of this install, and optionally one conversion.

Without arguments it prints the op's registration (which dispatch keys have kernels), what the build was
compiled with, and runs a tiny conversion on every available device. With ``IMAGE OUTPUT`` it also converts
an image file (Pillow reads and writes it) on the GPU if there is one, else on the CPU, and checks the result
against Pillow's own ``convert("L")``. Pillow is the wheel's ``cli`` extra (``pip install "img2gray-cu130[cli]"``);
without it the conversion is refused in one line (exit 2), and the check without arguments still runs. Neither
needs numpy.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from . import __version__, build_info, img2gray
from ._installs import own_distribution
from ._ops import add_op_namespace_prefix, ops
from ._settings import ignored_settings

if TYPE_CHECKING:
    from PIL import Image  # only this command needs Pillow: imported where it is used

_DISPATCH_KEYS = ("CPU", "CUDA", "Meta")
_TEMPORARY_EXTRA = 10  # _write_whole's temporary is ".<name>." plus 8 random characters
_COMMON_EXTENSIONS = (".bmp", ".jpg", ".png", ".tif", ".webp")  # named in the error for an unknown extension
_CLI_EXTRA = "cli"  # the wheel's extra that brings Pillow (pyproject.toml)


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
    for problem in ignored_settings(os.environ):  # the import stayed quiet about them under python -m (_settings)
        print(f"  warning: {problem}")
    for name, overload in (("img2gray", ops.img2gray.default), ("img2gray.out", ops.img2gray.out)):
        keys = [k for k in _DISPATCH_KEYS if overload.has_kernel_for_dispatch_key(getattr(torch.DispatchKey, k))]
        print(f"  {add_op_namespace_prefix(name)}: kernels for {', '.join(keys)}")
    ok = True
    rgb = torch.tensor([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255]]], dtype=torch.uint8)
    expected = torch.tensor([[76, 150, 29, 255]], dtype=torch.uint8)  # Pillow's convert("L") of the same pixels
    for device in _devices():
        gray = img2gray(rgb.to(device)).cpu()
        good = torch.equal(gray, expected)
        ok &= good
        print(f"  {device}: {gray.tolist()[0]} {'ok' if good else f'WRONG (expected {expected.tolist()[0]})'}")
    return ok


def open_rgb(source: Path) -> Image.Image:
    """``source`` decoded as RGB; ValueError saying why when Pillow cannot read it."""
    from PIL import Image, UnidentifiedImageError

    if not os.path.isfile(source):  # os.path: False, not OSError, for a name too long
        what = "not a regular file" if os.path.exists(source) else "no such file"  # a FIFO, a device, a folder
        raise ValueError(f"cannot read {source}: {what}")
    try:
        with Image.open(source) as opened:
            rgb: Image.Image = opened.convert("RGB")  # decodes the whole file: any damage shows here
            return rgb
    except UnidentifiedImageError:
        raise ValueError(f"cannot read {source}: not an image file Pillow can open") from None
    except Image.DecompressionBombError as exc:  # says how many pixels, and the limit
        raise ValueError(f"cannot read {source}: {_one_line(exc)}") from None
    except (OSError, SyntaxError, ValueError) as exc:  # what Pillow's decoders raise for damaged data
        raise ValueError(f"cannot read {source}: damaged or truncated image data ({_one_line(exc)})") \
            from None


def output_format(target: Path) -> str:
    """The Pillow format ``target``'s extension names; ValueError when it names none, or ``target`` cannot be a
    new file (no such folder, or a folder itself)."""
    from PIL import Image

    if os.path.isdir(target):
        raise ValueError(f"cannot write {target}: it is a folder")
    formats = Image.registered_extensions()
    fmt = formats.get(target.suffix.lower())
    if fmt is None or fmt not in Image.SAVE:
        writable = sorted(ext for ext, name in formats.items() if name in Image.SAVE and ext in _COMMON_EXTENSIONS)
        raise ValueError(f"cannot write {target}: expected an image file name ending in {', '.join(writable)}, ..., "
                         f"got {target.suffix or 'no extension'!r}")
    if not os.path.isdir(target.parent):
        raise ValueError(f"cannot write {target}: no such folder {target.parent}")
    try:
        name_max = os.pathconf(target.parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    if len(os.fsencode(target.name)) + _TEMPORARY_EXTRA > name_max:  # the temporary beside it needs room too
        raise ValueError(f"cannot write {target}: the file name is over {name_max - _TEMPORARY_EXTRA} bytes")
    _check_takes_new_files(target)
    return fmt


def _check_takes_new_files(target: Path) -> None:
    """ValueError unless ``target``'s folder takes the temporary file ``_write_whole`` makes there, so that an
    unwritable folder is refused before the install check and the conversion, not after them. A probe file is
    created and removed: permission bits say nothing for root or on a read-only mount."""
    try:
        descriptor, probe = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    except OSError as exc:
        raise ValueError(f"cannot write {target}: expected a folder that takes new files, {target.parent} does not "
                         f"({exc.strerror or _one_line(exc)})") from None
    os.close(descriptor)
    os.unlink(probe)


def convert_file(image: Image.Image, source: Path, target: Path, fmt: str) -> bool:
    """Convert ``image`` (read from ``source``) and write it to ``target`` whole or not at all; True when the
    result equals Pillow's ``convert("L")``."""
    from PIL import Image

    device = _devices()[-1]
    rgb = torch.frombuffer(bytearray(image.tobytes()), dtype=torch.uint8).reshape(image.height, image.width, 3)
    pixels = bytearray(image.width * image.height)  # the result's bytes, for Pillow: no numpy in between
    gray = torch.frombuffer(pixels, dtype=torch.uint8).reshape(image.height, image.width)
    gray.copy_(img2gray(rgb.to(device)))
    encoded = io.BytesIO()
    Image.frombytes("L", image.size, pixels).save(encoded, format=fmt)
    _write_whole(target, encoded.getvalue())
    pillow = torch.frombuffer(bytearray(image.convert("L").tobytes()), dtype=torch.uint8)
    same = torch.equal(gray.flatten(), pillow)
    print(f"{source} ({image.width}x{image.height}) -> {target} on {device}: "
          f"{'identical to' if same else 'DIFFERS from'} Pillow's convert('L')")
    return same


def _write_whole(target: Path, data: bytes) -> None:
    """A temporary file beside ``target``, renamed over it: a failure leaves no partial image."""
    umask = os.umask(0)
    os.umask(umask)
    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        os.chmod(temporary, 0o666 & ~umask)  # what a plain open() would have made, not mkstemp's 0600
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise


def _missing_pillow() -> str | None:
    """None when Pillow imports; else one line saying so and how to install it into this build's distribution."""
    try:
        import PIL.Image  # noqa: F401
    except ImportError as exc:
        why = "which is not installed" if exc.name == "PIL" else f"which failed to import ({_one_line(exc)})"
        return f"converting an image file needs Pillow, {why}: {_pillow_install_command()}"
    return None


def _pillow_install_command() -> str:
    """The wheel's ``cli`` extra where it has one (``make wheel``'s wheels), else Pillow itself (a wheel hub2wheel
    made from a Hub build, or a build without its ``.dist-info``)."""
    dist = own_distribution()
    if dist is not None and _CLI_EXTRA in (dist.metadata.get_all("Provides-Extra") or []):
        return f'pip install "{dist.metadata["Name"]}[{_CLI_EXTRA}]"'
    return "pip install pillow"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _path(text: str) -> Path:
    if not text:  # Path("") is the current folder
        raise argparse.ArgumentTypeError("expected a file name, got ''")
    return Path(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m img2gray", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("image", nargs="?", type=_path, help="an RGB image file to convert")
    parser.add_argument("output", nargs="?", type=_path, help="where to write the grayscale image (.png, .jpg, ...)")
    args = parser.parse_args(argv)
    if (args.image is None) != (args.output is None):
        parser.error("give both IMAGE and OUTPUT, or neither")
    image, fmt = None, ""
    if args.image is not None:  # both files are checked before any work, the cheap check first
        missing = _missing_pillow()
        if missing is not None:
            print(f"{parser.prog}: error: {missing}", file=sys.stderr)
            return 2
        try:
            fmt = output_format(args.output)
            image = open_rgb(args.image)
        except ValueError as exc:
            parser.error(str(exc))
    ok = sanity_check()
    if image is not None:
        try:
            ok &= convert_file(image, args.image, args.output, fmt)
        except (OSError, ValueError) as exc:  # the disk said no, or the format refused the image
            print(f"{parser.prog}: error: cannot write {args.output}: {_one_line(exc)}", file=sys.stderr)
            return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
