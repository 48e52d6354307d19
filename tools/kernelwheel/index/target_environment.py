"""The environment a wheel is installed into, and kernels' CUDA and ROCm rules for which builds its torch loads.

``Environment.probe`` asks the target interpreter for its torch (version, CUDA, ROCm), the wheel tags it accepts, the
distributions installed and its PEP 508 marker values, without importing torch; every answer is checked, so a broken
torch or an interpreter that is not one is one clear ``ToolError``. ``check_backend`` refuses a ``<kernel>-cuXY`` or
``<kernel>-rocmXY`` project that torch cannot load (``cuda_compatible``) and names the one to install instead.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import packaging
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from kernelwheel.format.variant_pieces import Backend
from kernelwheel.index.client import list_candidates
from kernelwheel.io.errors import InvalidVariantName, NoCompatibleWheel, ToolError
from kernelwheel.io.urls import redact

# Runs inside the target interpreter. torch's version, CUDA and ROCm come from torch's own version module
# (``torch/version.py``: ``__version__ = '2.14.1+cu130'``, ``cuda = '13.0'``), read as a file: importing torch would
# take seconds and fails in an environment whose CUDA libraries are missing. importlib.metadata has no ``+cu130``.
_PROBE = """
import importlib.util, json, platform, re, sys
spec = importlib.util.find_spec("torch")
torch = cuda = rocm = None
if spec is not None and spec.origin is not None:
    source = open(spec.origin.rsplit("/", 1)[0] + "/version.py", encoding="utf-8").read()
    def field(name):
        match = re.search(name + r"(?:: Optional\\[str\\])? = '([^']*)'", source)
        return match[1] if match else None
    torch, cuda = field("__version__"), field("cuda")
    rocm = field("rocm") or field("hip")  # kernels 0.19.1: torch.version.rocm (torch >= 2.10), else .hip
sys.path.append(sys.argv[1])
from packaging import markers, tags
import importlib.metadata
installed = sorted({d.metadata["Name"] for d in importlib.metadata.distributions() if d.metadata["Name"]})
print(json.dumps({"torch": torch, "cuda": cuda, "rocm": rocm, "python": platform.python_version(),
                  "tags": [str(t) for t in tags.sys_tags()], "installed": installed,
                  "markers": markers.default_environment()}))
"""


def cuda_compatible(build: Version, runtime: Version) -> bool:
    """kernels' rule: a torch built for CUDA X.Y runs builds for CUDA X.0 … X.Y (same major, minor ≤ Y). kernels
    0.19.1 gives ROCm the same rule (``variants._backend_mismatch``); 0.17.2 wanted ROCm's version exactly."""
    return build.major == runtime.major and build.minor <= runtime.minor


TOOLKITS = {"cuda": "CUDA", "rocm": "ROCm"}  # the backends whose builds follow that rule


def rocm_version(text: str | None) -> Version | None:
    """``torch.version.rocm`` (or ``.hip``: ``"6.4.43482-0f2d60242"``) → ``Version("6.4")``, as kernels 0.19.1's
    ``backends._backend`` reads it (the part before ``-``; major.minor is what the rule compares)."""
    if not text:
        return None
    release = Version(text.split("-")[0]).release
    return Version(f"{release[0]}.{release[1] if len(release) > 1 else 0}")


@dataclass(frozen=True)
class Environment:
    """The environment a wheel is for: its interpreter, installed torch and accepted wheel tags."""

    python: str
    python_version: Version
    torch: Version | None
    tags: frozenset[str]
    cuda: Version | None = None  # torch.version.cuda; None for a CPU-only torch (or no torch)
    installed: frozenset[str] = frozenset()  # canonical names of the distributions already installed
    rocm: Version | None = None  # torch.version.rocm (else .hip) as major.minor; None for a torch without ROCm
    # ``tags`` in the order of packaging.tags.sys_tags() (most preferred first): which build pip takes among several.
    tag_order: tuple[str, ...] = ()
    # PEP 508 marker values of the interpreter (packaging.markers.default_environment()); empty when not probed.
    markers: Mapping[str, str] = field(default_factory=dict, hash=False)

    def describe(self) -> str:
        torch = f"torch {self.torch}" if self.torch is not None else "no torch"
        cuda = f" (CUDA {self.cuda})" if self.cuda is not None else f" (ROCm {self.rocm})" if self.rocm else ""
        return f"{torch}{cuda} on Python {self.python_version}"

    def toolkit(self, kind: str) -> Version | None:
        """The torch's CUDA or ROCm version (``kind``: ``cuda`` or ``rocm``)."""
        return self.cuda if kind == "cuda" else self.rocm if kind == "rocm" else None

    @classmethod
    def probe(cls, python: str, *, timeout_s: float = 120) -> Environment:
        """Ask ``python`` (a path) for its torch version and tags, without importing torch."""
        packaging_root = str(Path(packaging.__file__).resolve().parent.parent)
        where = f"cannot inspect the Python environment {python!r}"
        try:
            result = subprocess.run(
                [python, "-c", _PROBE, packaging_root], capture_output=True, text=True, timeout=timeout_s
            )
        except OSError as exc:
            raise ToolError(f"{where}: cannot run it ({exc.strerror or exc})") from None
        except subprocess.TimeoutExpired:
            raise ToolError(f"{where}: it did not answer within {timeout_s:g} s") from None
        if result.returncode != 0:
            said = result.stderr.strip().splitlines()[-1:]
            raise ToolError(f"{where}: it exited with {result.returncode}"
                            + (f" and said {said[0][:200]!r}" if said else ""))
        try:
            facts = json.loads(result.stdout)
        except ValueError:
            facts = None
        if not isinstance(facts, dict):
            raise ToolError(f"{where}: expected a Python interpreter (3.9 or newer) answering in JSON, it printed "
                            f"{result.stdout.strip()[:80]!r}")
        return cls._from_facts(python, facts, where)

    @classmethod
    def _from_facts(cls, python: str, facts: Mapping[str, object], where: str) -> Environment:
        """The probe's answer, every field checked: a broken torch (``__version__ = 'not a version'``) or an
        interpreter that is not what it claims is one clear error, never an ``InvalidVersion`` traceback."""
        tag_order = tuple(_strings(facts, "tags", where))
        python_version = _version_fact(facts, "python", where)
        if python_version is None:
            raise ToolError(f"{where}: it did not say its Python version; expected a Python interpreter (3.9 or newer)")
        rocm = _version_fact(facts, "rocm", where)
        markers = facts.get("markers") or {}
        if not isinstance(markers, dict) or not all(isinstance(v, str) for v in markers.values()):
            raise ToolError(f"{where}: its marker environment is {markers!r:.80}; expected an object of strings")
        return cls(python, python_version, _version_fact(facts, "torch", where), frozenset(tag_order),
                   _version_fact(facts, "cuda", where), frozenset(canonicalize_name(name) for name in
                   _strings(facts, "installed", where)), rocm_version(str(rocm)) if rocm else None, tag_order,
                   {str(k): v for k, v in markers.items()})


