"""The commands: one module each with ``main(argv) -> int`` (the exit code), run as ``kernelwheel <command>``
(``dispatch``), as ``hub2wheel`` (the convert command), or from a checkout as ``python -m tools.cli.<module>``. A
command imports libraries of the package (and ``prog`` from here), never another command."""

from __future__ import annotations

import sys
from pathlib import Path

# The checkout's spelling of each command module (tools/cli/<module>.py and tools/hub2wheel.py are shims).
_CHECKOUT = {"hub2wheel": "python -m tools.hub2wheel"}


def prog(module: str, command: str) -> str:
    """How the running command is spelled in its usage and errors: ``hub2wheel`` or ``kernelwheel <command>`` under
    those console scripts, ``python -m kernelwheel <command>``, else the checkout's ``python -m tools.cli.<module>``."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    if script.name == "hub2wheel" and module == "hub2wheel":
        return "hub2wheel"
    if script.name == "kernelwheel":
        return f"kernelwheel {command}"
    if script.name == "__main__.py" and script.parent.name == "kernelwheel":
        return f"python -m kernelwheel {command}"
    return _CHECKOUT.get(module, f"python -m tools.cli.{module}")
