"""A build variant's folder checked on its own: the pipeline's check, after selection; the wheel plan reads it.

``check_variant_dir`` raises on the first problem it meets, in this order:

* every path is relative and inside the variant, symlinks stay inside it or point at the Hub cache's blobs
  (``variant_folder``);
* a locked source's ``kernels.lock`` hash matches (``lockfile``);
* ``metadata.json.sigstore`` verifies over metadata.json before it is parsed (``signatures``; an unsigned variant
  warns, or is refused under ``require_signature``), and the bundle ships beside metadata.json in the package;
* ``metadata.json``'s per-file digests match (``digests``), over the variant as published: a zip layout's archive,
  before it is unpacked (``zip_layout``);
* there is a Python package: ``build/<v>/__init__.py`` (flat layout) or ``build/<v>/<pkg>/__init__.py`` (nested), and
  kernel-depends only comes with the flat layout;
* every file that is ELF by its magic (whatever its name) and every ``*.so`` is ELF for the variant's CPU, and a noarch
  variant holds none (``elf``), and the GPU code of every ELF file is read (``gpu_targets``: a fat binary that cannot
  be read refuses the variant; architectures metadata.json declares that the binaries do not hold, or the reverse,
  warn in one line).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelwheel.format import lockfile
from kernelwheel.format.dependency import Dependency
from kernelwheel.format.digests import file_digest, verify_digest
from kernelwheel.format.kernel_depends import KernelInfo, parse_kernel_info
from kernelwheel.format.metadata import build_layout
from kernelwheel.format.signatures import SignatureOptions, SignedMetadata, check_variant
from kernelwheel.format.variant_folder import collect_files, find_package, read_metadata
from kernelwheel.format.variants import Variant
from kernelwheel.hub.sources import Source
from kernelwheel.io.errors import InvalidVariant
from kernelwheel.wheels import elf, gpu_targets, wheel_contents
from kernelwheel.wheels.entry_package import checked_archs, usable_build_id
from kernelwheel.wheels.zip_layout import unpack_variant


@dataclass(frozen=True)
class CheckedVariant:
    """One variant's folder, every check passed: what the wheel plan needs, nothing written."""

    variant: Variant
    files: Mapping[str, Path]  # the variant as published (``collect_files``): relative path → file
    metadata: Mapping[str, Any]  # metadata.json, parsed once its signature verified ({} when there is none)
    signed: SignedMetadata  # metadata.json's verified bytes and bundle (no bundle: unsigned)
    zipped: bool  # kernels 0.19's "zip" build layout, unpacked into ``payload``
    kernel: str  # the kernel's name: --dist-name, metadata.json's ``name``, the nested package or the source's
    package: str  # the package people import
    build_package: str  # the package the build's files install as: ``package``, or the build id behind an entry
    info: KernelInfo | None  # id, kernel-depends and kernels-minver, when metadata.json declares kernel-depends
    archs: tuple[str, ...]  # the GPU architectures an entry package checks (``entry_package.checked_archs``)
    payload: Mapping[str, wheel_contents.Source]  # the package's files by their path in the wheel
    elfs: tuple[elf.ElfInfo, ...]  # the payload's ELF files, each built for the variant's CPU
    gpu: gpu_targets.GpuTargets = field(default_factory=gpu_targets.GpuTargets)  # their GPU code, all together

    @property
    def where(self) -> str:
        return f"build/{self.variant}"

    @property
    def dependencies(self) -> tuple[Dependency, ...]:
        return self.info.dependencies if self.info is not None else ()


