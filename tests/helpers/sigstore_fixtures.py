"""A private Sigstore instance for offline signature tests: its own CA (Fulcio's role), CT log and Rekor log keys.

``SigstoreInstance.sign`` produces what kernel-builder's signing step writes next to ``metadata.json``: a
Sigstore bundle (v0.3, ``hashedrekord`` 0.0.1 over the file's bytes) holding a short-lived leaf certificate with
the GitHub-workflow identity extensions Fulcio adds (issuer, source repository, build signer URI, ...) and an
embedded SCT signed by the CT log key, plus a transparency-log entry signed by the Rekor key: inclusion promise
(SET), inclusion proof in a small Merkle tree (RFC 6962) and a signed checkpoint. ``write_trusted_root`` writes the
matching ``trusted_root.json`` that sigstore-python's ``TrustedRoot.from_file`` reads. Nothing touches the network.
``kernels_verify_variant`` runs a kernels release's own verification against that root (in the release's oracle
venv), for side-by-side verdicts.

The ``sigstore`` and ``trusted_root`` fixtures over these are in tests/helpers/sigstore_plugin.py.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rfc8785
from cryptography import x509
from cryptography.hazmat import asn1
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, ExtensionOID, NameOID

from kernelwheel.format.signer_policy import WorkflowSigner
from tests.helpers import kernel_repos
from tests.helpers.kernels_releases import SUPPORTED_KERNELS, ask

GITHUB_ISSUER = "https://token.actions.githubusercontent.com"
_FULCIO = "1.3.6.1.4.1.57264.1."  # Fulcio's certificate extension arc
_UTC = dt.timezone.utc


@dataclass(frozen=True)
class WorkflowIdentity:
    """The GitHub Actions run a signing certificate is issued to."""

    repository: str = "huggingface/kernels-community"
    workflow: str = ".github/workflows/build.yaml"
    ref: str = "refs/heads/main"
    issuer: str = GITHUB_ISSUER
    commit: str = "0123456789abcdef0123456789abcdef01234567"

    @property
    def build_signer_uri(self) -> str:
        return f"https://github.com/{self.repository}/{self.workflow}@{self.ref}"


KERNELS_COMMUNITY = WorkflowIdentity()


def _spki(key: ec.EllipticCurvePublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _key_id(key: ec.EllipticCurvePublicKey) -> bytes:
    """RFC 6962 log id: SHA-256 of the DER SubjectPublicKeyInfo."""
    return hashlib.sha256(_spki(key)).digest()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def _node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two smaller than ``n`` (RFC 6962 section 2.1)."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def _tree_hash(leaves: list[bytes]) -> bytes:
    if len(leaves) == 1:
        return leaves[0]
    k = _split(len(leaves))
    return _node_hash(_tree_hash(leaves[:k]), _tree_hash(leaves[k:]))


def _audit_path(index: int, leaves: list[bytes]) -> list[bytes]:
    """The inclusion proof of leaf ``index``, lowest level first (RFC 6962 section 2.1.1)."""
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if index < k:
        return [*_audit_path(index, leaves[:k]), _tree_hash(leaves[k:])]
    return [*_audit_path(index - k, leaves[k:]), _tree_hash(leaves[:k])]


def _u24(data: bytes) -> bytes:
    return struct.pack("!I", len(data))[1:] + data


def _tls_sct(log_key: ec.EllipticCurvePrivateKey, timestamp_ms: int, signed_entry: bytes) -> bytes:
    """One RFC 6962 SignedCertificateTimestamp (v1, precert entry) serialised for the certificate extension."""
    extensions = b""
    digitally_signed = struct.pack("!BBQH", 0, 0, timestamp_ms, 1) + signed_entry + struct.pack("!H", 0) + extensions
    signature = log_key.sign(digitally_signed, ec.ECDSA(hashes.SHA256()))
    return (struct.pack("!B", 0) + _key_id(log_key.public_key()) + struct.pack("!Q", timestamp_ms)
            + struct.pack("!H", len(extensions)) + extensions
            + struct.pack("!BBH", 4, 3, len(signature)) + signature)  # sha256, ecdsa


def _sct_extension(sct: bytes) -> x509.UnrecognizedExtension:
    listed = struct.pack("!H", len(sct)) + sct
    sct_list = struct.pack("!H", len(listed)) + listed
    return x509.UnrecognizedExtension(ExtensionOID.PRECERT_SIGNED_CERTIFICATE_TIMESTAMPS, asn1.encode_der(sct_list))


def _identity_extensions(identity: WorkflowIdentity) -> list[x509.UnrecognizedExtension]:
    """Fulcio's GitHub Actions extensions: 1.1-1.6 hold raw strings, 1.8 onwards DER UTF8Strings."""
    repo_url = f"https://github.com/{identity.repository}"
    raw = {"1": identity.issuer, "2": "push", "3": identity.commit, "4": "build", "5": identity.repository,
           "6": identity.ref}
    der = {"8": identity.issuer, "9": identity.build_signer_uri, "10": identity.commit,
           "11": "github-hosted", "12": repo_url, "13": identity.commit, "14": identity.ref,
           "16": f"https://github.com/{identity.repository.split('/')[0]}", "18": identity.build_signer_uri,
           "19": identity.commit, "20": "push", "21": f"{repo_url}/actions/runs/1/attempts/1", "22": "public"}
    return [
        *(x509.UnrecognizedExtension(x509.ObjectIdentifier(_FULCIO + k), v.encode()) for k, v in raw.items()),
        *(x509.UnrecognizedExtension(x509.ObjectIdentifier(_FULCIO + k), asn1.encode_der(v)) for k, v in der.items()),
    ]


