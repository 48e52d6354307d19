"""img2gray: RGB → grayscale as a native PyTorch op, ``torch.ops.img2gray.img2gray``.

Importing the package loads the compiled library, which registers the op's CPU (and, in CUDA builds, CUDA)
kernels with the dispatcher; ``img2gray.img2gray`` is the checked Python entry point.
"""

from . import _ops  # noqa: F401  (loads the compiled library, which registers the op)
from ._build_info import BuildInfo, build_info
from .ops import img2gray

__all__ = ["BuildInfo", "__version__", "build_info", "img2gray"]
__version__: str = build_info().version
