"""Builders for kernel repositories used by the hub2wheel tests and benchmark (flat and nested layouts).

The compiled variants hold a real ELF Python extension compiled with ``gcc`` against the limited API
(``_img2gray_<backend>_<id>.abi3.so``, exporting ``PyInit_*`` and a ``weights()`` function); ``img2gray(x)`` in the
variant's ``__init__.py`` uses it, so an installed wheel can be imported and run on the CPU.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import sysconfig
from collections.abc import Iterable, Mapping
from pathlib import Path

OPS_ID = "abc1234"

_C_SOURCE = r"""
#define Py_LIMITED_API 0x03090000
#include <Python.h>
#include <math.h>

static PyObject *weights(PyObject *self, PyObject *args) {
    /* ITU-R BT.601 luma weights; sqrt() makes the module need a versioned libm symbol. */
    volatile double one = 1.0;
    return Py_BuildValue("(ddd)", 0.299 * sqrt(one), 0.587, 0.114);
}

static PyMethodDef methods[] = {{"weights", weights, METH_NOARGS, "luma weights"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "@NAME@", NULL, -1, methods};
PyMODINIT_FUNC PyInit_@NAME@(void) { return PyModule_Create(&module); }
"""

_INIT = '''"""img2gray test kernel ({variant})."""
import torch

from ._ops import ext

__all__ = ["img2gray"]


def img2gray(x: torch.Tensor) -> torch.Tensor:
    """(..., 3, H, W) RGB → (..., 1, H, W) luma."""
    w = torch.tensor(ext.weights(), dtype=x.dtype, device=x.device).view(3, 1, 1)
    return (x * w).sum(dim=-3, keepdim=True)
'''

_OPS = "from . import {module} as ext\n"

_NOARCH_INIT = '''"""img2gray test kernel (noarch)."""
import torch

__all__ = ["img2gray"]


def img2gray(x: torch.Tensor) -> torch.Tensor:
    w = torch.tensor([0.299, 0.587, 0.114], dtype=x.dtype, device=x.device).view(3, 1, 1)
    return (x * w).sum(dim=-3, keepdim=True)
'''


def compile_extension(out: Path, module: str, cache_dir: Path) -> Path:
    """Compile (once per module name, cached in ``cache_dir``) the tiny abi3 extension to ``out``."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    cached = cache_dir / f"{module}.abi3.so"
    if not cached.exists():
        src = cache_dir / f"{module}.c"
        src.write_text(_C_SOURCE.replace("@NAME@", module))
        include = sysconfig.get_paths()["include"]
        subprocess.run(
            ["gcc", "-shared", "-fPIC", "-O1", f"-I{include}", str(src), "-o", str(cached), "-lm"], check=True
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cached, out)
    return out


def kernel_builder_digest(variant_dir: Path, algorithm: str = "sha256") -> dict[str, object]:
    """The ``digest`` kernel-builder writes, computed by kernels' own ``Digest.hash_variant`` over the folder (the
    newest supported release's, asked in its oracle venv: the venv running the tests may hold any release)."""
    # Imported here: this module is loaded (through the fixture plugin) by op-test runs that need no kernels.
    from tests.helpers.kernels_releases import SUPPORTED_KERNELS, ask

    answer: dict[str, object] = ask(SUPPORTED_KERNELS[-1], "format_data", "write_digest",
                                    {"variant": str(variant_dir), "algorithm": algorithm})
    if "error" in answer:
        raise AssertionError(f"kernels could not digest {variant_dir}: {answer['error']}")
    return answer


def digest(files: Mapping[str, bytes]) -> dict[str, object]:
    """The same ``digest`` computed here from file contents (for variants assembled in memory)."""
    return {
        "algorithm": "sha256",
        "files": {rel: base64.b64encode(hashlib.sha256(data).digest()).decode() for rel, data in sorted(files.items())},
    }


def is_noarch(variant: str) -> bool:
    """A folder without compiled parts: ``torch-<backend>``, ``mlx-<backend>``, ``sdk``, ``sdk-<backend>`` (not
    ``torch-stable-abi...`` or a kernels 0.19 name such as ``torch-2.14-...``)."""
    parts = variant.split("-")
    if parts[0] == "sdk":
        return "cpython" not in parts
    return parts[0] in ("torch", "mlx") and len(parts) > 1 and parts[1][:1].isalpha() and parts[1] != "stable"


def _backend_type(variant: str) -> str:
    for key, kind in (("-cu", "cuda"), ("-rocm", "rocm"), ("-xpu", "xpu"), ("-metal", "metal"), ("-cpu", "cpu")):
        if key in variant:
            return kind
    return variant.split("-")[-1] if variant.startswith(("mlx-", "sdk")) else variant.removeprefix("torch-")


def build_id(name: str, backend: str, variant: str) -> str:
    """metadata.json's ``id``: unique per build, as kernels 0.19 requires (it imports a build under its id and
    refuses a second, different build with the same one), so every variant of a fixture has its own."""
    return f"_{name}_{backend}_{OPS_ID}_{hashlib.sha256(variant.encode()).hexdigest()[:7]}"


def flat_variant(
    build: Path, variant: str, so_cache: Path, *, name: str = "img2gray", version: int = 1, with_digest: bool = True
) -> Path:
    """``build/<variant>/`` in the current flat layout, with ``metadata.json`` (and its digest)."""
    vdir = build / variant
    vdir.mkdir(parents=True, exist_ok=True)
    backend = _backend_type(variant)
    noarch = is_noarch(variant)
    files: dict[str, bytes] = {}
    if noarch:
        files["__init__.py"] = _NOARCH_INIT.encode()
    else:
        module = f"_{name}_{backend}_{OPS_ID}"
        so = compile_extension(vdir / f"{module}.abi3.so", module, so_cache)
        files[so.name] = so.read_bytes()
        files["__init__.py"] = _INIT.format(variant=variant).encode()
        files["_ops.py"] = _OPS.format(module=module).encode()
    for rel, data in files.items():
        (vdir / rel).write_bytes(data)
    meta: dict[str, object] = {
        "name": name,
        "id": build_id(name, backend, variant),
        "version": version,
        "license": "Apache-2.0",
        "python-depends": [],
        "backend": {"type": backend},
    }
    if with_digest:
        meta["digest"] = kernel_builder_digest(vdir)
    (vdir / "metadata.json").write_text(json.dumps(meta, indent=2))
    return vdir


def zip_variant(build: Path, variant: str, so_cache: Path, *, extra_members: Mapping[str, bytes] | None = None,
                with_digest: bool = True) -> Path:
    """``build/<variant>/`` in kernels 0.19's zip layout: the Python files of ``flat_variant`` inside ``<id>.zip``,
    the extension module beside it, metadata.json with ``"build-layout": "zip"`` and a digest over the archive.
    ``extra_members``: more archive members, written as given (hostile names included)."""
    import zipfile

    vdir = flat_variant(build, variant, so_cache, with_digest=False)
    meta = json.loads((vdir / "metadata.json").read_text())
    archive = vdir / f"{meta['id']}.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for py in sorted(vdir.glob("*.py")):
            zf.writestr(py.name, py.read_bytes())
            py.unlink()
        for name, data in (extra_members or {}).items():
            zf.writestr(name, data)
    meta["build-layout"] = "zip"
    (vdir / "metadata.json").unlink()
    if with_digest:
        meta["digest"] = kernel_builder_digest(vdir)
    (vdir / "metadata.json").write_text(json.dumps(meta, indent=2))
    return vdir


def nested_variant(build: Path, variant: str, so_cache: Path, *, package: str = "img2gray",
                   with_metadata: bool = False) -> Path:
    """``build/<variant>/<package>/`` in the older nested layout: no metadata.json, unless ``with_metadata`` (then
    ``build/<variant>/metadata.json``, whose digest names ``<package>/...``, as a signed nested build has)."""
    pdir = build / variant / package
    pdir.mkdir(parents=True, exist_ok=True)
    if variant == "torch-universal":
        (pdir / "__init__.py").write_text(_NOARCH_INIT)
    else:
        module = f"_{package}_{OPS_ID}"
        compile_extension(pdir / f"{module}.abi3.so", module, so_cache)
        (pdir / "__init__.py").write_text(_INIT.format(variant=variant))
        (pdir / "_ops.py").write_text(_OPS.format(module=module))
    if with_metadata:
        meta = {"name": package, "id": f"_{package}_{OPS_ID}", "version": 1, "license": "Apache-2.0",
                "python-depends": [], "backend": {"type": _backend_type(variant)},
                "digest": kernel_builder_digest(pdir.parent)}
        (pdir.parent / "metadata.json").write_text(json.dumps(meta, indent=2))
    return pdir


FLAT_VARIANTS = (
    "torch213-cxx11-cpu-x86_64-linux",
    "torch213-cxx11-cu130-x86_64-linux",
    "torch212-cxx11-rocm71-x86_64-linux",
    "torch-stable-abi210-cu130-x86_64-linux",
    "torch213-xpu20253-x86_64-linux",
    "torch-cpu",
    "torch-cuda",
    "torch213-metal-aarch64-darwin",
    "tvm-ffi213-cu130-x86_64-linux",
)
NESTED_VARIANTS = (
    "torch29-cxx11-cu128-x86_64-linux",
    "torch210-cxx11-cpu-x86_64-linux",
    "torch-universal",
)


# The wheels `python -m tools.hub2wheel` writes for make_flat_repo's variants.
FLAT_WHEELS = frozenset({
    "img2gray-1-py3-none-any.whl",
    "img2gray_cpu-1+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl",
    "img2gray_cu130-1+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl",
    "img2gray_cu130-1-cp39-abi3-manylinux_2_17_x86_64.whl",
    "img2gray_rocm71-1+torch2.12-cp39-abi3-manylinux_2_17_x86_64.whl",
    "img2gray_xpu20253-1+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl",
    "img2gray_tvm_ffi_cu130-1+tvmffi2.13-cp39-abi3-manylinux_2_17_x86_64.whl",
})


def make_flat_repo(root: Path, so_cache: Path, variants: Iterable[str] = FLAT_VARIANTS) -> Path:
    for variant in variants:
        flat_variant(root / "build", variant, so_cache)
    return root


def make_nested_repo(root: Path, so_cache: Path, variants: Iterable[str] = NESTED_VARIANTS) -> Path:
    for variant in variants:
        nested_variant(root / "build", variant, so_cache)
    return root


def git_commit_all(repo: Path, message: str, *, branch: str = "main", date: str = "2026-01-01T00:00:00Z",
                   compress: bool = True) -> str:
    """Commit everything in ``repo`` (initialising it on ``branch``) at a fixed ``date``; return the commit id.
    ``compress=False`` stores objects without zlib (tens of MB of random bytes would otherwise take seconds)."""
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_AUTHOR_DATE": date,
           "GIT_COMMITTER_DATE": date, "PATH": "/usr/bin:/bin"}
    if not (repo / ".git").exists():
        subprocess.run(["git", "init", "-q", "-b", branch, str(repo)], check=True, env=env)
    level = [] if compress else ["-c", "core.compression=0", "-c", "core.looseCompression=0"]
    subprocess.run(["git", *level, "-C", str(repo), "add", "-A"], check=True, env=env)
    subprocess.run(["git", *level, "-C", str(repo), "commit", "-q", "--allow-empty", "-m", message], check=True,
                   env=env)
    out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, env=env, capture_output=True)
    return out.stdout.decode().strip()


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


