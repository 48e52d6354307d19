"""What the index needs to know about one wheel, read and validated once: hashes, METADATA, torch requirement, and
for a variant wheel (``variant_names``, PEP 825 draft) its checked ``variant.json`` (``variants_json``)."""

from __future__ import annotations

import functools
import hashlib
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.metadata import parse_email
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from kernelwheel.index.variants_json import variant_document
from kernelwheel.io.errors import InvalidProjectName, InvalidWheel, ToolError, one_line
from kernelwheel.wheels.naming import WheelName, is_distribution_name, labelled_torch, torch_minor
from kernelwheel.wheels.variant_names import VariantWheelName, parse_any_wheel_filename
from kernelwheel.wheels.wheel_reader import MAX_METADATA_BYTES, UNREADABLE_ZIP, UNREADABLE_ZIP_ERRORS, check_wheel

# Highest patch release probed when asking "does this specifier admit some release of torch X.Y".
_MAX_PATCH = 99
_NAME_MAX = 255  # bytes of one file name (ext4, xfs, tmpfs)


def admits_torch_minor(specifier: SpecifierSet | None, minor: Version) -> bool:
    """Whether a wheel requiring ``torch<specifier>`` can be installed next to some torch ``X.Y.*`` release."""
    if specifier is None:
        return True
    return _admits(str(specifier), minor)


@functools.lru_cache(maxsize=4096)
def _admits(specifier: str, minor: Version) -> bool:
    """``admits_torch_minor`` for a specifier's text: a wheelhouse has thousands of wheels but a handful of torch
    requirements, and each answer probes up to a hundred patch releases."""
    parsed = SpecifierSet(specifier)
    return any(parsed.contains(Version(f"{minor.major}.{minor.minor}.{patch}"), prereleases=True)
               for patch in range(_MAX_PATCH + 1))


@dataclass(frozen=True)
class IndexedWheel:
    """What the index knows about one wheel; kept in the state file so a wheel whose sha256 is unchanged is not
    validated again (size and mtime are informative: what a rerun trusts is the stat identity the state keeps beside
    this record, ``index.state.StatIdentity``)."""

    filename: str
    size: int
    mtime_ns: int
    sha256: str
    metadata_sha256: str
    requires_python: str | None
    torch: str | None  # the specifier of ``Requires-Dist: torch`` ("==2.14.*", ">=2.10"), None without one
    variant: str | None = None  # a variant wheel's variant.json, checked, as canonical JSON (variants_json)

    # Parsed once per wheel (cached_property: a wheelhouse of thousands asks each many times a run), never compared.
    @functools.cached_property
    def name(self) -> WheelName:
        """The file name's parts; a ``VariantWheelName`` for a variant wheel."""
        return parse_any_wheel_filename(self.filename)

    @functools.cached_property
    def label(self) -> str | None:
        """A variant wheel's label; None for any other wheel."""
        return self.name.label if isinstance(self.name, VariantWheelName) else None

    @functools.cached_property
    def project(self) -> str:
        return canonicalize_name(self.name.distribution)

    @functools.cached_property
    def torch_specifier(self) -> SpecifierSet | None:
        return None if self.torch is None else SpecifierSet(self.torch)

    def torch_minors(self) -> set[Version]:
        """The torch minors this wheel names: its ``+torchX.Y`` label and the versions its torch specifier pins
        (``==2.14.*``, ``~=2.13.0``, ``===2.14.1``); a bound (``>=0``, ``<2.13``) names none."""
        minors = {label} if (label := labelled_torch(self.name.version)) else set()
        for spec in self.torch_specifier or ():
            if spec.operator not in ("==", "~=", "==="):
                continue
            try:
                version = Version(spec.version.removesuffix(".*"))
            except InvalidVersion:
                continue
            minors.add(torch_minor(version))
        return minors


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def metadata_bytes(path: Path) -> bytes:
    """The wheel's ``METADATA`` exactly as stored (PEP 658 serves it byte for byte), read bounded: one over
    ``MAX_METADATA_BYTES`` is refused before it is held in memory."""
    with zipfile.ZipFile(path) as archive:
        candidates = [
            n for n in archive.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")
        ]
        if len(candidates) != 1:
            raise InvalidWheel(f"{path.name}: expected one top-level .dist-info/METADATA, found {candidates}")
        with archive.open(candidates[0]) as member:
            data = member.read(MAX_METADATA_BYTES + 1)
    if len(data) > MAX_METADATA_BYTES:
        raise InvalidWheel(f"{path.name}: its METADATA is over {MAX_METADATA_BYTES >> 20} MiB; expected at most that")
    return data


def torch_requirement_from(requires_dist: Iterable[str], filename: str,
                           environment: Mapping[str, str] | None = None) -> SpecifierSet | None:
    """The specifier of the one ``Requires-Dist: torch`` line that applies; None without one.

    With ``environment`` (the target interpreter's PEP 508 marker values) a line applies when it has no marker or
    its marker holds there, as in the installer: ``torch==2.13.*; python_version >= '3'`` pins torch. Without one
    (the index, which serves every interpreter) every torch line applies, marker or not, so that a marker cannot
    hide a pin from the label check or the sub-indexes."""
    found: list[SpecifierSet] = []
    for line in requires_dist:
        try:
            requirement = Requirement(line)
        except InvalidRequirement as exc:
            raise InvalidWheel(f"{filename}: Requires-Dist {line!r} is invalid: {exc}") from None
        if canonicalize_name(requirement.name) == "torch" and _applies(requirement, environment, filename):
            found.append(requirement.specifier)
    if len(found) > 1:
        raise InvalidWheel(f"{filename}: Requires-Dist names torch {len(found)} times for one interpreter; expected "
                           "at most once")
    return found[0] if found else None


