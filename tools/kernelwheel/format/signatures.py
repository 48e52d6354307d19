"""``metadata.json.sigstore``: the Sigstore signature over a variant's ``metadata.json``, verified as kernels
verifies it, before the variant becomes a wheel and again after the wheel is installed.

kernels (0.17.2's ``verify_variant``, 0.19.1's ``verify_signature``) reads the bundle, verifies it over
metadata.json's bytes with ``Verifier.production()`` against its default policy (GitHub workflow identities of the
kernels-community build workflows) before parsing the JSON, then checks the digest. This module takes the same steps
with this toolkit's own signer list (``signer_policy``: the newest release's, compared with every supported release's
by tests) and result types named as kernels names them (``SignatureVerdict``), and adds what kernels cannot: a
trusted root from a file (``--sigstore-trusted-root``: a private Sigstore, or offline) and another list of accepted
workflows (``--signer-workflow``). The signature covers metadata.json; metadata.json's digest covers
every other file (``kernelwheel.format.digests``).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from kernelwheel.format.digests import verify_digest
from kernelwheel.format.signer_policy import (
    DEFAULT_SIGNERS,
    WorkflowSigner,
    accepted_uris,
    signers_for,
    verification_policy,
)
from kernelwheel.format.variant_folder import SIGSTORE_BUNDLE, collect_files, read_metadata
from kernelwheel.io.errors import (
    DigestMismatch,
    InvalidTrustSettings,
    InvalidVariant,
    SignatureInvalid,
    SignatureMissing,
)
from kernelwheel.io.limited_read import read_limited

if TYPE_CHECKING:  # sigstore is imported when a signature is checked (it takes ~1 s to import)
    from cryptography.x509 import Certificate
    from sigstore.verify import Verifier


class SignatureVerdict:
    """What the signature half of kernels' verification answers, each result named as kernels names it."""

    @dataclass(frozen=True)
    class Success:
        pass

    @dataclass(frozen=True)
    class SignatureBundleMissing:
        pass

    @dataclass(frozen=True)
    class SignatureBundleInvalid:
        reason: str

    @dataclass(frozen=True)
    class MetadataMissing:
        pass

    @dataclass(frozen=True)
    class SignatureVerificationFailure:
        reason: str


SignatureResult: TypeAlias = (
    SignatureVerdict.Success
    | SignatureVerdict.SignatureBundleMissing
    | SignatureVerdict.SignatureBundleInvalid
    | SignatureVerdict.MetadataMissing
    | SignatureVerdict.SignatureVerificationFailure
)

MAX_BUNDLE_BYTES = 1 << 20  # real bundles are a few KiB; a bigger file is not read into memory
MAX_TRUSTED_ROOT_BYTES = 4 << 20  # real trusted roots are a few KiB
_BUILD_SIGNER_URI = "1.3.6.1.4.1.57264.1.9"  # Fulcio's extension naming the workflow that requested the certificate


def workflow_signers(signer_workflows: Sequence[str]) -> tuple[WorkflowSigner, ...]:
    """One signer per repository for these workflow URIs; ``DEFAULT_SIGNERS`` when none are given."""
    if not signer_workflows:
        return DEFAULT_SIGNERS
    try:
        return signers_for(signer_workflows)
    except ValueError as exc:
        raise InvalidTrustSettings(f"--signer-workflow {exc}, e.g. ...@refs/heads/main") from None


def signer_of(cert: Certificate) -> str | None:
    """The build signer URI (the signing workflow) a Fulcio certificate names, if any."""
    from cryptography.hazmat import asn1
    from cryptography.x509 import ExtensionNotFound, ObjectIdentifier

    try:
        value = cert.extensions.get_extension_for_oid(ObjectIdentifier(_BUILD_SIGNER_URI)).value
        return str(asn1.decode_der(str, value.value))  # type: ignore[attr-defined]
    except (ExtensionNotFound, ValueError):
        return None


# Process-wide, not per run: one TUF refresh per trust root and process, and its note said once.
_VERIFIERS: dict[Path | None, tuple[Verifier | None, str | None]] = {}
_VERIFIERS_LOCK = threading.Lock()  # variants may be checked on several threads


