"""The Hub kernel format as one kernels release reads and writes it: its python-depends data, its signer policy,
its parse of a lock and of metadata.json's kernel-depends, its digest and signature verdicts on a folder, and its
own digests (for fixtures). Runs only in an oracle venv (tests/helpers/kernels_releases.py)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any
from unittest import mock

from tests.helpers.kernels_oracle.internals import internal, release


def _rust() -> Any:
    import kernels._rust

    return kernels._rust


def python_depends(payload: Any = None) -> Any:
    """The release's ``python_depends.json``, as JSON."""
    package = internal("python_deps").__package__
    return json.loads(resources.files(package).joinpath("python_depends.json").read_text(encoding="utf-8"))


def _signers(policy: Any) -> list[list[Any]]:
    """``GitHubWorkflowPolicy`` objects (inside AnyOf, recursively) as ``[repo_id, [signer uris]]``."""
    verify = internal("verify")
    if isinstance(policy, verify.GitHubWorkflowPolicy):
        return [[policy.repo_id, list(policy.signer_uris)]]
    children = getattr(policy, "_children", None)
    if children is None:
        raise TypeError(f"cannot read a signer from {type(policy).__name__}")
    return [signer for child in children for signer in _signers(child)]


def signer_policy(payload: Any = None) -> Any:
    """The release's default signers: 0.17's ``DEFAULT_POLICIES`` list, 0.19's ``DEFAULT_POLICY`` (an AnyOf)."""
    verify = internal("verify")
    if hasattr(verify, "DEFAULT_POLICY"):
        return _signers(verify.DEFAULT_POLICY)
    return [signer for policy in verify.DEFAULT_POLICIES for signer in _signers(policy)]


def parse_lock(text: str) -> Any:
    """``KernelLocks.from_json(text)``: ``[[repo_id, version, revision, commit]]`` (commit as a str)."""
    rust = _rust()
    out = []
    for dependency, lock in rust.KernelLocks.from_json(text).items():
        version = dependency.version
        if isinstance(version, rust.KernelVersion.Version):
            out.append([dependency.repo_id, int(version.version), None, str(lock.commit)])
        else:
            out.append([dependency.repo_id, None, str(version.revision), str(lock.commit)])
    return out


def kernel_depends(metadata_text: str) -> Any:
    """``Metadata.from_bytes``: the build's id, kernel-depends ``[[repo_id, version, revision]]`` and minver."""
    rust = _rust()
    metadata = rust.Metadata.from_bytes(metadata_text.encode())
    depends = []
    for dep in metadata.kernel_depends:
        if isinstance(dep.version, rust.KernelVersion.Version):
            depends.append([dep.repo_id, int(dep.version.version), None])
        else:
            depends.append([dep.repo_id, None, str(dep.version.revision)])
    minver = metadata.kernels_minver
    return {"id": metadata.id, "kernel_depends": depends, "kernels_minver": None if minver is None else str(minver)}


def write_digest(payload: dict[str, str]) -> Any:
    """The ``digest`` the release's ``Digest.hash_variant`` computes over ``payload["variant"]``."""
    rust = _rust()
    algorithm = getattr(rust.DigestAlgorithm, payload.get("algorithm", "sha256").upper())
    hashed = rust.Digest.hash_variant(algorithm, Path(payload["variant"]))
    return {"algorithm": str(hashed.algorithm), "files": dict(sorted(hashed.files.items()))}


def digest_verdict(payload: dict[str, str]) -> Any:
    """The release's digest check of a folder: ``{"verdict": Success | DigestMissing | DigestVerificationFailure,
    "violations": n}``."""
    rust = _rust()
    variant = Path(payload["variant"])
    metadata = rust.Metadata.read_from_file(variant / "metadata.json")
    if metadata.digest is None:
        return {"verdict": "DigestMissing", "violations": 0}
    current = rust.Digest.hash_variant(metadata.digest.algorithm, variant)
    try:
        metadata.digest.validate(current)
    except rust.DigestValidationError as exc:
        return {"verdict": "DigestVerificationFailure", "violations": len(exc.violations),
                "messages": sorted(str(v) for v in exc.violations)}
    return {"verdict": "Success", "violations": 0, "messages": []}