class SigstoreInstance:
    """A CA, a CT log and a Rekor log of this test run's own, and the ``trusted_root.json`` naming them."""

    def __init__(self, *, name: str = "test") -> None:
        self.name = name
        self.ca_key = ec.generate_private_key(ec.SECP384R1())
        self.ct_key = ec.generate_private_key(ec.SECP256R1())
        self.rekor_key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, f"{name} sigstore"),
                             x509.NameAttribute(NameOID.COMMON_NAME, f"{name} fulcio root")])
        ca_public = self.ca_key.public_key()
        self.ca_cert = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(ca_public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(dt.datetime(2020, 1, 1, tzinfo=_UTC))
            .not_valid_after(dt.datetime(2040, 1, 1, tzinfo=_UTC))
            .add_extension(x509.BasicConstraints(ca=True, path_length=1), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_public), critical=False)
            .sign(self.ca_key, hashes.SHA384())
        )
        self._log_leaves = [_leaf_hash(f"{name} earlier entry {i}".encode()) for i in range(5)]

    # --- the trust root -------------------------------------------------------------------------------------
    def _log_instance(self, key: ec.EllipticCurvePrivateKey, url: str) -> dict[str, Any]:
        public = key.public_key()
        return {"baseUrl": url, "hashAlgorithm": "SHA2_256",
                "publicKey": {"rawBytes": _b64(_spki(public)), "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                              "validFor": {"start": "2020-01-01T00:00:00Z"}},
                "logId": {"keyId": _b64(_key_id(public))}}

    def trusted_root(self) -> dict[str, Any]:
        """sigstore's ``TrustedRoot`` (protobuf-specs JSON), as Sigstore's TUF repository distributes it."""
        return {
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [self._log_instance(self.rekor_key, f"https://rekor.{self.name}.invalid")],
            "certificateAuthorities": [{
                "subject": {"organization": f"{self.name} sigstore", "commonName": f"{self.name} fulcio root"},
                "uri": f"https://fulcio.{self.name}.invalid",
                "certChain": {"certificates": [{"rawBytes": _b64(self.ca_cert.public_bytes(
                    serialization.Encoding.DER))}]},
                "validFor": {"start": "2020-01-01T00:00:00Z"},
            }],
            "ctlogs": [self._log_instance(self.ct_key, f"https://ctfe.{self.name}.invalid")],
            "timestampAuthorities": [],
        }

    def write_trusted_root(self, path: Path) -> Path:
        path.write_text(json.dumps(self.trusted_root(), indent=2))
        return path

    # --- signing --------------------------------------------------------------------------------------------
    def _leaf_certificate(self, public: ec.EllipticCurvePublicKey, identity: WorkflowIdentity,
                          issued: dt.datetime) -> x509.Certificate:
        """A Fulcio-style 10-minute code-signing certificate with an embedded SCT over its precertificate."""
        serial = x509.random_serial_number()

        def build(sct: x509.UnrecognizedExtension) -> x509.Certificate:
            builder = (
                x509.CertificateBuilder().subject_name(x509.Name([])).issuer_name(self.ca_cert.subject)
                .public_key(public).serial_number(serial)
                .not_valid_before(issued).not_valid_after(issued + dt.timedelta(minutes=10))
                .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                             key_encipherment=False, data_encipherment=False, key_agreement=False,
                                             key_cert_sign=False, crl_sign=False, encipher_only=False,
                                             decipher_only=False), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.ca_key.public_key()),
                               critical=False)
                .add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier(
                    identity.build_signer_uri)]), critical=True)
            )
            for extension in _identity_extensions(identity):
                builder = builder.add_extension(extension, critical=False)
            return builder.add_extension(sct, critical=False).sign(self.ca_key, hashes.SHA384())

        timestamp_ms = int(issued.timestamp() * 1000)
        placeholder = build(_sct_extension(_tls_sct(self.ct_key, timestamp_ms, b"")))
        issuer_key_hash = _key_id(self.ca_key.public_key())
        signed_entry = issuer_key_hash + _u24(placeholder.tbs_precertificate_bytes)
        return build(_sct_extension(_tls_sct(self.ct_key, timestamp_ms, signed_entry)))

    def _log_entry(self, body: bytes, integrated_time: int) -> dict[str, Any]:
        """The Rekor v1 entry for ``body``: SET, inclusion proof and signed checkpoint in a tree of earlier entries."""
        leaves = [*self._log_leaves, _leaf_hash(body)]
        index, size = len(leaves) - 1, len(leaves)
        root = _tree_hash(leaves)
        log_id = _key_id(self.rekor_key.public_key())
        set_payload = rfc8785.dumps({"body": _b64(body), "integratedTime": integrated_time,
                                     "logID": log_id.hex(), "logIndex": index})
        origin = f"rekor.{self.name}.invalid - 1234567890"
        note = f"{origin}\n{size}\n{_b64(root)}\n"
        note_signature = self.rekor_key.sign(note.encode(), ec.ECDSA(hashes.SHA256()))
        checkpoint = f"{note}\n\u2014 rekor.{self.name}.invalid {_b64(log_id[:4] + note_signature)}\n"
        return {
            "logIndex": str(index),
            "logId": {"keyId": _b64(log_id)},
            "kindVersion": {"kind": "hashedrekord", "version": "0.0.1"},
            "integratedTime": str(integrated_time),
            "inclusionPromise": {"signedEntryTimestamp": _b64(
                self.rekor_key.sign(set_payload, ec.ECDSA(hashes.SHA256())))},
            "inclusionProof": {"logIndex": str(index), "rootHash": _b64(root), "treeSize": str(size),
                               "hashes": [_b64(h) for h in _audit_path(index, leaves)],
                               "checkpoint": {"envelope": checkpoint}},
            "canonicalizedBody": _b64(body),
        }

    def sign(self, data: bytes, identity: WorkflowIdentity = KERNELS_COMMUNITY) -> bytes:
        """The Sigstore bundle (JSON bytes) over ``data`` that a GitHub workflow with ``identity`` would get."""
        issued = dt.datetime.now(_UTC).replace(microsecond=0) - dt.timedelta(minutes=1)
        key = ec.generate_private_key(ec.SECP256R1())
        cert = self._leaf_certificate(key.public_key(), identity, issued)
        digest = hashlib.sha256(data).digest()
        signature = key.sign(data, ec.ECDSA(hashes.SHA256()))
        pem = cert.public_bytes(serialization.Encoding.PEM)
        body = json.dumps({"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": {
            "data": {"hash": {"algorithm": "sha256", "value": digest.hex()}},
            "signature": {"content": _b64(signature), "publicKey": {"content": _b64(pem)}}}},
            separators=(",", ":"), sort_keys=True).encode()
        bundle = {
            "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "verificationMaterial": {
                "certificate": {"rawBytes": _b64(cert.public_bytes(serialization.Encoding.DER))},
                "tlogEntries": [self._log_entry(body, int(issued.timestamp()) + 5)],
            },
            "messageSignature": {"messageDigest": {"algorithm": "SHA2_256", "digest": _b64(digest)},
                                 "signature": _b64(signature)},
        }
        return json.dumps(bundle, indent=2).encode()

    def sign_variant(self, variant_dir: Path, identity: WorkflowIdentity = KERNELS_COMMUNITY) -> Path:
        """Write ``metadata.json.sigstore`` over ``metadata.json``'s bytes, as kernel-builder's signing step does."""
        bundle = variant_dir / "metadata.json.sigstore"
        bundle.write_bytes(self.sign((variant_dir / "metadata.json").read_bytes(), identity))
        return bundle