def load_verifier(trusted_root: Path | None, warn: Callable[[str], None] | None = None) -> Verifier:
    """A sigstore ``Verifier`` for ``trusted_root`` (a ``trusted_root.json``), or Sigstore's production root as
    kernels uses it: refreshed through TUF, or, when that fails or ``HF_HUB_OFFLINE`` is set, the copy in the local
    TUF cache (sigstore-python ships one). One per root and process."""
    with _VERIFIERS_LOCK:
        if trusted_root not in _VERIFIERS:
            _VERIFIERS[trusted_root] = _make_verifier(trusted_root)
        verifier, note = _VERIFIERS[trusted_root]
        if note is not None and verifier is not None and warn is not None:
            warn(note)
            _VERIFIERS[trusted_root] = (verifier, None)  # said once
    if verifier is None:
        raise InvalidTrustSettings(str(note))
    return verifier


def _make_verifier(trusted_root: Path | None) -> tuple[Verifier | None, str | None]:
    from sigstore.errors import Error as SigstoreError
    from sigstore.models import TrustedRoot
    from sigstore.verify import Verifier
    from sigstore_models.trustroot.v1 import TrustedRoot as TrustedRootMessage

    if trusted_root is not None:
        try:
            # TrustedRoot.from_file, reading the file through read_limited: a FIFO named here must not hang.
            data = read_limited(trusted_root, MAX_TRUSTED_ROOT_BYTES)
            if len(data) > MAX_TRUSTED_ROOT_BYTES:
                raise ValueError(f"over {MAX_TRUSTED_ROOT_BYTES >> 20} MiB, more than a trusted root holds")
            return Verifier(trusted_root=TrustedRoot(TrustedRootMessage.from_json(data))), None
        except (OSError, ValueError, SigstoreError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0]
            return None, f"--sigstore-trusted-root {trusted_root}: not a usable Sigstore trusted_root.json ({reason})"
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    if not offline:
        try:
            return Verifier.production(), None
        except SigstoreError as exc:
            refresh_failed = f"Sigstore's trusted root could not be refreshed ({exc})"
    tuf_log = logging.getLogger("sigstore._internal.tuf")  # it logs "loaded in offline mode" on stderr: said below
    level = tuf_log.level
    tuf_log.setLevel(logging.ERROR)
    try:
        verifier = Verifier.production(offline=True)
    except (SigstoreError, OSError, ValueError) as exc:
        return None, (f"no Sigstore trusted root: the TUF cache cannot be read ({exc}); "
                      "pass --sigstore-trusted-root FILE")
    finally:
        tuf_log.setLevel(level)
    return verifier, None if offline else f"{refresh_failed}: using the local TUF cache's copy"


def verify_signature(metadata: bytes | None, bundle: bytes | None, verifier: Verifier,
                     signers: Sequence[WorkflowSigner]) -> SignatureResult:
    """The signature half of kernels' verification, same order and same results: the bundle parses, metadata.json
    is present, the bundle verifies over its bytes under the policy of ``signers`` (any of them)."""
    from sigstore.errors import CertValidationError
    from sigstore.errors import Error as SigstoreError
    from sigstore.models import Bundle, InvalidBundle

    if bundle is None:
        return SignatureVerdict.SignatureBundleMissing()
    try:
        signature_bundle = Bundle.from_json(bundle)
    except (InvalidBundle, ValueError) as exc:
        return SignatureVerdict.SignatureBundleInvalid(reason=str(exc).splitlines()[0])
    if metadata is None:
        return SignatureVerdict.MetadataMissing()
    accepted = verification_policy(signers)
    try:
        verifier.verify_artifact(metadata, signature_bundle, accepted)
    except (SigstoreError, ValueError) as exc:
        reason: str = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, CertValidationError):
            reason = f"the signing certificate does not chain to the trusted root's CA ({reason})"
        signer = signer_of(signature_bundle.signing_certificate)
        try:
            accepted.verify(signature_bundle.signing_certificate)
        except SigstoreError:
            uris = ", ".join(accepted_uris(signers)) or "none"
            reason = f"signed by workflow {signer or '(none named)'}, which is not an accepted signer ({uris})"
        return SignatureVerdict.SignatureVerificationFailure(reason=reason)
    return SignatureVerdict.Success()


