"""Repackage every build variant of a kernel repository (Hub or local ``build/``) as pip-installable wheels.

``convert()`` turns one ``build/`` tree into wheels; ``main(argv)`` is ``python -m tools.hub2wheel``. Each variant is
checked on its own (a bad one is reported with its reason and never stops the others):

* the name parses (``tools.variants``) and is something this run produces wheels for;
* every path is relative and inside the variant, symlinks stay inside it (or point at the Hub cache's blobs);
* ``metadata.json``'s per-file digests and the ``kernels.lock`` hash match, when present;
* every ``.so`` is ELF for the variant's CPU; tags come from those files (``tools.elfinfo``);
* there is a Python package: ``build/<v>/__init__.py`` (flat layout) or ``build/<v>/<pkg>/__init__.py`` (nested).

Names, versions and requirements come from ``tools.wheelname``; the archive from ``tools.wheelfile`` (reproducible,
atomic). Wheel paths go to stdout, progress and errors to stderr; the exit code is 1 when nothing was converted.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from tools import elfinfo, hub, lockfile
from tools.errors import DigestMismatch, InvalidVariant, ToolError
from tools.variants import Target, Torch, TorchStableAbi, Variant, select
from tools.wheelfile import WheelContents, build_metadata, write_wheel
from tools.wheelname import WheelName, distribution_name, kernel_version, torch_requirement

_SKIPPED_NAMES = {"metadata.json.sigstore"}
_DIGEST_EXCLUDED = {"metadata.json", "metadata.json.sigstore"}
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

EPILOG = """\
examples:
  # every variant of the newest v1.x of a Hub kernel, into ./wheelhouse
  python -m tools.hub2wheel kernels-community/img2gray --version 1
  # one commit, CUDA 13.0 variants only, from a private endpoint
  HF_ENDPOINT=https://hub.internal python -m tools.hub2wheel org/img2gray --revision 3f2a9c1 --variant '*-cu130-*'
  # everything a kernels.lock pins, hashes verified
  python -m tools.hub2wheel --lock kernels.lock --out /srv/wheels
  # a local checkout holding build/
  python -m tools.hub2wheel ./img2gray --kernel-version 0.1.0