def verify_variant(payload: dict[str, Any]) -> Any:
    """The release's own signature verification of ``payload["variant"]`` (then its digest check), its
    ``Verifier.production()`` replaced by a Verifier for ``payload["trusted_root"]``, under its default policy or
    ``payload["signers"]`` (``[[repo_id, [uris]]]``) as its own ``GitHubWorkflowPolicy`` objects.
    ``{"verdict": <result class name>, "reason": str | None}``."""
    from sigstore.models import TrustedRoot
    from sigstore.verify import Verifier, policy

    verify = internal("verify")
    root = TrustedRoot.from_file(payload["trusted_root"])

    class _FixtureRootVerifier(Verifier):
        @classmethod
        def production(cls, *, offline: bool = False) -> Verifier:
            return Verifier(trusted_root=root)

    policies = None
    if payload.get("signers") is not None:
        policies = [verify.GitHubWorkflowPolicy(repo_id=repo, signer_uris=list(uris))
                    for repo, uris in payload["signers"]]
    variant = Path(payload["variant"])
    with mock.patch.object(verify, "Verifier", _FixtureRootVerifier):
        if hasattr(verify, "verify_variant"):  # 0.17
            result = verify.verify_variant(variant, policies)
        else:  # 0.19: the signature (no receipt cache), then the digest
            result = verify.verify_signature(variant, location=None,
                                             policy=None if policies is None else policy.AnyOf(policies), cache=False)
            if type(result).__name__ == "Success":
                metadata = _rust().Metadata.read_from_file(variant / "metadata.json")
                result = internal("digest").verify_digest(variant, metadata=metadata, location=None, cache=False)
    reason = getattr(result, "reason", None)
    violations = getattr(result, "violations", None)
    return {"verdict": type(result).__name__, "reason": reason,
            "violations": None if violations is None else len(violations)}


def cuda_archs(payload: dict[str, Any]) -> Any:
    """The release's CUDA arch rule: ``_cuda_arch_supports`` per (arch, capability) and ``_supports_cuda_capability``
    per (archs, capability)."""
    archs = internal("archs")
    return {
        "single": [archs._cuda_arch_supports(a, tuple(c)) for a, c in payload["single"]],
        "any": [archs._supports_cuda_capability(list(a), tuple(c)) for a, c in payload["any"]],
    }


def version(payload: Any = None) -> Any:
    return str(release())


def _each(function: Any, payloads: list[Any]) -> list[Any]:
    """``function`` on each payload; a refusal answers ``{"error": ...}`` in its place."""
    answers = []
    for payload in payloads:
        try:
            answers.append(function(payload))
        except Exception as exc:
            answers.append({"error": f"{type(exc).__name__}: {exc}"})
    return answers


def parse_locks(texts: list[str]) -> Any:
    return _each(parse_lock, texts)


def kernel_depends_each(texts: list[str]) -> Any:
    return _each(kernel_depends, texts)


def digest_verdicts(variants: list[str]) -> Any:
    return _each(digest_verdict, [{"variant": v} for v in variants])


def public_names(payload: Any = None) -> Any:
    """``kernels.__all__``: the names the release exports."""
    import kernels

    return sorted(kernels.__all__)


def python_depends_accepts(cases: list[list[str]]) -> Any:
    """For each ``[name, backend]``: whether ``validate_dependencies`` knows the name for the backend (it raises
    ValueError for an unknown name, ImportError for a known one that is not installed here)."""
    backends = internal("backends")
    validate = internal("python_deps").validate_dependencies
    kinds = {"cpu": "CPU", "metal": "Metal", "neuron": "Neuron", "cuda": "CUDA", "rocm": "ROCm", "xpu": "XPU"}
    answers = []
    for name, backend_name in cases:
        kind = getattr(backends, kinds[backend_name])
        backend = object.__new__(kind)  # CUDA/ROCm/XPU need a version; only .name is read
        try:
            validate("fixture", [name], backend)
        except ValueError as exc:
            if "unsupported kernel dependency" not in str(exc):
                raise
            answers.append(False)
            continue
        except ImportError:
            pass
        answers.append(True)
    return answers


def metadata_summary(payload: dict[str, str]) -> Any:
    """What the release's ``Metadata.read_from_file`` reads from ``payload["variant"]/metadata.json``."""
    metadata = _rust().Metadata.read_from_file(Path(payload["variant"]) / "metadata.json")
    digest = metadata.digest
    return {"name": str(metadata.name), "id": metadata.id, "version": metadata.version,
            "digest_algorithm": None if digest is None else str(digest.algorithm).lower(),
            "digest_files": None if digest is None else dict(digest.files)}


def write_lock(entries: list[list[Any]]) -> Any:
    """``KernelLocks(...).to_json()`` for ``[[repo_id, version, revision, commit]]``, written by the release."""
    rust = _rust()
    locks = {}
    for repo_id, version, revision, commit in entries:
        kernel_version = rust.KernelVersion.Version(version) if version is not None else rust.KernelVersion.Revision(
            revision)
        locks[rust.KernelDependency(repo_id, kernel_version)] = rust.KernelLock(commit)
    return rust.KernelLocks(locks).to_json()


def variant_strs(names: list[str]) -> Any:
    """Each legacy variant name → the release's ``parse_variant(name).variant_str``, or None where it refuses it."""
    variants = internal("variants")
    answers: list[str | None] = []
    for name in names:
        try:
            answers.append(variants.parse_variant(name).variant_str)
        except ValueError:
            answers.append(None)
    return answers
