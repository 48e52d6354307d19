"""The wheel a checked variant becomes: its name, tags, requirements, description and files, ready for the writer.

The tags come from the variant's ELF files (``elf``), names and versions from ``naming``, requirements from the
variant's framework, ``python-depends`` and kernel-depends (``dependency_wheels``); a build that installs under its
id gets an entry package (``entry_package``), whose import-time check compares the GPU with the code the binaries
hold (``gpu_targets``), recorded in ``.dist-info/gpu_targets.json`` and one line of the description. Nothing is
written here: ``wheel_writer`` writes what
``plan_wheel`` returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from kernelwheel.format.kernel_depends import imports_kernels, kernels_requirement
from kernelwheel.format.python_depends import depends_requirements, read_depends
from kernelwheel.format.variants import Variant
from kernelwheel.hub.sources import Source
from kernelwheel.io.errors import InvalidVariant, InvalidWheelName
from kernelwheel.wheels import elf, gpu_targets, wheel_contents
from kernelwheel.wheels.checked_variant import CheckedVariant
from kernelwheel.wheels.dependency_wheels import ConvertedKernel, dependency_requirements
from kernelwheel.wheels.entry_package import CHECKED_BACKENDS, Entry, entry_source
from kernelwheel.wheels.entry_runtime import SKIP_ARCH_CHECK
from kernelwheel.wheels.naming import WheelName, framework_requirements, parse_version, wheel_name_for
from kernelwheel.wheels.noarch import backend_of
from kernelwheel.wheels.wheel_contents import WheelContents
from kernelwheel.wheels.wheel_writer import build_metadata


def plan_wheel(checked: CheckedVariant, source: Source, *, kernel_version: Version | None = None,
               allow_unknown_deps: bool = False, per_backend: bool = False,
               converted: Mapping[str, ConvertedKernel] | None = None) -> WheelContents[wheel_contents.Source]:
    """The wheel ``checked`` becomes (nothing is written). ``kernel_version``: --kernel-version;
    ``allow_unknown_deps``: python-depends kernels does not know pass through as pip requirements; ``per_backend``:
    a noarch variant that differs from its siblings, so its project is ``<kernel>-<backend>``; ``converted``: the
    kernel-depends converted in this run (``dependency_tree``)."""
    variant, where, metadata = checked.variant, checked.where, checked.metadata
    kernel, package, build_package = checked.kernel, checked.package, checked.build_package
    elfs, payload = checked.elfs, checked.payload
    tags = elf.python_tags(elfs, variant.python)
    platform = elf.platform_tag(elfs, variant.arch.cpu) if elfs and variant.arch else "any"
    name = wheel_name_for(
        variant,
        kernel,
        _base_version(source, kernel_version, metadata, where),
        python_tag=tags.python_tag,
        abi_tag=tags.abi_tag,
        platform_tag=platform,
        noarch_backend=backend_of(variant) if per_backend else None,
    )
    requires = _requirements(variant, metadata, where, allow_unknown_deps)
    packages: dict[str, str] = {}
    info = checked.info
    if checked.dependencies and info is not None:
        needed, packages = dependency_requirements(variant, info, converted or {}, where)
        requires += [*needed, kernels_requirement(info.kernels_minver, has_dependencies=True,
                                                       where=f"{where}/metadata.json")]
    elif imports_kernels([_contents(p) for arc, p in payload.items() if arc.endswith(".py")]):
        minver = metadata.get("kernels-minver")
        requires.append(kernels_requirement(minver if isinstance(minver, str) else None, has_dependencies=False))
    raw = build_metadata(
        name,
        requires_dist=requires,
        requires_python=SpecifierSet(tags.requires_python) if tags.requires_python else None,
        summary=f"{kernel} kernel, build variant {variant}, repackaged from {source.label}",
        description=_description(kernel, package, variant, source, name, metadata, checked.gpu),
    )
    if isinstance(metadata.get("license"), str):
        raw["license"] = metadata["license"]
    contents: dict[str, wheel_contents.Source] = dict(payload)  # streamed from disk when the wheel is written
    if not checked.zipped:  # a zip layout's bundle signs a metadata.json that is not installed (zip_layout)
        on_disk = {arc: p for arc, p in payload.items() if isinstance(p, Path)}
        contents.update(checked.signed.wheel_files(build_package, on_disk))  # metadata.json + its bundle
    if elfs:  # read, whatever it found: an empty record says the binaries hold no GPU code
        contents[f"{name.dist_info}/{gpu_targets.FILE_NAME}"] = checked.gpu.json_bytes()
    if build_package != package:
        archs = checked.gpu.runtime_archs(variant.depends_backend) or checked.archs  # the binaries', else declared
        entry = Entry(build_package, kernel, str(variant), variant.depends_backend, archs, packages)
        contents[f"{package}/__init__.py"] = entry_source(entry)
    return WheelContents(name=name, metadata=raw, files=contents, root_is_purelib=not elfs)


def _requirements(variant: Variant, metadata: Mapping[str, Any], where: str,
                  allow_unknown_deps: bool) -> list[Requirement]:
    """The framework (torch / tvm-ffi / mlx; none for an SDK) first, then ``python-depends`` mapped for the variant's
    backend."""
    names = read_depends(metadata.get("python-depends"), where)
    return [*framework_requirements(variant),
            *depends_requirements(names, variant.depends_backend, where, allow_unknown=allow_unknown_deps)]


def _base_version(source: Source, kernel_version: Version | None, metadata: Mapping[str, Any], where: str) -> Version:
    """--kernel-version, else a release ref's version, else (a Hub branch or commit) ``<major>.<YYYYMMDD>.<HHMMSS>``
    of the commit's date, else (a local folder) metadata.json's ``version``."""
    if kernel_version is not None:
        return kernel_version
    if source.version is not None:
        return source.version
    declared = _metadata_version(metadata, where)
    if source.commit_date is not None:
        major = source.series.major if source.series is not None else (declared.major if declared else 0)
        return Version(f"{major}.{source.commit_date:%Y%m%d}.{source.commit_date:%H%M%S}")
    if source.trusted_roots:  # a Hub snapshot whose commit date could not be read (offline, never seen online)
        raise InvalidVariant(f"{where}: {source.label} is not a release tag and its commit date is unknown (see the "
                             "warning above); run once online or pass --kernel-version")
    if declared is not None:
        return declared
    raise InvalidVariant(
        f"{where}: no kernel version (no metadata.json 'version', no version tag/branch); pass --kernel-version"
    )


def _metadata_version(metadata: Mapping[str, Any], where: str) -> Version | None:
    value = metadata.get("version")
    if value is None:
        return None
    try:
        return parse_version(value, "version")
    except InvalidWheelName as exc:
        raise InvalidVariant(f"{where}/metadata.json: {exc}") from None


def _build_facts(metadata: Mapping[str, Any]) -> list[str]:
    """What kernels reads from metadata.json beyond the files, as Markdown list items for the wheel's description:
    the GPU architectures the binaries hold, the oldest kernels that loads them, where they were built from."""
    facts: list[str] = []
    backend = metadata.get("backend")
    if isinstance(backend, dict):
        archs = backend.get("archs")
        if isinstance(archs, list) and archs:
            listed = ", ".join(str(a) for a in archs)
            if backend.get("type") in CHECKED_BACKENDS and isinstance(metadata.get("id"), str):
                facts.append(f"- Backend `{backend['type']}`, compiled for architectures {listed}: importing it on a "
                             "GPU outside this list raises an ImportError that says so (kernels' check; "
                             f"`{SKIP_ARCH_CHECK}=1` skips it).")
            else:
                facts.append(f"- Backend `{backend.get('type', '?')}`, compiled for architectures {listed}: on a GPU "
                             "outside this list the op fails with a \"no kernel image\" error at its first call.")
    minver = metadata.get("kernels-minver")
    if isinstance(minver, str):
        facts.append(f"- Loading it through `kernels` needs kernels >= {minver}.")
    for key in ("upstream", "source"):
        if isinstance(metadata.get(key), str):
            facts.append(f"- {key.capitalize()}: {metadata[key]}")
    provenance = metadata.get("provenance")
    if isinstance(provenance, dict):
        builder = provenance.get("kernel-builder")
        kernel = provenance.get("kernel")
        if isinstance(builder, dict):
            facts.append(f"- Built by kernel-builder {builder.get('version', '?')}.")
        if isinstance(kernel, dict) and kernel.get("commit"):
            dirty = " with uncommitted changes (a dirty build)" if kernel.get("dirty") else ""
            facts.append(f"- Kernel source: commit {kernel['commit']}{dirty}.")
    return facts


def _description(kernel: str, package: str, variant: Variant, source: Source, name: WheelName,
                 metadata: Mapping[str, Any], gpu: gpu_targets.GpuTargets) -> str:
    facts = _build_facts(metadata) + ([gpu_targets.description_line(gpu)] if gpu else [])
    build = ("\n## Build\n\n" + "\n".join(facts) + "\n") if facts else ""
    return (
        f"# {name.distribution} {name.version}\n\n"
        f"The `{kernel}` kernel's build variant `{variant}`, repackaged as a wheel by `tools.hub2wheel` from "
        f"{source.label}. Import it as `import {package}`; its files are the variant's, unchanged.\n{build}"
    )


def _contents(source: wheel_contents.Source) -> bytes:
    return source if isinstance(source, bytes) else source.read_bytes()
