"""Where torch is installed and what it was built with, read from ``torch/version.py`` without importing torch.

``python tools/build/torch_probe.py`` prints ``KEY=VALUE`` lines (``ROOT``, ``VERSION``, ``CUDA``; ``CUDA`` is empty
for a CPU-only torch) for CMakeLists.txt and for ``tools.build.variants``, which runs it with each build environment's
interpreter. Importing torch is avoided on purpose: it fails in venvs holding torch installed ``--no-deps``
(without its nvidia-* runtime wheels), which are still fine to build against. Standard library only.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TorchFacts:
    root: Path  # the torch package folder (include/, lib/, share/cmake/ live here)
    version: str  # e.g. "2.14.1+cu130"
    cuda: str  # e.g. "13.0"; "" for a CPU-only torch


def probe() -> TorchFacts:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise LookupError(f"torch is not installed for {sys.executable}")
    root = Path(spec.origin).parent
    source = (root / "version.py").read_text(encoding="utf-8")

    def field(name: str) -> str:
        match = re.search(name + r"(?:: Optional\[str\])? = '([^']*)'", source)
        return match[1] if match else ""

    return TorchFacts(root, field("__version__"), field("cuda"))


def main() -> int:
    try:
        facts = probe()
    except (LookupError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"ROOT={facts.root}")
    print(f"VERSION={facts.version}")
    print(f"CUDA={facts.cuda}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
