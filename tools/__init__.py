"""Packaging tools for img2gray and other Hub kernels; run them as ``python -m tools.<name>``."""