def _applies(requirement: Requirement, environment: Mapping[str, str] | None, filename: str) -> bool:
    """Whether ``requirement`` applies in ``environment`` (always, without an environment or a marker)."""
    if requirement.marker is None or environment is None:
        return True
    try:
        return requirement.marker.evaluate(dict(environment))
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName, InvalidVersion) as exc:
        raise InvalidWheel(f"{filename}: the marker of Requires-Dist {str(requirement)!r} cannot be evaluated for "
                           f"the target: {one_line(exc)}") from None


def torch_floor(specifier: SpecifierSet | None) -> Version | None:
    """The lowest torch minor ``specifier`` names as a lower bound (``>=2.10``, ``==2.14.*``, ``~=2.10``); None when
    it has none (no requirement, or only ``<``/``!=``). From it up, a wheel belongs in every sub-index it admits."""
    floors = []
    for clause in specifier or ():
        if clause.operator not in (">=", ">", "==", "~=", "==="):
            continue
        try:
            floors.append(torch_minor(Version(clause.version.removesuffix(".*"))))
        except (InvalidVersion, ToolError):
            continue
    return min(floors, default=None)


def check_project_name(name: str, filename: str | None = None) -> None:
    """Refuse a distribution name that is not a PEP 508 name (non-ASCII, ``fóo``; a requirement such as
    ``img2gray-cu130>=0.2``): PEP 503 pages and installers only know ASCII names.

    ``filename`` is the wheel the name was read from: ``InvalidWheel`` naming it. Without one the name is a project
    to install, as a user typed it: ``InvalidProjectName``."""
    if is_distribution_name(name):
        return
    if filename is not None:
        raise InvalidWheel(
            f"{filename}: the project name {name!r} is not a PEP 508 name (ASCII letters, digits, '.', '_', '-'; "
            "starting and ending with a letter or digit)"
        )
    raise InvalidProjectName(f"expected a distribution name such as img2gray-cu130 (no version, extras or "
                             f"spaces: the wheel is chosen for the target's torch), got {name!r:.120}")


def inspect_wheel(path: Path) -> tuple[IndexedWheel, bytes]:
    """Validate a wheel (a readable zip, PEP 508 name, RECORD hashes, METADATA name/version = filename, torch label =
    torch requirement); every problem is one ``InvalidWheel`` line naming the file."""
    check_project_name(path.name.split("-", 1)[0], path.name)
    if len((path.name + ".metadata").encode()) > _NAME_MAX:
        raise InvalidWheel(f"{path.name}: the name is too long for its .metadata file (over {_NAME_MAX} bytes)")
    try:
        contents = check_wheel(path, path.name)  # raises InvalidWheel on a bad zip, RECORD or METADATA
        metadata = metadata_bytes(path)
    except UNREADABLE_ZIP_ERRORS as exc:  # from metadata_bytes; check_wheel turns its own into InvalidWheel
        raise InvalidWheel(f"{path.name}: {UNREADABLE_ZIP} {one_line(exc)}") from None
    name = contents.name
    raw, _ = parse_email(metadata)
    meta_name, meta_version = raw.get("name", ""), raw.get("version", "")
    check_project_name(meta_name, path.name)
    if canonicalize_name(meta_name) != canonicalize_name(name.distribution) or meta_version != str(name.version):
        # pip discards such a wheel as "inconsistent"; refuse to publish it instead.
        raise InvalidWheel(
            f"{path.name}: METADATA says {meta_name} {meta_version}, the filename says "
            f"{name.distribution} {name.version}; rebuild the wheel so that both agree"
        )
    torch = torch_requirement_from(raw.get("requires_dist", []), path.name)
    label = labelled_torch(name.version)
    if label is not None and not admits_torch_minor(torch, label):
        raise InvalidWheel(
            f"{path.name}: its version is labelled for torch {label} but it requires "
            f"torch{torch if torch is not None else ' (nothing)'}; expected Requires-Dist: torch=={label}.*"
        )
    variant = None
    if isinstance(name, VariantWheelName):
        variant = variant_document(contents.files.get(f"{name.dist_info}/variant.json"), path.name, name.label)
    stat = path.stat()
    wheel = IndexedWheel(
        filename=path.name,
        size=stat.st_size,
        mtime_ns=stat.st_mtime_ns,
        sha256=sha256_file(path),
        metadata_sha256=hashlib.sha256(metadata).hexdigest(),
        requires_python=raw.get("requires_python"),
        torch=None if torch is None else str(torch),
        variant=variant,
    )
    return wheel, metadata


def normalised_collisions(wheels: Iterable[IndexedWheel]) -> list[str]:
    """Wheel files that are one distribution file to an installer (``Foo_Bar``, ``foo.bar``, ``FOO_bar``)."""
    by_key: dict[tuple[str, Version, str], list[str]] = {}
    for wheel in wheels:
        name = wheel.name
        tag = name.tag if wheel.label is None else f"{name.tag} {wheel.label}"
        key = (canonicalize_name(name.distribution), name.version, tag)
        by_key.setdefault(key, []).append(wheel.filename)
    return [
        f"{', '.join(sorted(names))}: these names normalise to the same wheel ({project} {version} {tag}, PEP 503/"
        "427), so an installer would take any one of them; keep one"
        for (project, version, tag), names in sorted(by_key.items(), key=lambda item: str(item[0]))
        if len(names) > 1
    ]
