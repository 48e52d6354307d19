"""What a ``kernels`` release itself decides, asked inside that release's own venv (tests/helpers/kernels_releases.py).

Each module here answers for one area (``variants``, ``format_data``, ...) with functions that take one JSON
payload and return JSON. These modules import kernels' internals on purpose, release by release: they are the
reference the toolkit's own code is compared with, and run nowhere but in the oracle venvs.
"""
