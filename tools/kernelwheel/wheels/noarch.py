"""Noarch variants (``torch-cuda``, ``torch-cpu``, ...): one wheel when they are the same build, one per backend
when they differ.

kernels loads the noarch variant of the user's backend (``torch-cpu`` on a CPU-only torch, ``torch-cuda`` on a CUDA
one), so noarch folders whose files or dependencies differ are different builds and each becomes its own project,
``<kernel>-<backend>`` (``img2gray-cuda``, ``img2gray-cpu``). Folders that hold the same files (``metadata.json``
aside: it names its backend) and declare the same ``python-depends`` and ``kernel-depends`` stay one ``<kernel>``
wheel, built from the preferred folder; the others are reported as the same wheel.

Only torch noarch folders take part (``FrameworkRules.one_noarch_wheel``): ``mlx-<backend>`` and SDK folders are
projects of their own (``naming``).
``torch-cann`` (kernels 0.19 on Ascend) and ``torch-npu`` (0.17) are both kept, as any two backends are.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kernelwheel.format.digests import digested_files, file_digest
from kernelwheel.format.variant_folder import collect_files, read_metadata
from kernelwheel.format.variants import Variant
from kernelwheel.io.errors import ToolError

# Which folder the single noarch wheel is built from when all are the same build.
PREFERENCE = ("cuda", "rocm", "xpu", "cpu", "metal", "cann", "npu", "neuron", "tpu", "universal")


@dataclass(frozen=True)
class NoarchPlan:
    """``per_backend``: noarch variants that each get ``<kernel>-<backend>``; ``same_as``: variants not converted
    because they are the same build as the named one."""

    per_backend: frozenset[Variant] = frozenset()
    same_as: dict[Variant, Variant] = field(default_factory=dict)


def backend_of(variant: Variant) -> str:
    return variant.framework.noarch_backend or "universal"


def is_torch_noarch(variant: Variant) -> bool:
    """Whether ``variant`` is a noarch folder that may be the same build as its siblings (``one_noarch_wheel``)."""
    return variant.arch is None and variant.framework.one_noarch_wheel


def _rank(variant: Variant) -> int:
    backend = backend_of(variant)
    return PREFERENCE.index(backend) if backend in PREFERENCE else len(PREFERENCE)


def _fingerprint(variant_dir: Path, where: str, trusted_roots: Sequence[Path]) -> str | None:
    """What makes two noarch folders the same build; None when the folder cannot be read (conversion reports why)."""
    try:
        files = collect_files(variant_dir, where, trusted_roots)
        metadata = read_metadata(files, where)
        content = {rel: file_digest(files[rel]).hex() for rel in digested_files(files)}
    except (ToolError, OSError):
        return None
    declared = {key: metadata.get(key) for key in ("python-depends", "kernel-depends")}
    return json.dumps([content, declared], sort_keys=True, default=str)


def plan_noarch(build_dir: Path, variants: Sequence[Variant], trusted_roots: Sequence[Path] = ()) -> NoarchPlan:
    noarch = sorted((v for v in variants if is_torch_noarch(v)), key=lambda v: (_rank(v), str(v)))
    if len(noarch) < 2:
        return NoarchPlan()
    prints = {v: _fingerprint(build_dir / str(v), f"build/{v}", trusted_roots) for v in noarch}
    readable = [v for v in noarch if prints[v] is not None]  # the others fail conversion with their reason
    if len({prints[v] for v in readable}) <= 1:
        return NoarchPlan(same_as={v: readable[0] for v in readable[1:]})
    return NoarchPlan(per_backend=frozenset(readable))
