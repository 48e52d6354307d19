"""Build img2gray into kernel-builder's Hub layout (``python -m tools.cli.build_variants`` runs ``build_variants``).

For every build environment (a Python interpreter with torch installed; default: this one) it compiles the
sources with CMake and writes ``build/<variant>/`` in the current flat layout that the ``kernels`` library loads:

* ``__init__.py``, ``ops.py``, ... (python/img2gray/), ``_ops.py`` naming the build's op library;
* ``_img2gray_<backend>_<id>.abi3.so``: the library, registering ``torch.ops._img2gray_<backend>_<id>``; the id
  is the git tree of HEAD (7 hex digits; ``_stable`` for the stable-ABI build, ``_dirty`` with uncommitted
  changes), so two builds never collide;
* ``metadata.json``: name, id, version, license, backend, and the sha256 of every other file (``digest``).

Variant names follow kernel-builder: ``torch214-cxx11-cu130-x86_64-linux`` (classic ABI, one per torch minor)
and ``torch-stable-abi210-cu130-x86_64-linux`` (stable ABI: built once, with the newest torch given).

Builds are incremental: each variant keeps its CMake folder under ``build-cmake/variants/<variant>/`` (with
``build.log``), and a variant folder is replaced only once its new contents are complete.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version
from rich.markup import escape

from kernelwheel.format.digests import make_digest
from kernelwheel.format.variant_folder import collect_files
from kernelwheel.format.variant_pieces import Arch, Backend, Torch, TorchStableAbi
from kernelwheel.format.variants import Variant
from kernelwheel.io.atomic import check_writable_directory, replace_tree
from kernelwheel.io.console import make_console, print_step
from tools.build.errors import BuildFailed
from tools.build.manifest import BuildManifest
from tools.build.toolkit import backend_tag, nvcc_version

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_SOURCES = ROOT / "python" / "img2gray"
TORCH_PROBE = ROOT / "tools" / "build" / "torch_probe.py"  # standard library only: runs in any build environment

console = make_console()


@dataclass(frozen=True)
class TorchEnv:
    """A Python interpreter and the torch it has, read from torch/version.py (importing torch is not needed,
    so an env holding torch installed --no-deps, without its CUDA runtime wheels, can still build)."""

    python: Path
    torch: Version  # release only, e.g. 2.14.1
    cuda: str | None  # "13.0", None for a CPU-only torch

    @classmethod
    def probe(cls, python: Path) -> TorchEnv:
        try:
            result = subprocess.run([str(python), str(TORCH_PROBE)], capture_output=True,
                                    text=True, timeout=60)
        except OSError as exc:
            raise BuildFailed(f"--torch-env {python}: cannot run it: {exc}") from None
        if result.returncode != 0:
            raise BuildFailed(f"--torch-env {python}: expected a Python with torch installed; "
                                     f"it said: {result.stderr.strip().splitlines()[-1:]}")
        facts = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
        try:
            torch = Version(Version(facts["VERSION"]).base_version)
            return cls(python, torch, facts["CUDA"] or None)
        except (KeyError, InvalidVersion):
            raise BuildFailed(f"--torch-env {python}: expected a Python that runs tools/build/torch_probe.py and "
                              f"prints torch's VERSION and CUDA; it printed {result.stdout.strip()[:120]!r}") from None

    @property
    def backend(self) -> Backend:
        """Named after the compiler, as the wheel is (tools.build.toolkit: one rule for every tool)."""
        return Backend.parse(backend_tag(nvcc_version() if self.cuda is not None else None, self.cuda))


@dataclass(frozen=True)
class VariantPlan:
    """One variant to build: which environment, which ABI, and its name."""

    env: TorchEnv
    abi: str  # "classic" or "stable"
    variant: Variant

    @property
    def backend_name(self) -> str:
        return "cpu" if self.env.cuda is None else "cuda"

    def ops_name(self, package: str, tree_id: str) -> str:
        """``_img2gray_cuda_1a2b3c4``: kernel-builder's ``_<name>_<backend>_<id>``. A stable-ABI build of the same
        tree gets ``_stable`` in its id: it is a different binary, and both may be loaded in one process."""
        base, dirty, _ = tree_id.partition("_dirty")
        stable = "_stable" if self.abi == "stable" else ""
        return f"_{package}_{self.backend_name}_{base}{stable}{'_dirty' if dirty else ''}"


def plan_variants(envs: Sequence[TorchEnv], abis: Sequence[str], stable_target: str | None) -> list[VariantPlan]:
    """Classic: one variant per environment. Stable: one per backend, built with that backend's newest torch
    (the torch axis collapses, as in kernel-builder's deduplicateForStableAbi)."""
    plans: dict[str, VariantPlan] = {}
    if "classic" in abis:
        for env in envs:
            variant = Variant(Torch(Version(f"{env.torch.major}.{env.torch.minor}"), "cxx11"),
                              Arch(env.backend, "x86_64", "linux"))
            if str(variant) in plans:
                raise BuildFailed(f"two environments give {variant}: {plans[str(variant)].env.python} and "
                                         f"{env.python}")
            plans[str(variant)] = VariantPlan(env, "classic", variant)
    if "stable" in abis:
        if stable_target is None:
            raise BuildFailed("a stable-ABI variant needs [torch] stable-abi in build.toml")
        target = Version(stable_target)
        for env in sorted(envs, key=lambda e: e.torch, reverse=True):
            if env.torch < target:
                continue
            variant = Variant(TorchStableAbi(target), Arch(env.backend, "x86_64", "linux"))
            plans.setdefault(str(variant), VariantPlan(env, "stable", variant))
    return list(plans.values())


def build_id(root: Path = ROOT) -> str:
    """kernel-builder's ops id: 7 hex digits of HEAD's git tree, ``_dirty`` if tracked files differ from it."""
    try:
        tree = subprocess.run(["git", "rev-parse", "HEAD^{tree}"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--"], cwd=root).returncode != 0
    except (OSError, subprocess.CalledProcessError):
        raise BuildFailed(f"{root}: not a git checkout with a commit; the build id comes from git") from None
    return tree[:7] + ("_dirty" if dirty else "")


def _tool(name: str) -> str:
    """cmake/ninja next to this interpreter (the venv's, >= 3.26), else on PATH."""
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if found is None:
        raise BuildFailed(f"{name} not found next to {sys.executable} or on PATH: pip install {name}")
    return found


def compile_variant(plan: VariantPlan, ops_name: str, work: Path) -> Path:
    """Configure, build and install one variant's library with CMake; returns the install prefix."""
    build_dir = work / "cmake"
    prefix = work / "install"
    log_path = work / "build.log"
    shutil.rmtree(prefix, ignore_errors=True)
    env = dict(os.environ, IMG2GRAY_ABI=plan.abi, IMG2GRAY_BACKEND=plan.backend_name)
    commands = [
        [_tool("cmake"), "-S", str(ROOT), "-B", str(build_dir), "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={_tool('ninja')}",
         "-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={plan.env.python}",
         f"-DIMG2GRAY_OPS_NAMESPACE={ops_name}", f"-DIMG2GRAY_MODULE_NAME={ops_name}"],
        [_tool("cmake"), "--build", str(build_dir)],
        [_tool("cmake"), "--install", str(build_dir), "--prefix", str(prefix)],
    ]
    with log_path.open("w") as log:
        for command in commands:
            log.write("$ " + " ".join(command) + "\n")
            log.flush()
            result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env)
            if result.returncode != 0:
                raise BuildFailed(f"{plan.variant}: `{' '.join(command[:2])} ...` failed "
                                         f"(exit {result.returncode}); see {log_path}")
    return prefix


def ops_module_source(ops_name: str) -> str:
    """python/img2gray/_ops.py with the build's module and namespace in place of ``_C`` / ``img2gray``."""
    text = (PACKAGE_SOURCES / "_ops.py").read_text(encoding="utf-8")
    text, modules = re.subn(r'^_MODULE = "[^"]*"$', f'_MODULE = "{ops_name}"', text, flags=re.M)
    text, namespaces = re.subn(r'^_NAMESPACE = "[^"]*"$', f'_NAMESPACE = "{ops_name}"', text, flags=re.M)
    if (modules, namespaces) != (1, 1):
        raise BuildFailed(f"{PACKAGE_SOURCES / '_ops.py'}: expected one `_MODULE = \"...\"` and one "
                                 f"`_NAMESPACE = \"...\"` line to rewrite")
    return text


def variant_metadata(manifest: BuildManifest, ops_name: str, plan: VariantPlan, build_info: dict[str, object],
                     folder: Path) -> dict[str, object]:
    """metadata.json in the schema kernels >= 0.14 requires (kernels-data ``Metadata``)."""
    backend: dict[str, object] = {"type": plan.backend_name}
    if plan.env.cuda is not None:
        backend["archs"] = list(build_info.get("cuda_arch_list", []))  # type: ignore[call-overload]
    return {
        "name": manifest.name,
        "id": ops_name,
        "version": Version(manifest.version).major,  # the Hub version branch v<major>; the full version is the tag
        "license": manifest.license or "UNKNOWN",
        "python-depends": [],
        "backend": backend,
        "digest": make_digest(collect_files(folder, str(plan.variant))),
    }


def assemble_variant(plan: VariantPlan, ops_name: str, prefix: Path, manifest: BuildManifest, out: Path) -> Path:
    """Write ``out/<variant>/``: staged next to it, then swapped in, so a failure leaves the old one intact."""
    installed = prefix / manifest.python_package
    libraries = sorted(installed.glob(f"{ops_name}*.so"))
    if len(libraries) != 1:
        raise BuildFailed(f"{plan.variant}: expected one {ops_name}*.so from the build, found {libraries}")
    out.mkdir(parents=True, exist_ok=True)
    final = out / str(plan.variant)
    with tempfile.TemporaryDirectory(prefix=f".{plan.variant}-", dir=out) as staging_root:
        staging = Path(staging_root) / "variant"
        staging.mkdir()
        for source in sorted(PACKAGE_SOURCES.iterdir()):
            if source.is_file() and source.suffix in (".py", ".typed"):  # the package's Python files (pyext)
                shutil.copy2(source, staging / source.name)
        (staging / "_ops.py").write_text(ops_module_source(ops_name), encoding="utf-8")
        shutil.copy2(libraries[0], staging / f"{ops_name}.abi3.so")
        build_info = json.loads((installed / "_build_info.json").read_text(encoding="utf-8"))
        (staging / "_build_info.json").write_text(json.dumps(build_info, indent=2) + "\n", encoding="utf-8")
        metadata = variant_metadata(manifest, ops_name, plan, build_info, staging)
        (staging / "metadata.json").write_text(json.dumps(metadata, indent=2) + "\n", encoding="utf-8")
        replace_tree(staging, final, trash=Path(staging_root) / "old")
    return final


def build_variants(envs: Sequence[TorchEnv], *, abis: Sequence[str] = ("classic", "stable"), out: Path = ROOT / "build",
                   work_root: Path = ROOT / "build-cmake" / "variants") -> list[Path]:
    """Build every planned variant into ``out/<variant>/``; returns the folders written, in plan order."""
    check_writable_directory(out, "--out")  # before the first compile, not after it
    manifest = BuildManifest.load(ROOT / "build.toml")
    ident = build_id()
    plans = plan_variants(envs, abis, manifest.stable_abi)
    if not plans:
        raise BuildFailed("nothing to build: no environment matches the requested ABIs")
    written: list[Path] = []
    for plan in plans:
        ops_name = plan.ops_name(manifest.python_package, ident)
        work = work_root / str(plan.variant)
        work.mkdir(parents=True, exist_ok=True)
        console.print(f"[bold]{escape(str(plan.variant))}[/]: "
                      + escape(f"torch {plan.env.torch} ({plan.env.python}), {plan.abi} ABI, ops {ops_name}"))
        prefix = compile_variant(plan, ops_name, work)
        written.append(assemble_variant(plan, ops_name, prefix, manifest, out))
        print_step(console, f"  wrote {written[-1]} (log: {work / 'build.log'})")
    return written
