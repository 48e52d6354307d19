"""The CPU kernels' load-time switches: environment variables the compiled library reads once, as it loads.

The library reads them in a static initializer, where it cannot raise or warn, and runs the default path for a
value it does not understand. This module reads the same values by the same rules, so such a value gets one
warning that names what was expected, instead of a default path taken without a word.
"""

from __future__ import annotations

import re
import sys
import warnings
from types import FrameType
from typing import List, Mapping, Optional

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
    count). Under ``python -m img2gray`` that caller is runpy, a place that means nothing to the user: there the
    command's report lists the ignored switches instead (``__main__``)."""
    problems = ignored_settings(environ)
    if problems and _importer_module() == "runpy":
        return
    for problem in problems:
        warnings.warn(f"img2gray: {problem}", RuntimeWarning, stacklevel=4)


def _importer_module() -> Optional[str]:
    """The module whose code is importing this package: the first frame outside it and outside importlib."""
    frame: Optional[FrameType] = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not (name == __package__ or name.startswith(f"{__package__}.") or name.startswith("importlib.")
                or name.startswith("_frozen_importlib")):
            return str(name)
        frame = frame.f_back
    return None
