"""What a hub2wheel wheel runs when its kernel is imported, for builds that need something done first.

kernels does two things before it imports a build that a plain ``import`` of the build's files cannot: it checks
``backend.archs`` against the GPU (a clear error instead of CUDA's "no kernel image" at the first call; here the
archs are those the build's binaries hold, read when the wheel was written, ``gpu_targets``), and it
imports a build that has ``kernel-depends`` so that ``kernels.get_kernel_dep`` answers while the build is imported.
For such builds the wheel installs the build's files unchanged as the package named by the build's unique ``id``
(the module name kernels imports it under), and an entry package under the kernel's own name whose ``__init__.py``
is this file followed by one ``load(...)`` call (``kernelwheel.wheels.entry_package``). The entry then stands for the
build: ``import <kernel>`` and ``<kernel>.<submodule>`` are the build's own modules.

A build with dependencies is loaded by kernels itself, through names public in every supported release (0.17.2 and
0.19.1): ``kernels.get_local_kernel(<installed build folder>)``, with the environment variable ``LOCAL_KERNELS``
mapping each dependency's repo id to its installed folder while it runs (then restored). kernels imports the build
under its ``id``, the installed package's own name, so ``import <id>`` and the entry are one module object.

This file is copied into wheels, so it needs only the standard library (torch and kernels are imported when used).
The CUDA rule is kernels 0.17.2's, checked against kernels' own in tests/kernelwheel/wheels/test_entry_runtime.py.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Mapping, Sequence
from types import CodeType, ModuleType

SKIP_ARCH_CHECK = "HUB2WHEEL_SKIP_ARCH_CHECK"
LOCAL_KERNELS = "LOCAL_KERNELS"  # kernels' repo id → local folder overrides: org/a=/path/a:org/b=/path/b


def cuda_arch_supports(arch: str, capability: tuple[int, int]) -> bool | None:
    """Whether a declared CUDA arch (``9.0``, ``9.0a``, ``10.0f``, ``8.0+PTX``) runs on ``capability``; None for a
    string in no known format."""
    ptx = arch.endswith("+PTX")
    arch = arch.removesuffix("+PTX")
    suffix = arch[-1] if arch.endswith(("a", "f")) else ""
    major_text, dot, minor_text = arch.removesuffix(suffix).partition(".")
    if not dot or not major_text.isdigit() or not minor_text.isdigit():
        return None
    built = (int(major_text), int(minor_text))
    if suffix == "a":  # architecture-specific: that capability only
        return capability == built
    if ptx and not suffix:  # PTX is compiled for the device at load: any newer capability too
        return capability >= built
    return capability[0] == built[0] and capability[1] >= built[1]  # same generation, same or newer minor


def supports_cuda_capability(archs: Sequence[str], capability: tuple[int, int]) -> bool:
    """Any declared arch runs on ``capability``; archs in no known format cannot be judged and are allowed."""
    verdicts = [cuda_arch_supports(arch, capability) for arch in archs]
    return all(v is None for v in verdicts) or any(verdicts)


def device_problem(backend: str, archs: Sequence[str]) -> str | None:
    """Why the current GPU cannot run a build for ``archs``, or None (no GPU, no torch, not checkable, fine)."""
    if not archs or backend not in ("cuda", "rocm") or os.environ.get(SKIP_ARCH_CHECK, "") not in ("", "0"):
        return None
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    if backend == "cuda" and torch.version.cuda is not None:
        major, minor = torch.cuda.get_device_capability()
        if not supports_cuda_capability(archs, (major, minor)):
            return f"this GPU has CUDA capability {major}.{minor}"
    if backend == "rocm" and getattr(torch.version, "hip", None) is not None:
        gcn = str(torch.cuda.get_device_properties(torch.cuda.current_device()).gcnArchName).split(":")[0]
        if gcn not in archs:
            return f"this GPU is {gcn}"
    return None


def sharing_distributions(entry_file: str, package: str) -> list[str]:
    """The installed distributions whose RECORD holds ``<package>/__init__.py`` in this entry's site folder: two
    backend wheels of one kernel (``relu-cu130``, ``relu-cpu``) share the entry file, and the second install replaced
    the first's (CuPy's duplicate-installation check, as img2gray's own package does)."""
    import importlib.metadata

    site = os.path.dirname(os.path.dirname(os.path.abspath(entry_file)))
    owners = set()
    for dist in importlib.metadata.distributions(path=[site]):
        if any(str(f).replace("\\", "/") == f"{package}/__init__.py" for f in dist.files or ()):
            owners.add(str(dist.metadata["Name"]))
    return sorted(owners)


