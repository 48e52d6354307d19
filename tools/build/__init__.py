"""img2gray's own build: the PEP 517 backend, wheel repair, Hub-layout variants, and the facts CMake reads.

``manifest.py`` and ``torch_probe.py`` are also run by CMake by path, with the build's interpreter: standard library
only, importable without this repository on ``sys.path``.
"""