def check_variant_dir(variant: Variant, variant_dir: Path, source: Source, signatures: SignatureOptions, *,
                      dist_name: str | None = None) -> CheckedVariant:
    """Check one variant directory (``signatures``: trust root, signer workflows; ``dist_name``: --dist-name)."""
    where = f"build/{variant}"
    files = collect_files(variant_dir, where, source.trusted_roots)
    if source.locks is not None:
        lock = source.locks.get(str(variant))
        if lock is None:
            raise InvalidVariant(f"{where}: not in kernels.lock for {source.label}")
        lockfile.verify_variant(variant_dir, lock, label=f"{source.label} {where}")
    signed = check_variant(variant_dir, files, where, signatures, source.trusted_roots)  # before parsing
    metadata = read_metadata(files, where)
    verify_digest(files, metadata, where)  # the variant as published: a zip layout's archive, before it is unpacked
    zipped = build_layout(metadata, where) == "zip"
    sources: Mapping[str, wheel_contents.Source] = unpack_variant(files, metadata, where).files if zipped else files
    kernel = dist_name or str(metadata.get("name") or source.kernel_name)
    package, prefix = find_package(sources, metadata, kernel, where)
    if prefix and not dist_name and "name" not in metadata:
        kernel = package.replace("_", "-")  # nested layout: the package is named after the kernel

    info = parse_kernel_info(files["metadata.json"].read_bytes(), where) if metadata.get("kernel-depends") else None
    dependencies = info.dependencies if info is not None else ()
    if dependencies and (prefix or zipped):  # the entry hands the installed build folder to get_local_kernel
        raise InvalidVariant(f"{where}: kernel-depends is converted for the flat build layout only (metadata.json "
                             f"beside __init__.py); this variant uses the {'zip' if zipped else 'nested'} layout")
    archs = checked_archs(metadata, variant.depends_backend) if variant.arch is not None else ()
    # A build with dependencies, or GPU archs to check, installs under its unique id behind an entry package named
    # after the kernel that does what kernels does before importing it (entry_runtime); any other build is the
    # package itself.
    build_id = info.build_id if info is not None else usable_build_id(metadata, package)
    build_package = build_id if build_id is not None and (dependencies or archs) else package
    payload = {f"{build_package}/{rel[len(prefix):]}": p for rel, p in sources.items() if rel.startswith(prefix)}
    elfs, gpu = _checked_elfs(variant, payload, package, where)
    mismatch = gpu_targets.declared_mismatch(archs, gpu, variant.depends_backend, where)
    if mismatch is not None and signatures.warn is not None:  # where the run's one-line warnings go
        signatures.warn(mismatch)
    return CheckedVariant(variant=variant, files=files, metadata=metadata, signed=signed, zipped=zipped,
                          kernel=kernel, package=package, build_package=build_package, info=info, archs=archs,
                          payload=payload, elfs=elfs, gpu=gpu)


def _checked_elfs(variant: Variant, payload: Mapping[str, wheel_contents.Source], package: str,
                  where: str) -> tuple[tuple[elf.ElfInfo, ...], gpu_targets.GpuTargets]:
    """Every ELF file of the payload, read (by content: any name may hide one) and checked for the variant's CPU, and
    the GPU code they hold together."""
    elfs = []
    gpu = gpu_targets.GpuTargets()
    for arcname, path in sorted(payload.items()):
        if isinstance(path, bytes):  # unpacked from a zip layout's archive, which holds no ELF (zip_layout)
            continue
        if elf.looks_like_shared_object(arcname) or elf.has_elf_magic(path):  # by content: any name may hide one
            real = Path(os.path.realpath(path))
            shown = f"{where}/{arcname[len(package)+1:]}"
            elfs.append(elf.read_elf(real, display=shown, sha256=file_digest(real)))
            gpu = gpu.union(gpu_targets.read_gpu_targets(real, shown))
    if elfs and variant.arch is None:
        raise InvalidVariant(f"{where}: a noarch variant must not contain compiled files ({elfs[0].path})")
    if variant.arch is not None:
        wrong = [e for e in elfs if e.cpu != variant.arch.cpu]
        if wrong:
            raise InvalidVariant(f"{where}: {wrong[0].path} is built for {wrong[0].cpu}, not {variant.arch.cpu}")
    return tuple(elfs), gpu