class _BuildSubmodules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``<entry>.x`` is ``<build>.x``: one module object, never a second copy of the build's files."""

    def __init__(self, entry: str, build: str) -> None:
        self.entry, self.build = entry, build

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.startswith(self.entry + "."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.build + spec.name[len(self.entry):])

    def exec_module(self, module: ModuleType) -> None:
        pass

    def get_code(self, fullname: str) -> CodeType | None:
        """The build module's code: runpy asks the loader for it, so ``python -m <entry>`` runs the build's own
        ``__main__`` (as ``python -m <build>`` would), with ``__package__`` the entry, whose submodules are the
        build's."""
        target = self.build + fullname[len(self.entry):]
        spec = importlib.util.find_spec(target)
        if spec is None or not isinstance(spec.loader, importlib.abc.InspectLoader):
            raise ImportError(f"{fullname} stands for {target}, which is not an installed module with code "
                              f"(found {spec.loader if spec is not None else 'nothing'})", name=fullname)
        return spec.loader.get_code(target)


def dependency_folder(package: str) -> str:
    """The installed folder of a dependency kernel's build: the package itself when it holds metadata.json, else
    (an entry package) the folder of the build that importing it loads."""
    spec = importlib.util.find_spec(package)
    if spec is None:
        raise ImportError(f"the kernel dependency package {package} is not installed")
    for folder in spec.submodule_search_locations or ():
        if os.path.isfile(os.path.join(folder, "metadata.json")):
            return os.path.abspath(folder)
    origin: object = getattr(importlib.import_module(package), "__file__", None)
    if not isinstance(origin, str) or not os.path.isfile(os.path.join(os.path.dirname(origin), "metadata.json")):
        raise ImportError(f"the kernel dependency package {package} has no metadata.json for kernels to load it")
    return os.path.dirname(os.path.abspath(origin))


def load_with_kernels(build_dir: str, dependencies: Mapping[str, str]) -> ModuleType:
    """kernels' ``get_local_kernel`` on the installed build folder, each dependency mapped to its installed folder
    by ``LOCAL_KERNELS`` (the user's own entries, placed after ours, win); the variable is restored afterwards."""
    import inspect
    from pathlib import Path

    import kernels

    folders = {repo: dependency_folder(package) for repo, package in sorted(dependencies.items())}
    for repo, folder in folders.items():
        if ":" in folder:
            raise ImportError(f"{repo} is installed in {folder}, whose ':' {LOCAL_KERNELS} cannot hold")
    ours = ":".join(f"{repo}={folder}" for repo, folder in folders.items())
    previous = os.environ.get(LOCAL_KERNELS)
    os.environ[LOCAL_KERNELS] = f"{ours}:{previous}" if previous else ours
    try:
        options: dict[str, bool] = {}
        if "check_arch" in inspect.signature(kernels.get_local_kernel).parameters:
            options["check_arch"] = False  # checked by device_problem, with the same rule
        # The folder is the build itself, so no variant is chosen; "cpu" is the one backend every kernels release
        # accepts on every machine (the system's own may be unknown to an older release).
        module: ModuleType = kernels.get_local_kernel(Path(build_dir), backend="cpu", **options)
    finally:
        if previous is None:
            os.environ.pop(LOCAL_KERNELS, None)
        else:
            os.environ[LOCAL_KERNELS] = previous
    return module


def load(entry: str, *, entry_file: str, build: str, kernel: str, variant: str, backend: str,
         archs: Sequence[str], dependencies: Mapping[str, str]) -> ModuleType:
    """Refuse a folder two builds share, check the GPU, import the build (through kernels when it has
    dependencies), and stand for it."""
    owners = sharing_distributions(entry_file, entry)
    if len(owners) > 1:
        raise ImportError(
            f"{' and '.join(owners)} are all installed, and each is a build of {kernel} with the package {entry}: "
            f"the one imported would be whichever was installed last. Repair with: pip uninstall -y "
            f"{' '.join(owners)} && pip install <the one you want>"
        )
    problem = device_problem(backend, archs)
    if problem is not None:
        raise ImportError(
            f"{kernel} ({variant}) does not support the current device: {problem}, and the build is compiled for "
            f"{', '.join(archs)}; install the build for this GPU, or set {SKIP_ARCH_CHECK}=1 if the declared "
            "architectures are incomplete (the kernel may then fail at run time)"
        )
    if dependencies and build not in sys.modules:
        build_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(entry_file))), build)
        module = load_with_kernels(build_dir, dependencies)
        sys.modules[build] = module  # kernels registers it under its id, the package's name: kept consistent
    else:
        module = importlib.import_module(build)
    sys.meta_path.insert(0, _BuildSubmodules(entry, build))  # before the path finder, which would load a copy
    sys.modules[entry] = module
    return module