@dataclass(frozen=True)
class SignatureOptions:
    """What a signature must satisfy: the trust root, the accepted workflows, and whether one is required."""

    trusted_root: Path | None = None  # None: Sigstore's production root, as kernels
    signer_workflows: tuple[str, ...] = ()  # empty: DEFAULT_SIGNERS (the kernels-community build workflows)
    require_signature: bool = False
    warn: Callable[[str], None] | None = field(default=None, compare=False)  # where a one-line warning goes

    def signers(self) -> tuple[WorkflowSigner, ...]:
        return workflow_signers(self.signer_workflows)

    def validate(self) -> None:
        """Fail early (``InvalidTrustSettings``) on a bad workflow URI or trusted-root file, before any work."""
        self.signers()
        if self.trusted_root is not None:
            load_verifier(self.trusted_root, self.warn)


@dataclass(frozen=True)
class SignedMetadata:
    """A variant's verified ``metadata.json`` bytes and its bundle (``bundle`` None: the variant is unsigned)."""

    metadata: bytes | None = None
    bundle: bytes | None = None

    def wheel_files(self, package: str, payload: Mapping[str, Path]) -> dict[str, bytes]:
        """metadata.json and its bundle inside the package folder, so the installed package can be re-verified
        (flat layout: metadata.json is already there; nested: it sits above the package and is added)."""
        if self.bundle is None or self.metadata is None:
            return {}
        placed = f"{package}/metadata.json"
        if placed in payload and payload[placed].read_bytes() != self.metadata:
            raise InvalidVariant(f"{placed} differs from the signed metadata.json beside it: cannot ship both")
        return {placed: self.metadata, f"{package}/{SIGSTORE_BUNDLE}": self.bundle}


def _read_bundle(variant_dir: Path, where: str, trusted_roots: Sequence[Path]) -> bytes | None:
    """The bundle's bytes; the same path rules as ``layout.collect_files`` (a symlink only into the variant or the
    Hub cache's blobs), plus a size limit."""
    path = variant_dir / SIGSTORE_BUNDLE
    if not path.is_symlink() and not path.exists():
        return None
    target = Path(os.path.realpath(path))
    allowed = [Path(os.path.realpath(r)) for r in (variant_dir, *trusted_roots)]
    if not any(target == r or r in target.parents for r in allowed):
        raise InvalidVariant(f"{where}: {SIGSTORE_BUNDLE} is a symlink pointing outside the variant ({target})")
    if not target.is_file():
        raise InvalidVariant(f"{where}: {SIGSTORE_BUNDLE} is not a regular file")
    if target.stat().st_size > MAX_BUNDLE_BYTES:
        raise SignatureInvalid(f"{where}/{SIGSTORE_BUNDLE}: {target.stat().st_size} bytes, more than a Sigstore "
                               f"bundle holds (at most {MAX_BUNDLE_BYTES})")
    return target.read_bytes()


def result_message(result: SignatureResult, where: str) -> str | None:
    """One line for a result that is not ``Success`` (None for success)."""
    if isinstance(result, SignatureVerdict.SignatureBundleMissing):
        return f"{where}: no {SIGSTORE_BUNDLE} (the variant is unsigned)"
    if isinstance(result, SignatureVerdict.MetadataMissing):
        return f"{where}/{SIGSTORE_BUNDLE}: signs metadata.json, but there is no metadata.json"
    if isinstance(result, SignatureVerdict.SignatureBundleInvalid):
        return f"{where}/{SIGSTORE_BUNDLE}: not a Sigstore bundle ({result.reason})"
    if isinstance(result, SignatureVerdict.SignatureVerificationFailure):
        return f"{where}/{SIGSTORE_BUNDLE}: signature over metadata.json does not verify: {result.reason}"
    return None