then: pip install --find-links wheelhouse img2gray-cu130
"""


@dataclass(frozen=True)
class Source:
    """A ``build/`` tree to convert and what is known about where it came from."""

    build_dir: Path
    label: str  # "org/name@<commit>" or a path, for messages and the wheel summary
    kernel_name: str  # default distribution base name (repo basename / directory name)
    version: Version | None = None  # from the resolved ref (tag v1.2.3, branch v1), if any
    trusted_roots: tuple[Path, ...] = ()  # where symlinks may point besides the variant (the cache's blobs/)
    locks: Mapping[str, lockfile.VariantLock] | None = None


@dataclass(frozen=True)
class Options:
    out_dir: Path = Path("wheelhouse")
    dist_name: str | None = None
    kernel_version: Version | None = None
    target: Target = Target()


@dataclass
class Report:
    converted: list[tuple[str, Path]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


# --- checks on a variant's files ---------------------------------------------------------------------------


def check_relpath(rel: str, where: str) -> str:
    """Refuse absolute paths, ``..``, backslashes and control characters in a file name."""
    if not rel or rel.startswith("/") or re.match(r"^[A-Za-z]:", rel):
        raise InvalidVariant(f"{where}: absolute path {rel!r} is not allowed")
    if "\\" in rel or any(ord(c) < 32 for c in rel):
        raise InvalidVariant(f"{where}: file name {rel!r} has a backslash or control character")
    parts = PurePosixPath(rel).parts
    if ".." in parts or "." in parts or rel.endswith("/"):
        raise InvalidVariant(f"{where}: path {rel!r} leaves the variant directory (path traversal)")
    return rel


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def collect_files(variant_dir: Path, where: str, trusted_roots: Sequence[Path] = ()) -> dict[str, Path]:
    """``{relative posix path: file}`` for every file of the variant, after the path and symlink checks."""
    root = Path(os.path.realpath(variant_dir))
    allowed = [root, *(Path(os.path.realpath(r)) for r in trusted_roots)]
    files: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(variant_dir):
        here = Path(dirpath)
        for d in list(dirnames):
            if d == "__pycache__":
                dirnames.remove(d)
                continue
            if (here / d).is_symlink():
                rel = (here / d).relative_to(variant_dir).as_posix()
                raise InvalidVariant(f"{where}: {rel} is a symlinked directory (not allowed in a variant)")
        dirnames.sort()
        for name in sorted(filenames):
            path = here / name
            rel = check_relpath(path.relative_to(variant_dir).as_posix(), where)
            if name.endswith(".pyc") or name in _SKIPPED_NAMES:
                continue
            if path.is_symlink():
                target = Path(os.path.realpath(path))
                if not any(_inside(target, r) for r in allowed):
                    raise InvalidVariant(f"{where}: {rel} is a symlink pointing outside the variant ({target})")
                if not target.is_file():
                    raise InvalidVariant(f"{where}: {rel} is a symlink to a missing or non-regular file")
            elif not path.is_file():
                raise InvalidVariant(f"{where}: {rel} is not a regular file")
            files[rel] = path
    return files


def read_metadata(files: Mapping[str, Path], where: str) -> dict[str, Any]:
    path = files.get("metadata.json")
    if path is None:
        return {}
    try:
        data = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidVariant(f"{where}/metadata.json: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidVariant(f"{where}/metadata.json: expected a JSON object")
    return data


def _b64(value: str) -> bytes:
    text = value.strip()
    text += "=" * (-len(text) % 4)
    altchars = b"-_" if ("-" in text or "_" in text) else None
    return base64.b64decode(text, altchars=altchars, validate=True)


def digested_files(files: Mapping[str, Path]) -> list[str]:
    """The files a ``metadata.json`` digest covers: all of ``collect_files`` but metadata.json and its signature."""
    return sorted(rel for rel in files if rel not in _DIGEST_EXCLUDED)


def _file_digest(path: Path, algorithm: str) -> bytes:
    return hashlib.new(algorithm, path.read_bytes()).digest()


def make_digest(files: Mapping[str, Path], algorithm: str = "sha256") -> dict[str, Any]:
    """``metadata.json``'s ``digest`` for ``files`` (``collect_files`` output): what ``verify_digest`` checks."""
    return {"algorithm": algorithm,
            "files": {rel: base64.b64encode(_file_digest(files[rel], algorithm)).decode() for rel in digested_files(files)}}


def verify_digest(files: Mapping[str, Path], metadata: Mapping[str, Any], where: str) -> bool:
    """Check ``metadata.json``'s ``digest``; returns False when there is none."""
    digest = metadata.get("digest")
    if digest is None:
        return False
    if not isinstance(digest, dict) or not isinstance(digest.get("files"), dict):
        raise InvalidVariant(f"{where}/metadata.json: 'digest' must be {{algorithm, files: {{path: base64}}}}")
    algorithm = str(digest.get("algorithm", "sha256")).lower()
    if algorithm not in ("sha256", "sha512"):
        raise InvalidVariant(f"{where}/metadata.json: digest algorithm {algorithm!r} is not sha256 or sha512")
    listed: dict[str, str] = digest["files"]
    for rel in listed:
        check_relpath(rel, f"{where}/metadata.json digest")
    present = set(digested_files(files))
    missing = sorted(set(listed) - present)
    if missing:
        raise DigestMismatch(f"{where}: {missing[0]} is listed in metadata.json's digest but missing")
    unlisted = sorted(present - set(listed))
    if unlisted:
        raise DigestMismatch(f"{where}: {unlisted[0]} is not covered by metadata.json's digest")
    for rel in sorted(listed):
        try:
            expected = _b64(listed[rel])
        except (binascii.Error, ValueError):
            raise InvalidVariant(f"{where}/metadata.json: digest of {rel} is not base64") from None
        if _file_digest(files[rel], algorithm) != expected:
            raise DigestMismatch(f"{where}: {rel} does not match its {algorithm} digest in metadata.json")
    return True