# Kernels with kernel-depends (kernels 0.17.2's metadata), pure Python so an installed pair runs anywhere: relu, and
# relu-plus, which reaches relu at import through kernels.get_kernel_dep, as kernel-builder kernels do.
RELU_INIT = '''"""relu test kernel."""
import torch


def relu(x: torch.Tensor) -> torch.Tensor:
    return torch.clamp(x, min=0)
'''

RELU_PLUS_INIT = '''"""relu-plus test kernel: relu from its kernel dependency, plus a bias."""
import torch
from kernels import get_kernel_dep

_relu = get_kernel_dep("testorg/relu")


def relu_plus(x: torch.Tensor, bias: float) -> torch.Tensor:
    return _relu.relu(x) + bias
'''

RELU_PLUS_LAYERS = '''"""A submodule that uses the package (relative import), as kernels' layers modules do."""
from . import relu_plus


class ReluPlus:
    def __init__(self, bias: float) -> None:
        self.bias = bias

    def __call__(self, x):
        return relu_plus(x, self.bias)
'''


def python_kernel_variant(build: Path, variant: str, *, name: str, init: str,
                          kernel_depends: Iterable[Mapping[str, object]] = (), minver: str | None = None,
                          modules: Mapping[str, str] | None = None) -> Path:
    """A noarch ``build/<variant>/`` with a kernels 0.17.2 metadata.json (``kernel-depends`` as given) and, besides
    ``__init__.py``, the Python ``modules`` given (file name → source)."""
    vdir = build / variant
    vdir.mkdir(parents=True, exist_ok=True)
    (vdir / "__init__.py").write_text(init)
    for filename, source in (modules or {}).items():
        (vdir / filename).write_text(source)
    meta: dict[str, object] = {
        "name": name,
        "id": f"_{name.replace('-', '_')}_{OPS_ID}",
        "version": 1,
        "license": "Apache-2.0",
        "python-depends": [],
        "backend": {"type": variant.removeprefix("torch-")},
        "kernel-depends": list(kernel_depends),
    }
    if minver is not None:
        meta["kernels-minver"] = minver
    meta["digest"] = kernel_builder_digest(vdir)
    (vdir / "metadata.json").write_text(json.dumps(meta, indent=2))
    return vdir
