"""The install command that cannot change torch: pick the wheel for the installed torch, or say why none fits.

Several torch builds of one distribution (``img2gray-cu130 0.1.0+torch2.13``, ``0.1.0+torch2.14``, …)
share a project page. Asked for ``img2gray-cu130`` alone, pip and uv take the highest version and then
install whatever torch it requires, from PyPI if that is an extra index: a newer ``0.2.0+torch2.13``
downgrades a working torch 2.14. This module:

1. probes the target interpreter for its installed torch (``importlib.metadata``, torch is not imported)
   and the wheel tags it accepts;
2. reads the project page of the index with pypi-simple (``kernelwheel.index.client``; PEP 503 HTML, or
   PEP 691 JSON over http); the torch requirement of each wheel comes from its PEP 658 ``.metadata``, checked
   against the page's ``data-core-metadata`` hash, else its ``+torchX.Y`` label, else the wheel's own METADATA;
3. keeps the wheels that fit, with a reason for every one it rejects, and raises ``NoCompatibleWheel``
   when none is left, before any installer runs; a wheel fits the target's GPU (``target_gpu``: ``--gpu-arch`` or
   nvidia-smi) when its binaries hold SASS or PTX that GPU runs, as the description line of its PEP 658 metadata
   records them (``wheels.gpu_targets``; a wheel without that line is not checked);
4. prints ``pip install --index-url <index>/torchX.Y/ img2gray-cu130 torch==<installed>`` (or the ``uv pip``
   form): the per-torch sub-index when the index has one (``kernelwheel index`` writes them), and always the
   installed torch pinned exactly, so that the resolver can only keep torch or fail.

Reading the index has one deadline for all of its requests together (``plan_install(deadline_s=...)``): a server
that answers one byte at a time cannot hold the command past it. The target is probed, and kernels' CUDA/ROCm rules
applied, by ``kernelwheel.index.target_environment``; ``kernelwheel.index.install_command_line`` prints and runs the
command with no password on its command line (``"${KERNELWHEEL_INDEX_PASSWORD}"`` in its place).

``kernelwheel install-command --index-url http://127.0.0.1:8080/simple/ img2gray-cu130 [--run]``
"""


from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from kernelwheel.index.client import Candidate, check_url, list_candidates
from kernelwheel.index.core_metadata import WheelFacts, wheel_facts
from kernelwheel.index.indexed_wheel import check_project_name
from kernelwheel.index.target_environment import TOOLKITS, Environment, check_backend, project_backend
from kernelwheel.index.target_gpu import GpuCheck
from kernelwheel.io.answer_deadline import call_with_deadline
from kernelwheel.io.errors import NoCompatibleWheel, ToolError
from kernelwheel.io.urls import redact
from kernelwheel.wheels.gpu_targets import GpuTargets, cuda_problem
from kernelwheel.wheels.naming import torch_label, torch_minor

Installer = Literal["pip", "uv"]

# Seconds for reading the index, every request together (each one also has a 30 s limit between two reads).
DEFAULT_DEADLINE_S = 60.0


@dataclass(frozen=True)
class WheelRejected:
    candidate: Candidate
    reason: str
    gpu: bool = False  # rejected for the target's GPU (its torch and tags fit)


def choose_wheels(
    candidates: Sequence[Candidate], target: Environment, torch_of: Mapping[str, SpecifierSet | None],
    gpu: GpuCheck | None = None, gpu_of: Mapping[str, GpuTargets | None] | None = None,
) -> tuple[list[Candidate], list[WheelRejected]]:
    """Split ``candidates`` into those that fit ``target`` (and its GPUs, where ``gpu`` names some and ``gpu_of`` a
    wheel's targets) and those that don't, each with its reason (pure)."""
    accepted: list[Candidate] = []
    rejected: list[WheelRejected] = []
    for candidate in candidates:
        name = candidate.name
        torch = torch_of.get(candidate.filename)
        if not {str(t) for t in name.tags} & target.tags:
            reason = f"tag {name.tag} is not accepted by Python {target.python_version}"
            rejected.append(WheelRejected(candidate, reason))
        elif torch is not None and target.torch is None:
            rejected.append(WheelRejected(candidate, f"needs torch{torch}, and the target has no torch installed"))
        elif torch is not None and target.torch is not None and not torch.contains(target.torch, prereleases=True):
            rejected.append(WheelRejected(candidate, f"needs torch{torch}, not {target.torch}"))
        elif (problem := _gpu_problem(gpu, (gpu_of or {}).get(candidate.filename))) is not None:
            rejected.append(WheelRejected(candidate, problem, gpu=True))
        else:
            accepted.append(candidate)
    rank = {tag: position for position, tag in enumerate(target.tag_order)}
    accepted.sort(key=lambda c: (c.name.version, -_tag_rank(c, rank)), reverse=True)
    return accepted, rejected