@dataclass(frozen=True)
class KernelsVerdict:
    """A kernels release's verdict on a variant: its result class's name (``Success``,
    ``SignatureVerificationFailure``, ``DigestVerificationFailure``, ...), the reason and the violation count."""

    name: str
    reason: str | None = None
    violations: int | None = None


def kernels_verify_variant(variant_dir: Path, trusted_root: Path, signers: Sequence[WorkflowSigner] | None = None,
                           release: str = SUPPORTED_KERNELS[-1]) -> KernelsVerdict:
    """A kernels release's own verification of ``variant_dir`` (0.17's ``verify_variant``; 0.19's
    ``verify_signature`` then its digest check), with the one thing it cannot be told changed: its
    ``Verifier.production()`` gives a Verifier for ``trusted_root``. ``signers`` become the release's own
    ``GitHubWorkflowPolicy`` objects (None: its default policy)."""
    answer = ask(release, "format_data", "verify_variant", {
        "variant": str(variant_dir), "trusted_root": str(trusted_root),
        "signers": None if signers is None else [[s.repo_id, list(s.signer_uris)] for s in signers],
    })
    if "error" in answer:
        raise AssertionError(f"kernels {release} could not verify {variant_dir}: {answer['error']}")
    return KernelsVerdict(answer["verdict"], answer["reason"], answer["violations"])


def tamper_ops_and_rewrite_digest(variant_dir: Path, code: str = "import os; os.system('echo owned')\n") -> None:
    """What an attacker who can write the repository but not sign does: put ``code`` in front of ``_ops.py`` and
    fix metadata.json's digest to match (its signature then no longer verifies)."""
    ops = variant_dir / "_ops.py"
    ops.write_text(code + ops.read_text())
    meta = json.loads((variant_dir / "metadata.json").read_text())
    meta["digest"] = kernel_repos.kernel_builder_digest(variant_dir)
    (variant_dir / "metadata.json").write_text(json.dumps(meta, indent=2))