def find_package(files: Mapping[str, Path], metadata: Mapping[str, Any], kernel: str, where: str) -> tuple[str, str]:
    """``(import name, prefix inside the variant)``: flat → ``(name, "")``, nested → ``(pkg, "pkg/")``."""
    if "__init__.py" in files:
        name = str(metadata.get("name") or kernel).replace("-", "_")
        if not _IDENTIFIER.match(name):
            raise InvalidVariant(f"{where}: package name {name!r} (from the kernel name) is not a Python identifier")
        return name, ""
    packages = sorted({rel.split("/")[0] for rel in files if rel.count("/") == 1 and rel.endswith("/__init__.py")})
    packages = [p for p in packages if _IDENTIFIER.match(p)]
    if not packages:
        raise InvalidVariant(
            f"{where}: no Python package (neither {where}/__init__.py, flat layout, nor {where}/<pkg>/__init__.py, "
            "nested layout)"
        )
    wanted = kernel.replace("-", "_")
    if len(packages) > 1 and wanted not in packages:
        raise InvalidVariant(f"{where}: several packages ({', '.join(packages)}) and none is named {wanted!r}")
    name = wanted if wanted in packages else packages[0]
    return name, f"{name}/"


# --- one variant → one wheel -------------------------------------------------------------------------------


def _requirements(variant: Variant, metadata: Mapping[str, Any], where: str) -> list[Requirement]:
    fw = variant.framework
    if isinstance(fw, Torch):
        reqs = [torch_requirement(fw.version)]
    elif isinstance(fw, TorchStableAbi):
        reqs = [torch_requirement(fw.version, stable_abi=True)]
    else:
        reqs = [Requirement("torch")]
    for dep in metadata.get("python-depends", []) or []:
        try:
            reqs.append(Requirement(str(dep)))
        except InvalidRequirement:
            raise InvalidVariant(f"{where}/metadata.json: python-depends entry {dep!r} is not a requirement") from None
    return reqs


def _base_version(source: Source, options: Options, metadata: Mapping[str, Any], where: str) -> Version:
    if options.kernel_version is not None:
        return options.kernel_version
    if source.version is not None:
        return source.version
    value = metadata.get("version")
    if value is not None:
        try:
            return Version(str(value))
        except InvalidVersion:
            raise InvalidVariant(f"{where}/metadata.json: version {value!r} is not a PEP 440 version") from None
    raise InvalidVariant(
        f"{where}: no kernel version (no metadata.json 'version', no version tag/branch); pass --kernel-version"
    )


def _description(kernel: str, package: str, variant: Variant, source: Source, name: WheelName) -> str:
    return (
        f"# {name.distribution} {name.version}\n\n"
        f"The `{kernel}` kernel's build variant `{variant}`, repackaged as a wheel by `tools.hub2wheel` from "
        f"{source.label}. Import it as `import {package}`; its files are the variant's, unchanged.\n"
    )


def build_variant(variant: Variant, variant_dir: Path, source: Source, options: Options) -> WheelContents:
    """Check one variant directory and return the wheel it becomes (nothing is written)."""
    where = f"build/{variant}"
    files = collect_files(variant_dir, where, source.trusted_roots)
    if source.locks is not None:
        lock = source.locks.get(str(variant))
        if lock is None:
            raise InvalidVariant(f"{where}: not in kernels.lock for {source.label}")
        lockfile.verify_variant(variant_dir, lock, label=f"{source.label} {where}")
    metadata = read_metadata(files, where)
    verify_digest(files, metadata, where)
    kernel = options.dist_name or str(metadata.get("name") or source.kernel_name)
    package, prefix = find_package(files, metadata, kernel, where)
    if prefix and not options.dist_name and "name" not in metadata:
        kernel = package.replace("_", "-")  # nested layout: the package is named after the kernel

    payload = {f"{package}/{rel[len(prefix):]}": p for rel, p in files.items() if rel.startswith(prefix)}
    elfs = []
    for arcname, path in sorted(payload.items()):
        if arcname.endswith(".so") or ".so." in arcname:
            elfs.append(elfinfo.read_elf(Path(os.path.realpath(path)), display=f"{where}/{arcname[len(package)+1:]}"))
    if elfs and variant.arch is None:
        raise InvalidVariant(f"{where}: a noarch variant must not contain compiled files ({elfs[0].path})")
    if variant.arch is not None:
        wrong = [e for e in elfs if e.cpu != variant.arch.cpu]
        if wrong:
            raise InvalidVariant(f"{where}: {wrong[0].path} is built for {wrong[0].cpu}, not {variant.arch.cpu}")

    tags = elfinfo.python_tags(elfs)
    platform = elfinfo.platform_tag(elfs, variant.arch.cpu) if elfs and variant.arch else "any"
    torch_minor = variant.framework.version if isinstance(variant.framework, Torch) else None
    name = WheelName(
        distribution=distribution_name(kernel, variant.backend_tag),
        version=kernel_version(_base_version(source, options, metadata, where), torch_minor),
        python_tag=tags.python_tag,
        abi_tag=tags.abi_tag,
        platform_tag=platform,
    )
    raw = build_metadata(
        name,
        requires_dist=_requirements(variant, metadata, where),
        requires_python=SpecifierSet(tags.requires_python) if tags.requires_python else None,
        summary=f"{kernel} kernel, build variant {variant}, repackaged from {source.label}",
        description=_description(kernel, package, variant, source, name),
    )
    if isinstance(metadata.get("license"), str):
        raw["license"] = metadata["license"]
    contents = {arc: p.read_bytes() for arc, p in payload.items()}
    return WheelContents(name=name, metadata=raw, files=contents, root_is_purelib=not elfs)


