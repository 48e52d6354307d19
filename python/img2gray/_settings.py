"""The CPU kernels' load-time switches: environment variables the compiled library reads once, as it loads.

The library reads them in a static initializer, where it cannot raise or warn, and runs the default path for a
value it does not understand. This module reads the same values by the same rules, so such a value gets one
warning that names what was expected, instead of a default path taken without a word.
"""

from __future__ import annotations

import re
import warnings
from typing import List, Mapping

ISA_SETTING = "IMG2GRAY_CPU_ISA"
ISA_CHOICES = ("avx2", "scalar")  # each narrows the path; unset runs the widest the CPU has
COUNT_SETTINGS = ("IMG2GRAY_CPU_STREAM_BYTES", "IMG2GRAY_CPU_TILE_PIXELS")
# What csrc/img2gray_cpu.cpp's env_setting accepts: std::strtoll consuming the whole value, not negative.
_COUNT = re.compile(r"[ \t\n\v\f\r]*(\+?[0-9]+|-0+)")


def ignored_settings(environ: Mapping[str, str]) -> List[str]:
    """One line for each switch that is set to a value the library ignores."""
    problems: List[str] = []
    isa = environ.get(ISA_SETTING)
    if isa is not None and isa not in ISA_CHOICES:
        problems.append(f"{ISA_SETTING}={isa!r} is ignored: expected one of {', '.join(ISA_CHOICES)} "
                        "(or unset, for the widest path the CPU runs)")
    for name in COUNT_SETTINGS:
        value = environ.get(name)
        if value is not None and not _COUNT.fullmatch(value):
            problems.append(f"{name}={value!r} is ignored: expected a whole number >= 0")
    return problems


def warn_about_ignored_settings(environ: Mapping[str, str]) -> None:
    """Warns for each ignored switch; called by ``_ops`` as the package loads, so that the warning points at the
    caller's ``import img2gray`` (this function, ``_ops``, the package's ``__init__``; importlib's frames do not
    count)."""
    for problem in ignored_settings(environ):
        warnings.warn(f"img2gray: {problem}", RuntimeWarning, stacklevel=4)
