"""img2gray: RGB → grayscale as a native PyTorch op, ``torch.ops.img2gray.img2gray``.

Importing the package loads the compiled library, which registers the op's CPU (and, in CUDA builds, CUDA)
kernels with the dispatcher; ``img2gray.img2gray`` is the checked Python entry point.
"""

from pathlib import Path as _Path

from ._installs import check_single_build

check_single_build(_Path(__file__).parent)  # before the library loads: two builds in one folder is an error

from . import _ops  # noqa: E402, F401  (loads the compiled library, which registers the op)
from ._build_info import BuildInfo, build_info  # noqa: E402
from .ops import img2gray  # noqa: E402

__all__ = ["BuildInfo", "__version__", "build_info", "img2gray"]
__version__: str = build_info().version