def _gpu_problem(gpu: GpuCheck | None, targets: GpuTargets | None) -> str | None:
    """Why one of ``gpu``'s GPUs cannot run a wheel holding ``targets``; None when each can, or nothing is known
    (no GPU to check, no recorded targets, no CUDA code: a ROCm or CPU build)."""
    if gpu is None or targets is None or not (targets.cuda_sass or targets.cuda_ptx):
        return None
    for device in gpu.gpus:
        problem = cuda_problem(targets, device.capability, device.name)
        if problem is not None:
            return problem
    return None


def _tag_rank(candidate: Candidate, rank: Mapping[str, int]) -> int:
    """Where the candidate's best tag comes in the target's ``sys_tags()`` order (0: most preferred). pip and uv
    order the builds of one version by it, so the plan names the file the installer will really take."""
    return min((rank.get(str(tag), len(rank)) for tag in candidate.name.tags), default=len(rank))


def _available_torch(rejected: Sequence[WheelRejected], torch_of: Mapping[str, SpecifierSet | None]) -> list[str]:
    minors: set[Version] = set()
    for item in rejected:
        spec = torch_of.get(item.candidate.filename)
        for clause in spec or ():
            try:
                minors.add(torch_minor(clause.version.removesuffix(".*")))
            except ToolError:
                continue
    return [str(m) for m in sorted(minors)]


@dataclass(frozen=True)
class InstallPlan:
    """What will be installed, from where, and the exact argv that does it."""

    project: str
    wheel: Candidate
    index_url: str
    torch_pin: str | None
    argv: list[str]
    rejected: list[WheelRejected]
    reason: str = ""  # why this wheel: the torch it admits, the CUDA rule it passed
    installer: Installer = "pip"
    gpu: GpuCheck | None = None  # the GPUs the wheel was checked against (None: not asked)
    gpu_targets: GpuTargets | None = None  # the chosen wheel's GPU code, when its metadata records it


def plan_install(
    index_url: str,
    project: str,
    target: Environment,
    *,
    installer: Installer = "pip",
    extra_index_urls: Sequence[str] = (),
    deadline_s: float | None = DEFAULT_DEADLINE_S,
    deadline_shown_s: float | None = None,
    gpu: GpuCheck | None = None,
) -> InstallPlan:
    """Choose the wheel for ``target`` and the command that installs it without touching torch.

    ``gpu``: the GPUs the wheel must run on (``target_gpu``), checked where a wheel's metadata records its GPU code.

    Raises ``NoCompatibleWheel`` when nothing fits, ``IndexUnreachable`` when the index cannot be read (or not
    within ``deadline_s`` for every request together; the message names ``deadline_shown_s`` when given),
    ``InvalidIndexUrl`` for a malformed URL, and another ``ToolError`` (``DigestMismatch``, ``InvalidWheel``, a
    refused ``file:`` link) when what it serves cannot be trusted; nothing is installed in any of these cases.
    """
    check_project_name(project)
    check_url(index_url)
    for extra in extra_index_urls:
        check_url(extra, what="extra index URL", schemes=("http", "https", "file"))

    def plan() -> InstallPlan:
        return _plan_install(index_url, project, target, installer, extra_index_urls, gpu)

    return plan() if deadline_s is None else call_with_deadline(plan, deadline_s, redact(index_url), deadline_shown_s)


