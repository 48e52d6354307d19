"""Wheel variants (PEP 825 and PEP 850, both drafts; experimental, opt-in): the variant wheel of a backend-named wheel.

A backend-named wheel (``img2gray-cu130``, ``img2gray-cpu``) makes the user pick the build. A variant wheel lets
the installer pick it: every build of a kernel becomes one distribution, the kernel's name (``img2gray``), told apart
by a variant label in the file name (``variant_names``) and the properties ``.dist-info/variant.json`` gives it:

* a CUDA build: the ``nvidia`` provider's ``cuda_version_lower_bound`` (the build's CUDA, ``13.0``) and ``sm_arch``
  (what the fat binary holds, ``gpu_targets``: SASS ``9.0`` → ``90_real``, PTX ``9.0`` → ``90_virtual``, the values
  CMake's CUDA_ARCHITECTURES and uv write). A build states no upper CUDA bound, so none is written;
* a build tied to one torch minor (classic ABI): ``abi_dependency :: torch`` = ``2.14``;
* a CPU build on the torch stable ABI: no property, the ``null`` variant, which an installer takes when no other
  variant fits (no GPU).

Labels: the backend tag (``cu130``), with ``_torch214`` for a classic build (``cu130_torch214``, ``cpu_torch213``),
``null`` for the stable CPU build. The version drops the ``+torchX.Y`` label: the torch ABI is a property now. ROCm,
XPU and other backends get no variant wheel (uv 0.13.9 has no provider for them), nor do noarch, SDK and tvm-ffi
builds.

The document follows what uv 0.13.9 accepts, not the drafts where they differ (docs/gpu-targets.md): schema
``peps/850/v0.2.0``, a ``providers`` entry for every namespace of ``default-priorities`` (uv refuses the document
otherwise). ``nvidia`` is the plugin uv has built in. uv 0.13.9 has no provider for ``abi_dependency``: the entry is
``{"builtin": "abi_dependency"}``, which it parses and skips, so it never installs a classic build's variant (a
``static-properties`` entry would make it take one whatever torch is installed). The variant wheel is the
backend-named wheel's files, renamed (``wheel_writer.rename_wheel``) with ``variant.json`` added, written by the same
writer: reproducible and atomic.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from kernelwheel.format.frameworks import dotted_str
from kernelwheel.format.variant_pieces import Backend
from kernelwheel.io.errors import InvalidVariantName, InvalidWheel, InvalidWheelName
from kernelwheel.wheels import gpu_targets
from kernelwheel.wheels.gpu_targets import GpuTargets
from kernelwheel.wheels.naming import labelled_torch
from kernelwheel.wheels.variant_names import NULL_LABEL, VariantWheelName, check_label
from kernelwheel.wheels.wheel_contents import Member, Source, WheelContents
from kernelwheel.wheels.wheel_reader import read_wheel
from kernelwheel.wheels.wheel_writer import WrittenWheel, rename_wheel, write_wheel_if_changed

FILE_NAME = "variant.json"  # in the variant wheel's .dist-info
SCHEMA = "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json"
NVIDIA = "nvidia"
ABI_DEPENDENCY = "abi_dependency"
NAMESPACES = (NVIDIA, ABI_DEPENDENCY)  # default-priorities.namespace, in this order
PROVIDERS: dict[str, dict[str, Any]] = {
    NVIDIA: {"requires": ["nvidia-variant-provider>=0.0.1,<1.0.0"],
             "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin"},
    ABI_DEPENDENCY: {"builtin": ABI_DEPENDENCY},
}

# namespace → feature → values, e.g. {"nvidia": {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["90_real"]}}
Properties = dict[str, dict[str, list[str]]]


class NoVariant(InvalidWheel):
    """A wheel that has no variant wheel (another backend, a noarch or SDK build): the message says why."""


@dataclass(frozen=True)
class VariantPlan:
    """What a build is as a variant: the kernel's distribution, its label and properties."""

    distribution: str
    label: str
    properties: Properties

    def document(self) -> dict[str, Any]:
        """The variant wheel's ``variant.json``: the document every variant of the version shares, with only this
        label under ``variants`` (uv 0.13.9 refuses a wheel whose file describes another)."""
        return {"$schema": SCHEMA, "default-priorities": {"namespace": list(NAMESPACES)},
                "providers": PROVIDERS, "variants": {self.label: self.properties}}

    def json_bytes(self) -> bytes:
        return (json.dumps(self.document(), indent=2, sort_keys=True) + "\n").encode()


def sm_arch_values(targets: GpuTargets) -> list[str]:
    """``sm_arch`` values of the fat binary's code: SASS ``9.0`` → ``90_real`` (``9.0a`` → ``90a_real``), PTX
    ``9.0`` → ``90_virtual``, in the order the targets are sorted."""
    def spelled(arch: str) -> str:
        major, _, rest = arch.partition(".")
        return f"{major}{rest}"

    return [*(f"{spelled(a)}_real" for a in targets.cuda_sass), *(f"{spelled(a)}_virtual" for a in targets.cuda_ptx)]


