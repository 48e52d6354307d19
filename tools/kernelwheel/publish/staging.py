"""A build folder checked and copied to a staging folder: exactly the verified bytes that will be published.

Problems of every entry are collected and raised once, before anything is written to a remote.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from packaging.version import InvalidVersion, Version

from kernelwheel.format.digests import verify_digest
from kernelwheel.format.variant_folder import SIGSTORE_BUNDLE, collect_files, find_package, read_metadata
from kernelwheel.format.variants import Variant
from kernelwheel.io.errors import InvalidBuildDir, InvalidVariant, InvalidVariantName, ToolError
from kernelwheel.publish.plan import StagedVariant

_SIGSTORE = SIGSTORE_BUNDLE  # a detached signature: not covered by the digest, published when present


def _check_metadata_version(metadata: Mapping[str, object], version: Version, where: str) -> None:
    value = metadata.get("version")
    if isinstance(value, int) and not isinstance(value, bool) and value != version.major:
        raise InvalidVariant(
            f"{where}/metadata.json: version {value} (the kernel major) does not match --version {version}, which "
            f"publishes to branch v{version.major}; rebuild, or publish as {value}.x.y"
        )
    if isinstance(value, str):
        try:
            built = Version(value)
        except InvalidVersion:
            raise InvalidVariant(f"{where}/metadata.json: version {value!r} is not a PEP 440 version") from None
        if built != version:
            raise InvalidVariant(
                f"{where}/metadata.json: version {value} does not match --version {version}; rebuild, or publish "
                f"as {value}"
            )


def stage_variant(variant_dir: Path, staging: Path, version: Version, kernel: str) -> StagedVariant:
    """Check one ``build/<variant>/`` folder and copy its publishable files to ``staging/<variant>/``."""
    where = f"build/{variant_dir.name}"
    variant = Variant.parse(variant_dir.name)
    if variant_dir.is_symlink():
        raise InvalidVariant(f"{where}: the variant folder is a symlink; publish the real folder")
    files = collect_files(variant_dir, where)
    sigstore = variant_dir / _SIGSTORE
    if sigstore.is_file() and not sigstore.is_symlink():
        files[_SIGSTORE] = sigstore
    target = staging / variant_dir.name
    for rel, path in files.items():
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target / rel)  # follows in-variant symlinks: the Hub stores content, not links
    # Verify the copies, so what is checked is byte for byte what is published.
    staged = collect_files(target, where)
    metadata = read_metadata(staged, where)
    if not metadata:
        raise InvalidVariant(f"{where}: no metadata.json (kernels >= 0.14 needs it, and its digest is what is checked)")
    if not verify_digest(staged, metadata, where):
        raise InvalidVariant(
            f"{where}/metadata.json: no 'digest' of the variant's files, so they cannot be verified before publishing; "
            "rebuild (kernel-builder hash / tools.cli.build_variants write it)"
        )
    find_package(staged, metadata, str(metadata.get("name") or kernel), where)
    _check_metadata_version(metadata, version, where)
    rels = tuple(sorted([*staged, *([_SIGSTORE] if _SIGSTORE in files else [])]))
    return StagedVariant(variant, rels, sum((target / rel).stat().st_size for rel in rels))


def stage_build(build_dir: Path, staging: Path, version: Version, kernel: str) -> tuple[StagedVariant, ...]:
    """Every entry of ``build_dir`` checked (problems collected, then raised once) and staged."""
    if not os.path.isdir(build_dir):  # os.path: False, not OSError, for a name too long
        what = "is a file, not the folder of build variants" if os.path.exists(build_dir) else "no such folder"
        raise InvalidBuildDir(f"{build_dir}: {what}; build the variants first (or pass --build-dir)")
    entries = sorted(p for p in build_dir.iterdir() if not p.name.startswith("."))
    problems: list[ToolError] = []
    staged: list[StagedVariant] = []
    for entry in entries:
        try:
            if not entry.is_dir():
                raise InvalidBuildDir(
                    f"build/{entry.name}: not a build variant folder (a build folder holds only build/<variant>/ "
                    "folders); move it out of the build folder"
                )
            staged.append(stage_variant(entry, staging, version, kernel))
        except InvalidVariantName as exc:
            problems.append(InvalidVariantName(f"build/{entry.name}: not a build variant folder: {exc}"))
        except ToolError as exc:
            problems.append(exc)
    if len(problems) == 1:
        raise problems[0]
    if problems:
        listed = "".join(f"\n  {p}" for p in problems)
        raise InvalidBuildDir(f"{build_dir}: {len(problems)} entries cannot be published:{listed}")
    if not staged:
        raise InvalidBuildDir(f"{build_dir}: no build variants to publish (expected build/<variant>/ folders)")
    return tuple(staged)