def _plan_install(
    index_url: str, project: str, target: Environment, installer: Installer, extra_index_urls: Sequence[str],
    gpu: GpuCheck | None = None,
) -> InstallPlan:
    candidates = list_candidates(index_url, project)
    if candidates is None:
        raise NoCompatibleWheel(
            canonicalize_name(project),
            redact(index_url),
            target.describe(),
            [],
            "the index has no page for this project; check the name (e.g. img2gray-cu130 for CUDA 13.0) "
            "and that the URL ends in /simple/",
        )
    check_backend(index_url, project, target)
    facts: dict[str, WheelFacts] = {c.filename: wheel_facts(c, target.markers or None) for c in candidates}
    torch_of = {name: fact.torch for name, fact in facts.items()}
    gpu_of = {name: fact.gpu for name, fact in facts.items()}
    accepted, rejected = choose_wheels(candidates, target, torch_of, gpu, gpu_of)
    if not accepted and rejected and all(r.gpu for r in rejected):
        raise NoCompatibleWheel(
            canonicalize_name(project), redact(index_url), target.describe(),
            [f"{r.candidate.filename}: {r.reason}" for r in rejected],
            f"no build of {project} for this torch holds GPU code this GPU runs; build it with SASS or PTX for "
            f"capability {gpu.gpus[0].version if gpu and gpu.gpus else '?'} (e.g. TORCH_CUDA_ARCH_LIST or -gencode) "
            "and add it to the index. Nothing was installed and torch was not touched.")
    if not accepted:
        available = _available_torch(rejected, torch_of)
        have = f"builds for torch {', '.join(available)}" if available else "no torch-specific builds"
        hint = (
            f"this index has {have}; install one of those torch versions first, or build {project} for "
            f"{'torch ' + str(torch_minor(target.torch)) if target.torch else 'your torch'} and add it to the index. "
            "Nothing was installed and torch was not touched."
        )
        reasons = [f"{r.candidate.filename}: {r.reason}" for r in rejected] or ["(the project page lists no wheels)"]
        raise NoCompatibleWheel(canonicalize_name(project), redact(index_url), target.describe(), reasons, hint)
    best = accepted[0]
    url = index_url
    if target.torch is not None:
        sub = index_url.rstrip("/") + f"/{torch_label(torch_minor(target.torch))}/"
        sub_candidates = list_candidates(sub, project)
        if sub_candidates and best.filename in {c.filename for c in sub_candidates}:
            url = sub
    # The public version: "==2.14.1" matches the installed 2.14.1+cu130, and an index serving torch (PyPI) has no
    # "+cu130" build to offer for an exact local pin.
    pin = f"torch=={target.torch.public}" if target.torch is not None else None
    requirements = [canonicalize_name(project)] + ([pin] if pin else [])
    extra = [arg for u in extra_index_urls for arg in ("--extra-index-url", u)]
    if installer == "pip":
        argv = [target.python, "-m", "pip", "install", "--index-url", url, *extra, *requirements]
    else:
        argv = ["uv", "pip", "install", "--python", target.python, "--index-url", url, *extra, *requirements]
    targets = gpu_of.get(best.filename)
    reason = _reason(project, best, torch_of.get(best.filename), target)
    if gpu is not None and gpu.gpus and targets is not None and (targets.cuda_sass or targets.cuda_ptx):
        gpus = ", ".join(f"{device.name} (CUDA capability {device.version})" for device in gpu.gpus)
        reason += f"; {gpus} runs its GPU code ({targets.describe()})"
    return InstallPlan(canonicalize_name(project), best, url, pin, argv, rejected, reason, installer, gpu, targets)


def _reason(project: str, wheel: Candidate, torch: SpecifierSet | None, target: Environment) -> str:
    parts = [f"the newest of {project}'s wheels that fits Python {target.python_version}, and of that version's "
             "builds the one whose tag this interpreter prefers (as pip and uv choose)"]
    if torch is not None:
        parts.append(f"its Requires-Dist torch{torch} admits the installed torch {target.torch}")
    parsed = project_backend(project)
    runtime = target.toolkit(parsed[1].kind) if parsed is not None else None
    if parsed is not None and parsed[1].kind in TOOLKITS and runtime is not None:
        name = TOOLKITS[parsed[1].kind]
        # Only these two pass kernels' rule (``cuda_compatible``); "older minor" for 13.0 on 13.0 was wrong.
        relation = "same version" if parsed[1].version == runtime else "same major, older minor"
        parts.append(f"a {name} {parsed[1].version} build runs on torch's {name} {runtime} ({relation})")
    return "; ".join(parts)