def _version_fact(facts: Mapping[str, object], key: str, where: str) -> Version | None:
    """``facts[key]`` as a PEP 440 version (the part before ``-`` for ROCm's ``6.4.43482-0f2d60242``); None when
    absent or empty."""
    value = facts.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ToolError(f"{where}: it gave its {key} version as {value!r:.80}; expected a version string such as "
                        "2.14.1")
    try:
        return Version(value.split("-")[0] if key == "rocm" else value)
    except InvalidVersion:
        shown = f"torch says __version__ = {value!r:.80}" if key == "torch" else f"its {key} version is {value!r:.80}"
        raise ToolError(f"{where}: {shown}, which is not a version; expected a PEP 440 version such as 2.14.1 "
                        f"(reinstall {key if key in ('torch', 'python') else 'torch'})") from None


def _strings(facts: Mapping[str, object], key: str, where: str) -> list[str]:
    value = facts.get(key)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ToolError(f"{where}: it gave {key} as {value!r:.80}; expected a list of strings")
    return value


def project_backend(project: str) -> tuple[str, Backend] | None:
    """``img2gray-cu130`` → ``("img2gray", Backend(cuda, 13.0))``; None for a name without a backend suffix."""
    kernel, _, suffix = canonicalize_name(project).rpartition("-")
    try:
        return (kernel, Backend.parse(suffix)) if kernel else None
    except InvalidVariantName:
        return None


def check_backend(index_url: str, project: str, target: Environment) -> None:
    """Refuse a CUDA or ROCm build the target's torch cannot run, naming the project it should install instead (the
    newest ``<kernel>-cuXY`` / ``<kernel>-rocmXY`` on the index that kernels' rule allows, or ``<kernel>-cpu`` for a
    torch without that toolkit)."""
    parsed = project_backend(project)
    if parsed is None or target.torch is None:
        return
    kernel, backend = parsed
    # Every backend's wheel installs the same package folder: a second one would overwrite the first's files.
    others = sorted(name for name in target.installed if name != canonicalize_name(project)
                    and (name == kernel or (project_backend(name) or ("", None))[0] == kernel))
    if others:
        raise NoCompatibleWheel(
            canonicalize_name(project), redact(index_url), target.describe(),
            [f"{', '.join(others)} is already installed, and every {kernel} build installs the same package folder"],
            f"keep {others[0]}, or uninstall it first (pip uninstall {' '.join(others)}). Nothing was installed.")
    if backend.kind not in TOOLKITS or backend.version is None:
        return
    name, runtime = TOOLKITS[backend.kind], target.toolkit(backend.kind)
    if runtime is not None and cuda_compatible(backend.version, runtime):
        return
    if runtime is None:
        alternatives = [f"{kernel}-cpu"]
        why = f"{project} is built for {name} {backend.version}, and this torch has no {name}"
    else:
        alternatives = [f"{kernel}-{Backend(backend.kind, Version(f'{runtime.major}.{minor}')).tag}"
                        for minor in range(runtime.minor, -1, -1)]
        why = (f"{project} is built for {name} {backend.version}, which a torch for {name} {runtime} cannot load "
               f"(it runs {name} {runtime.major}.0 to {runtime} builds)")
    found = next((name for name in alternatives if list_candidates(index_url, name)), None)
    hint = (f"install {found} instead (same command, that project name)" if found else
            f"this index has none of {', '.join(alternatives)}; build {kernel} for your torch's {name}")
    raise NoCompatibleWheel(canonicalize_name(project), redact(index_url), target.describe(), [why],
                            hint + ". Nothing was installed and torch was not touched.")