def plan_variant(distribution: str, backend: Backend, torch: Version | None, targets: GpuTargets) -> VariantPlan:
    """The variant of a build of ``distribution`` (the kernel's name) for ``backend``, tied to ``torch`` (a minor; None
    for the stable ABI), holding ``targets``; ``NoVariant`` for a backend no provider of uv 0.13.9 knows."""
    properties: Properties = {}
    if backend.kind == "cuda" and backend.version is not None:
        nvidia = {"cuda_version_lower_bound": [dotted_str(backend.version)]}
        if values := sm_arch_values(targets):
            nvidia["sm_arch"] = values
        properties[NVIDIA] = nvidia
    elif backend.kind != "cpu":
        raise NoVariant(f"{distribution}: a {backend.tag} build has no variant wheel (uv 0.13.9 has providers for "
                        "CUDA, and the null variant for CPU builds)")
    if torch is not None:
        properties[ABI_DEPENDENCY] = {"torch": [dotted_str(torch)]}
        label = f"{backend.tag}_torch{torch.major}{torch.minor}"
    else:
        label = NULL_LABEL if not properties else backend.tag
    return VariantPlan(distribution, check_label(label), properties)


def plan_of(contents: WheelContents[Member]) -> VariantPlan:
    """The variant of a backend-named wheel hub2wheel or img2gray's build wrote (``<kernel>-<backend>``, version
    ``X.Y.Z`` or ``X.Y.Z+torchA.B``, requiring torch, its ``gpu_targets.json``); ``NoVariant`` saying why a wheel has
    none."""
    name = contents.name
    kernel, _, tag = name.distribution.rpartition("-")
    try:
        backend = Backend.parse(tag)
    except InvalidVariantName:
        raise NoVariant(f"{name.filename}: its name ends in no backend ({name.distribution}): a noarch, SDK or "
                        "dependency build has no variant wheel") from None
    requires = []
    for line in contents.metadata.get("requires_dist", []):
        try:
            requires.append(Requirement(line))
        except InvalidRequirement as exc:
            raise NoVariant(f"{name.filename}: Requires-Dist {line!r:.80} is invalid "
                            f"({str(exc).splitlines()[0]})") from None
    if not any(canonicalize_name(r.name) == "torch" for r in requires):
        raise NoVariant(f"{name.filename}: requires no torch (an SDK or tvm-ffi build): no variant wheel")
    torch = labelled_torch(name.version)
    if name.version.local is not None and torch is None:
        raise NoVariant(f"{name.filename}: its version label {name.version.local!r} is not a torch one: no variant "
                        "wheel")
    return plan_variant(kernel, backend, torch, _recorded_targets(contents))


def _recorded_targets(contents: WheelContents[Member]) -> GpuTargets:
    """The wheel's ``gpu_targets.json``; for a wheel without one (built before it was recorded), read from its ELF
    files as hub2wheel reads them."""
    where = f"{contents.name.dist_info}/{gpu_targets.FILE_NAME}"
    source: Source | None = contents.files.get(where)
    if source is not None:
        return gpu_targets.read_recorded(_bytes(source), where) or GpuTargets()
    return gpu_targets.wheel_files_targets(contents.files, contents.name.filename)


def _bytes(source: Source) -> bytes:
    return source.read_bytes() if isinstance(source, Path) else source


def variant_wheel(contents: WheelContents[Source]) -> WheelContents[Source]:
    """The variant wheel of ``contents`` (``plan_of``): the same files and tags under the kernel's name, the public
    version, the label, and ``variant.json``."""
    plan = plan_of(contents)
    name = contents.name
    try:
        new = VariantWheelName(plan.distribution, Version(name.version.public), name.python_tag, name.abi_tag,
                               name.platform_tag, plan.label)
        new.filename  # noqa: B018  (raises InvalidWheelName for a name that cannot be written: checked up front)
    except InvalidWheelName as exc:
        raise NoVariant(f"{name.filename}: {exc}") from None
    renamed = rename_wheel(contents, new)
    renamed.files[f"{new.dist_info}/{FILE_NAME}"] = plan.json_bytes()
    return renamed


def write_variant_wheel(wheel: Path, out_dir: Path) -> WrittenWheel:
    """Write the variant wheel of the finished backend-named ``wheel`` into ``out_dir`` (img2gray's own build: `make
    wheel VARIANT_WHEELS=1`); ``NoVariant`` when it has none, ``InvalidWheel`` when it cannot be read."""
    read = read_wheel(wheel, wheel.name)
    contents = WheelContents[Source](read.name, read.metadata, dict(read.files), read.root_is_purelib)
    derived = variant_wheel(contents)
    try:
        return write_wheel_if_changed(derived, out_dir)
    except OSError as exc:  # disk full, a read-only folder: one line, nothing partial left (the writer is atomic)
        raise InvalidWheel(f"{derived.name.filename}: cannot be written to {out_dir}: {exc.strerror or exc}") from None
