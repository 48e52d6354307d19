"""Re-verify a wheel hub2wheel wrote, as a ``.whl`` file or as a distribution installed in the running Python: its
RECORD hashes, metadata.json's digest over each kernel package, and the Sigstore bundle over metadata.json where the
variant was signed (``kernelwheel verify`` is this, printed). A ``.whl`` is unpacked into a temporary folder a chunk
at a time, each file checked against its RECORD hash as it is read."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernelwheel.format.digests import file_digest
from kernelwheel.format.signatures import SignatureOptions, check_package_digest, verify_package
from kernelwheel.format.variant_folder import SIGSTORE_BUNDLE, check_relpath
from kernelwheel.io.errors import DigestMismatch, InvalidWheel, SignatureMissing
from kernelwheel.io.limited_read import file_problem
from kernelwheel.wheels.gpu_targets import FILE_NAME, GpuTargets, read_recorded
from kernelwheel.wheels.wheel_reader import unpack_wheel


@dataclass(frozen=True)
class Verification:
    """What ``verify_wheel`` found: one line per kernel package (signer and digest, or "unsigned; ...") and the GPU
    code the wheel's binaries hold (None: the wheel records none)."""

    target: str
    lines: list[str]
    gpu_targets: GpuTargets | None


def verify_wheel(target: str | os.PathLike[str], options: SignatureOptions, *,
                 allow_unsigned: bool = False) -> Verification:
    """Verify ``target``: a ``.whl`` path (or any existing file), else the name of a distribution installed here.
    Raises ``InvalidWheel``, ``SignatureMissing`` (no signature and not ``allow_unsigned``; the message says what did
    match), ``SignatureInvalid`` or ``DigestMismatch``: each one line."""
    options.validate()
    path = Path(target)
    if path.suffix == ".whl" or os.path.isfile(path):  # os.path: False, not OSError, for a name too long
        if (problem := file_problem(path)) is not None:
            raise InvalidWheel(f"{path}: {problem}")
        lines, gpu = _verify_wheel_file(path, options, allow_unsigned)
    else:
        lines, gpu = _verify_installed(str(target), options, allow_unsigned)
    return Verification(target=str(target), lines=lines, gpu_targets=gpu)


def _kernel_packages(names: Sequence[str]) -> list[str]:
    """Top-level package folders holding ``metadata.json`` or its bundle, from a file list."""
    kept = ("metadata.json", SIGSTORE_BUNDLE)
    return sorted({n.split("/")[0] for n in names if n.count("/") == 1 and n.split("/")[1] in kept})


def _verify_packages(root: Path, packages: Sequence[str], where: Callable[[str], str], record: Callable[[], str],
                     options: SignatureOptions, allow_unsigned: bool) -> list[str]:
    """One line per package under ``root``: a signed one re-verified (signature, then digest), an unsigned one's
    digest checked; then ``record()`` (the RECORD check, after the stronger checks, so that their finding is the one
    reported). Without any signature, ``SignatureMissing`` (unless ``allow_unsigned``) says what did match."""
    signed = [p for p in packages if (root / p / SIGSTORE_BUNDLE).is_file()]
    lines = [verify_package(root / p, where(p), options) for p in signed]
    digests = {p: check_package_digest(root / p, where(p)) or "no metadata.json digest to check"
               for p in packages if p not in signed}
    record_line = record()
    if signed:
        return lines + [f"{where(p)}: unsigned; {checked}" for p, checked in digests.items()]
    checked = "; ".join([record_line, *digests.values()])
    if not allow_unsigned:
        raise SignatureMissing(f"{where('')}: no <package>/{SIGSTORE_BUNDLE} (built from an unsigned variant?); "
                               f"{checked}; --allow-unsigned accepts it")
    return [f"{where('')}: unsigned; {checked}"]


def _verify_wheel_file(wheel: Path, options: SignatureOptions,
                       allow_unsigned: bool) -> tuple[list[str], GpuTargets | None]:
    with tempfile.TemporaryDirectory(prefix="verify-wheel-") as tmp:
        names = unpack_wheel(wheel, lambda arcname: Path(tmp) / check_relpath(arcname, wheel.name))
        record = f"{len(names) - 1} file(s) match their RECORD hashes"  # RECORD itself carries no hash
        lines = _verify_packages(Path(tmp), _kernel_packages(names), lambda p: f"{wheel.name}:{p}".rstrip(":"),
                                 lambda: record, options, allow_unsigned)
        recorded = [n for n in names if n.count("/") == 1 and n.endswith(f".dist-info/{FILE_NAME}")]
        data = (Path(tmp) / recorded[0]).read_bytes() if len(recorded) == 1 else None
        return lines, read_recorded(data, f"{wheel.name}:{recorded[0]}" if recorded else wheel.name)


def _check_record(dist: importlib.metadata.Distribution, label: str) -> str:
    """Every installed file RECORD lists with a hash, hashed again; ``DigestMismatch`` names those that differ."""
    bad, checked = [], 0
    for file in dist.files or []:
        if file.hash is None:
            continue
        path = Path(str(dist.locate_file(file)))
        try:
            if file.hash.mode not in hashlib.algorithms_guaranteed:
                raise DigestMismatch(f"{label}: RECORD names hash {file.hash.mode!r} for {file}")
            digest = file_digest(path, file.hash.mode)  # a file the metadata.json check just hashed is not read again
        except FileNotFoundError:
            bad.append(f"{file} is in RECORD but missing")
            continue
        checked += 1
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != file.hash.value:
            bad.append(f"{file} does not match its RECORD hash")
    if bad:
        raise DigestMismatch(f"{label}: {'; '.join(bad)}")
    return f"{checked} file(s) match their RECORD hashes"


def _verify_installed(name: str, options: SignatureOptions,
                      allow_unsigned: bool) -> tuple[list[str], GpuTargets | None]:
    try:
        dist = importlib.metadata.distribution(name)
    except (importlib.metadata.PackageNotFoundError, ValueError):  # ValueError: an empty name
        raise InvalidWheel(f"{name!r} is neither a .whl file nor a distribution installed in {sys.prefix}") from None
    label = f"{dist.metadata['Name']} {dist.version}"
    root = Path(str(dist.locate_file("")))
    packages = _kernel_packages([Path(str(f)).as_posix() for f in dist.files or []])
    lines = _verify_packages(root, packages, lambda p: f"{label} ({p})" if p else label,
                             lambda: _check_record(dist, label), options, allow_unsigned)
    recorded = dist.read_text(FILE_NAME)  # checked against RECORD above, with every installed file
    return lines, read_recorded(recorded.encode() if recorded is not None else None, f"{label} ({FILE_NAME})")