def check_variant(variant_dir: Path, files: Mapping[str, Path], where: str, options: SignatureOptions,
                  trusted_roots: Sequence[Path] = ()) -> SignedMetadata:
    """Verify ``build/<variant>``'s signature before anything reads metadata.json. A bad signature raises
    ``SignatureInvalid``; an unsigned variant warns (``options.warn``), or raises ``SignatureMissing`` when a
    signature is required."""
    bundle = _read_bundle(variant_dir, where, trusted_roots)
    meta_path = files.get("metadata.json")
    metadata = meta_path.read_bytes() if meta_path is not None else None
    if bundle is None:
        unsigned = f"{where}: no {SIGSTORE_BUNDLE}, the variant is unsigned"
        if options.require_signature:
            raise SignatureMissing(f"{unsigned} and --require-signature is set")
        if options.warn is not None:
            options.warn(f"{unsigned}: converted without signature verification")
        return SignedMetadata(metadata=metadata)
    result = verify_signature(metadata, bundle, load_verifier(options.trusted_root, options.warn),
                              options.signers())
    message = result_message(result, where)
    if message is not None:
        raise SignatureInvalid(message)
    if not _has_digest(metadata):  # kernels' verify_variant: DigestMissing, a failure
        raise SignatureInvalid(f"{where}/metadata.json: signed, but it has no digest, so the signature covers none "
                               "of the variant's files")
    return SignedMetadata(metadata=metadata, bundle=bundle)


def _has_digest(metadata: bytes | None) -> bool:
    """Whether verified metadata.json bytes hold a ``digest`` (unparseable JSON is left to ``read_metadata``)."""
    try:
        data = json.loads(metadata or b"")
    except (ValueError, RecursionError):
        return True
    return not isinstance(data, dict) or data.get("digest") is not None


def verify_package(package_dir: Path, where: str, options: SignatureOptions) -> str:
    """Re-verify a package folder a hub2wheel wheel installed (or unpacked): the bundle over metadata.json, then
    metadata.json's digest over the files. Returns a one-line summary; raises ``SignatureMissing``,
    ``SignatureInvalid`` or ``DigestMismatch``."""
    bundle = _read_bundle(package_dir, where, ())
    if bundle is None:
        raise SignatureMissing(f"{where}: no {SIGSTORE_BUNDLE}, so there is no signature to verify")
    files = collect_files(package_dir, where)
    meta_path = files.get("metadata.json")
    result = verify_signature(meta_path.read_bytes() if meta_path else None, bundle,
                              load_verifier(options.trusted_root, options.warn), options.signers())
    message = result_message(result, where)
    if message is not None:
        raise SignatureInvalid(message)
    checked = check_package_digest(package_dir, where)
    if checked is None:
        raise DigestMismatch(f"{where}/metadata.json: no digest, so the files cannot be checked")
    from sigstore.models import Bundle

    signer = signer_of(Bundle.from_json(bundle).signing_certificate) or "an accepted signer"
    return f"{where}: metadata.json signed by {signer}; {checked}"


def check_package_digest(package_dir: Path, where: str) -> str | None:
    """metadata.json's digest checked over an installed (or unpacked) package folder: None when the folder has no
    metadata.json or it has no digest, else a summary ("3 file(s) match its sha256 digest"); ``DigestMismatch`` names
    every file that deviates. The digest's paths are relative to the variant: the package folder (flat layout,
    ``__init__.py`` listed) or its parent (nested layout, only the package's own entries are shipped)."""
    files = collect_files(package_dir, where)
    if "metadata.json" not in files:
        return None
    digest = read_metadata(files, where).get("digest")
    if digest is None:
        return None
    if not isinstance(digest, dict) or not isinstance(digest.get("files"), dict):
        raise DigestMismatch(f"{where}/metadata.json: 'digest' must be {{algorithm, files: {{path: base64}}}}")
    listed: dict[str, object] = digest["files"]
    prefix = "" if "__init__.py" in listed else f"{package_dir.name}/"
    shipped = {"digest": {**digest, "files": {rel[len(prefix):]: h for rel, h in listed.items()
                                              if rel.startswith(prefix)}}}
    verify_digest(files, shipped, where)
    return f"{len(shipped['digest']['files'])} file(s) match its {digest.get('algorithm', 'sha256')} digest"
