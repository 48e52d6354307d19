"""The compiled op library and its ``torch.ops`` namespace: kernel-builder's ``_ops.py`` contract.

The installed wheel's library is ``_C`` registering ``torch.ops.img2gray``; a Hub build variant
(tools/build/variants.py rewrites the two names below) uses one name unique to the build, such as
``_img2gray_cuda_1a2b3c4``, so that two builds can be loaded side by side.
"""

from __future__ import annotations

import importlib
import os

import torch  # loads libtorch (and, in CUDA builds of torch, libtorch_cuda and cudart) before our library

from ._build_info import build_info
from ._settings import warn_about_ignored_settings

_MODULE = "_C"
_NAMESPACE = "img2gray"


def _load_library() -> None:
    """Import the library (its import registers the op), turning a loader error into one that says what to do."""
    try:
        importlib.import_module(f".{_MODULE}", __package__)
    except ImportError as exc:
        raise ImportError(_explain_load_failure(str(exc))) from exc


def _explain_load_failure(message: str) -> str:
    info = build_info()
    built = f"img2gray {info.version} ({info.backend}, {info.abi} ABI, built with torch {info.torch})"
    if info.backend != "cpu" and torch.version.cuda is None:
        return (f"{built} needs a CUDA build of torch, but torch {torch.__version__} is CPU-only: install "
                f"img2gray-cpu instead. Loader said: {message}")
    if info.abi == "stable":
        return f"{built} needs torch>={info.requires_torch}; torch is {torch.__version__}. Loader said: {message}"
    return f"{built} needs torch {info.requires_torch}.x; torch is {torch.__version__}. Loader said: {message}"


_load_library()
warn_about_ignored_settings(os.environ)  # the library read them as it loaded
ops = getattr(torch.ops, _NAMESPACE)


def add_op_namespace_prefix(op_name: str) -> str:
    """``"img2gray"`` → ``"img2gray::img2gray"`` (or the build's unique namespace), for torch.library calls."""
    return f"{_NAMESPACE}::{op_name}"


def impl_library() -> torch.library.Library:
    """A ``torch.library.Library`` that adds kernels to this build's ops; its registrations last as long as it does."""
    return torch.library.Library(_NAMESPACE, "IMPL")  # type: ignore[no-untyped-call]
