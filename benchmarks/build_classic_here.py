"""``python benchmarks/build_classic_here.py SITE``: the classic binding built against the running torch with
``torch.utils.cpp_extension``, as an importable ``SITE/img2gray`` package (python/img2gray + ``_C.so``).

For the lent GPU machine, whose torch (2.11) differs from the one wheels are built against here (2.14): the
classic ABI ties a binary to one torch minor, so its tests there need a build there. Sources and flags are the
ones CMake uses (build.toml's classic binding and kernel sources; -O3 -ffp-contract=off, -fopenmp, sm_90).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import tomllib
import torch
from torch.utils.cpp_extension import load

ROOT = Path(__file__).resolve().parent.parent


def main(site: Path) -> int:
    manifest = tomllib.loads((ROOT / "build.toml").read_text())
    sources = [p for p in manifest["torch"]["src"] if p.startswith("csrc/classic/") and p.endswith(".cpp")]
    sources += [p for kernel in manifest["kernel"].values() for p in kernel["src"] if p.endswith((".cpp", ".cu"))]
    build = site.parent / "build-classic"
    build.mkdir(parents=True, exist_ok=True)
    define = ["-DIMG2GRAY_WITH_CUDA"]
    # cpp_extension turns off cuda_fp16's operators and conversions; CMake's build keeps them.
    keep_half = [f"-U__CUDA_NO_{name}__" for name in ("HALF_OPERATORS", "HALF_CONVERSIONS", "BFLOAT16_CONVERSIONS",
                                                      "HALF2_OPERATORS")]
    library = load(name="_C", sources=[str(ROOT / p) for p in sources], build_directory=str(build),
                   extra_cflags=["-O3", "-ffp-contract=off", "-fopenmp", *define],
                   extra_cuda_cflags=["-O3", "--expt-relaxed-constexpr", "-gencode=arch=compute_90,code=sm_90", *define,
                                      *keep_half],
                   is_python_module=False, verbose=False)
    package = site / "img2gray"
    shutil.rmtree(package, ignore_errors=True)
    shutil.copytree(ROOT / "python" / "img2gray", package, ignore=shutil.ignore_patterns("__pycache__", "_C*.so"))
    shutil.copy(build / "_C.so", package / "_C.so")
    minor = ".".join(torch.__version__.split(".")[:2])
    info = {"kernel": manifest["general"]["name"], "version": manifest["general"]["version"],
            "backend": {"type": "cuda", "version": torch.version.cuda, "tag": "cu" + str(torch.version.cuda).replace(".", "")},
            "abi": "classic", "requires_torch": minor, "ops_namespace": "img2gray", "torch": torch.__version__,
            "cuda": torch.version.cuda, "cuda_arch_list": ["9.0"]}
    (package / "_build_info.json").write_text(json.dumps(info, indent=2))
    print(f"classic build for torch {torch.__version__} in {package} ({library})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