def convert(source: Source, options: Options, console: Console | None = None) -> Report:
    """Convert every selected variant of ``source.build_dir``; one failure never stops the others."""
    console = console or Console(stderr=True, highlight=False, soft_wrap=True)
    report = Report()
    if not source.build_dir.is_dir():
        report.skipped.append(("build/", f"{source.label} has no build/ directory"))
        return report
    names = [p.name for p in source.build_dir.iterdir() if p.is_dir() or p.is_symlink()]
    if source.locks is not None:
        for missing in sorted(set(source.locks) - set(names)):
            report.skipped.append((missing, f"locked in kernels.lock but absent from {source.label}"))
        names = [n for n in names if n in source.locks]
    selection = select(names, options.target)
    report.skipped.extend((r.name, r.reason) for r in selection.rejected)
    written: dict[str, str] = {}
    with Progress(
        TextColumn("[bold]writing"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
        console=console, transient=True, disable=not console.is_terminal,
    ) as progress:
        task = progress.add_task("", total=len(selection.accepted))
        for variant in selection.accepted:
            progress.update(task, description=str(variant))
            try:
                variant_dir = source.build_dir / str(variant)
                if variant_dir.is_symlink():
                    raise InvalidVariant(f"build/{variant}: the variant directory itself is a symlink")
                contents = build_variant(variant, variant_dir, source, options)
                filename = contents.name.filename
                if filename in written:
                    raise InvalidVariant(f"build/{variant}: gives the same wheel as {written[filename]} ({filename})")
                path = write_wheel(contents, options.out_dir)
                written[filename] = str(variant)
                report.converted.append((str(variant), path))
                console.print(f"[green]✓[/] {variant} → {path.name}", highlight=False, soft_wrap=True)
            except ToolError as exc:
                report.skipped.append((str(variant), str(exc)))
            progress.advance(task)
    return report


# --- sources -------------------------------------------------------------------------------------------------


def _ref_version(name: str) -> Version | None:
    match = re.match(r"^v(\d+(?:\.\d+)*)$", name)
    return Version(match[1]) if match else None


class _Downloads:
    """A rich progress bar fed by ``hub.fetch``'s per-file callback."""

    def __init__(self, console: Console, label: str) -> None:
        self.progress = Progress(
            TextColumn("[bold]downloading"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
            console=console, transient=True, disable=not console.is_terminal,
        )
        self.label = label
        self.task: Any = None

    def __enter__(self) -> _Downloads:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    def __call__(self, filename: str, index: int, total: int) -> None:
        if self.task is None:
            self.task = self.progress.add_task(self.label, total=total)
        self.progress.update(self.task, completed=index, description=filename.rsplit("/", 1)[-1] or self.label)


def hub_sources(
    args: argparse.Namespace, settings: hub.HubSettings, console: Console
) -> Iterator[Source]:
    api = settings.api()
    patterns = [f"build/{g}/*" for g in args.variant] if args.variant else ["build/*"]
    if args.lock:
        locks = lockfile.load_lockfile(Path(args.lock))
        if args.source:
            locks = [lock for lock in locks if lock.repo_id == args.source]
            if not locks:
                raise ToolError(f"{args.lock}: has no entry for {args.source}")
        for lock in locks:
            locked_version: Version | None = None
            try:
                _, refs = hub.list_version_refs(api, settings, lock.repo_id)
                locked_version = next((r.version for r in refs if r.commit == lock.sha), None)
            except ToolError:
                pass
            lock_patterns = [f"build/{v}/*" for v in lock.variants]
            with _Downloads(console, lock.repo_id) as downloads:
                snapshot = hub.fetch(api, settings, lock.repo_id, lock.sha, patterns=lock_patterns, on_file=downloads)
            console.print(f"{lock.repo_id}: locked commit {snapshot.commit}", highlight=False)
            yield _snapshot_source(snapshot, locked_version, lock.variants)
        return
    repo_id = args.source
    revision = args.revision or "main"
    version: Version | None = _ref_version(revision)
    if args.version:
        _, ref = hub.resolve_version(api, settings, repo_id, args.version)
        console.print(f"{repo_id}: --version {args.version} → {ref.kind} {ref.name} at {ref.commit}", highlight=False)
        revision, version = ref.name, ref.version
    with _Downloads(console, repo_id) as downloads:
        snapshot = hub.fetch(api, settings, repo_id, revision, patterns=patterns, on_file=downloads)
    console.print(f"{repo_id}@{revision}: commit {snapshot.commit}", highlight=False)
    yield _snapshot_source(snapshot, version, None)


def _snapshot_source(
    snapshot: hub.Snapshot, version: Version | None, locks: Mapping[str, lockfile.VariantLock] | None
) -> Source:
    return Source(
        build_dir=snapshot.root / "build",
        label=f"{snapshot.repo_id}@{snapshot.commit[:12]}",
        kernel_name=snapshot.repo_id.split("/")[-1],
        version=version,
        trusted_roots=(snapshot.blobs,),
        locks=locks,
    )


# --- command line ----------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.hub2wheel",
        description="Repackage the build variants of a Hub kernel repository (or a local build/) as wheels.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("source", nargs="?", help="Hub repo id (org/name) or a local directory holding build/")
    ref = parser.add_mutually_exclusive_group()
    ref.add_argument("--revision", help="branch, tag or commit to convert (default: main)")
    ref.add_argument("--version", help="PEP 440 specifier or bare major, matched against v<version> tags/branches")
    parser.add_argument("--variant", action="append", default=[], metavar="GLOB",
                        help="only variants matching this glob (repeatable)")
    parser.add_argument("--lock", metavar="KERNELS_LOCK", help="convert every kernel a kernels.lock pins, verified")
    parser.add_argument("--out", type=Path, default=Path("wheelhouse"), help="output directory (default: wheelhouse)")
    parser.add_argument("--dist-name", help="distribution base name (default: the kernel's name)")
    parser.add_argument("--kernel-version", help="kernel version when neither the ref nor metadata.json gives one")
    return parser


def _print_report(report: Report, console: Console) -> None:
    for name, reason in report.skipped:
        console.print(f"[yellow]skipped[/] {name}: {reason}", highlight=False, soft_wrap=True)
    console.print(f"{len(report.converted)} wheel(s) written, {len(report.skipped)} variant(s) skipped", highlight=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    if not args.source and not args.lock:
        parser.error("give a SOURCE (org/name or a directory) or --lock kernels.lock")
    try:
        kernel_version_opt = Version(args.kernel_version) if args.kernel_version else None
    except InvalidVersion:
        parser.error(f"--kernel-version {args.kernel_version!r} is not a PEP 440 version")
    options = Options(
        out_dir=args.out, dist_name=args.dist_name, kernel_version=kernel_version_opt,
        target=Target(patterns=tuple(args.variant)),
    )
    total = Report()
    try:
        local = Path(args.source) if args.source and not args.lock else None
        if local is not None and (local.is_dir() or args.source.startswith((".", "/"))):
            if args.revision or args.version:
                parser.error("--revision/--version apply to Hub repositories, not to a local directory")
            if not local.is_dir():
                raise ToolError(f"{local}: no such directory")
            sources: Iterator[Source] = iter([
                Source(build_dir=local / "build", label=str(local), kernel_name=local.resolve().name)
            ])
        else:
            sources = hub_sources(args, hub.HubSettings.from_env(), console)
        for source in sources:
            report = convert(source, options, console)
            total.converted.extend(report.converted)
            total.skipped.extend(report.skipped)
    except ToolError as exc:
        console.print(f"[red]error:[/] {exc}", highlight=False, soft_wrap=True)
        return 1
    for _, path in total.converted:
        print(path)
    _print_report(total, console)
    return 0 if total.converted else 1


if __name__ == "__main__":
    raise SystemExit(main())
