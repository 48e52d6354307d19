"""kernelwheel.format.signatures on variants signed by a Sigstore instance of the test's own
(tests/helpers/sigstore_fixtures.py), each decision next to the newest supported kernels release's own verification
on the same folder and the same trusted root; and what ``convert`` does with the verdict (wheel with the bundle, or nothing written)."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console
from sigstore.models import TrustedRoot
from sigstore.verify import Verifier

from kernelwheel.format import signatures
from kernelwheel.format.signatures import SignatureOptions, check_variant, verify_signature, workflow_signers
from kernelwheel.format.signer_policy import DEFAULT_SIGNERS, WorkflowSigner
from kernelwheel.format.variant_folder import collect_files
from kernelwheel.hub.sources import local_source
from kernelwheel.io.errors import InvalidTrustSettings, InvalidVariant, SignatureInvalid
from kernelwheel.wheels.convert import Options, convert
from kernelwheel.wheels.wheel_reader import read_wheel
from tests.helpers import kernel_repos
from tests.helpers.kernels_releases import RELEASES
from tests.helpers.sigstore_fixtures import (
    KERNELS_COMMUNITY,
    KernelsVerdict,
    SigstoreInstance,
    WorkflowIdentity,
    kernels_verify_variant,
    tamper_ops_and_rewrite_digest,
)

# The sigstore and trusted_root fixtures: this module's own Sigstore instance and its trusted_root.json.
pytest_plugins = ["tests.helpers.sigstore_plugin"]
VARIANT = "torch213-cxx11-cpu-x86_64-linux"
WHERE = f"build/{VARIANT}"
PR_WORKFLOW = WorkflowIdentity(workflow=".github/workflows/pr.yaml", ref="refs/pull/7/merge")
FORK = WorkflowIdentity(repository="someone/kernels-community")
KERNELS_COMMUNITY_RS = WorkflowIdentity(repository="huggingface/kernels-community-rs")


@pytest.fixture
def repo(tmp_path: Path, so_cache: Path) -> Path:
    """A kernel folder with one flat variant written the way kernel-builder writes it (kernels' digest)."""
    kernel_repos.flat_variant(tmp_path / "img2gray" / "build", VARIANT, so_cache)
    return tmp_path / "img2gray"


def _variant(repo: Path) -> Path:
    return repo / "build" / VARIANT


def _convert(repo: Path, out: Path, options: SignatureOptions) -> tuple[list[str], list[tuple[str, str]], str]:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=False, highlight=False, soft_wrap=True)
    report = convert(local_source(repo), Options(out_dir=out, signatures=options), console)
    return [p.name for _, p in report.converted], report.skipped, buffer.getvalue()


def _ours(variant_dir: Path, trusted_root: Path,
          signers: tuple[WorkflowSigner, ...] | None = None) -> signatures.SignatureResult:
    bundle = variant_dir / "metadata.json.sigstore"
    metadata = variant_dir / "metadata.json"
    verifier = Verifier(trusted_root=TrustedRoot.from_file(str(trusted_root)))
    return verify_signature(metadata.read_bytes() if metadata.exists() else None,
                            bundle.read_bytes() if bundle.exists() else None, verifier,
                            signers if signers is not None else DEFAULT_SIGNERS)


def _verdicts(variant_dir: Path, trusted_root: Path, signers: tuple[WorkflowSigner, ...] | None = None,
              ) -> tuple[KernelsVerdict, signatures.SignatureResult]:
    """kernels' verdict and ours on the same folder, root and signers; always of the same kind."""
    theirs = kernels_verify_variant(variant_dir, trusted_root, signers)
    ours = _ours(variant_dir, trusted_root, signers)
    assert type(ours).__name__ == theirs.name, (theirs, ours)
    return theirs, ours


def _kinds(verdicts: tuple[KernelsVerdict, signatures.SignatureResult]) -> tuple[str, str]:
    return verdicts[0].name, type(verdicts[1]).__name__


def test_good_signature_converts_and_the_wheel_holds_the_bundle(repo: Path, tmp_path: Path, trusted_root: Path,
                                                               sigstore: SigstoreInstance) -> None:
    bundle = sigstore.sign_variant(_variant(repo))
    assert kernels_verify_variant(_variant(repo), trusted_root).name == "Success"
    warnings: list[str] = []
    written, skipped, _ = _convert(repo, tmp_path / "out", SignatureOptions(trusted_root=trusted_root,
                                                                             warn=warnings.append))
    assert skipped == [] and warnings == []
    assert written == ["img2gray_cpu-1+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl"]
    wheel = read_wheel(tmp_path / "out" / written[0])
    assert wheel.files["img2gray/metadata.json.sigstore"] == bundle.read_bytes()
    assert wheel.files["img2gray/metadata.json"] == (_variant(repo) / "metadata.json").read_bytes()


def test_tampered_ops_with_rewritten_digest_is_refused_as_kernels_refuses_it(
        repo: Path, tmp_path: Path, trusted_root: Path, sigstore: SigstoreInstance) -> None:
    sigstore.sign_variant(_variant(repo))
    tamper_ops_and_rewrite_digest(_variant(repo))
    theirs, ours = _verdicts(_variant(repo), trusted_root)
    assert theirs.name == "SignatureVerificationFailure"
    assert isinstance(ours, signatures.SignatureVerdict.SignatureVerificationFailure)
    assert ours.reason == theirs.reason  # the same reason too
    written, skipped, _ = _convert(repo, tmp_path / "out", SignatureOptions(trusted_root=trusted_root))
    assert written == []
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []  # nothing written
    assert skipped == [(VARIANT, f"{WHERE}/metadata.json.sigstore: signature over metadata.json does not verify: "
                                 "Bundle message digest mismatch")]


@pytest.mark.parametrize("identity", [PR_WORKFLOW, FORK], ids=["pr-workflow", "fork"])
def test_a_signer_outside_kernels_default_policy_is_refused(repo: Path, tmp_path: Path, trusted_root: Path,
                                                            sigstore: SigstoreInstance,
                                                            identity: WorkflowIdentity) -> None:
    sigstore.sign_variant(_variant(repo), identity)
    _, ours = _verdicts(_variant(repo), trusted_root)
    assert isinstance(ours, signatures.SignatureVerdict.SignatureVerificationFailure)
    assert f"signed by workflow {identity.build_signer_uri}, which is not an accepted signer" in ours.reason
    assert KERNELS_COMMUNITY.build_signer_uri in ours.reason  # says what would have been accepted
    written, skipped, _ = _convert(repo, tmp_path / "out", SignatureOptions(trusted_root=trusted_root))
    assert written == [] and skipped[0][0] == VARIANT and "not an accepted signer" in skipped[0][1]


def test_signer_workflow_replaces_the_default_list(repo: Path, tmp_path: Path, trusted_root: Path,
                                                   sigstore: SigstoreInstance) -> None:
    sigstore.sign_variant(_variant(repo), FORK)
    options = SignatureOptions(trusted_root=trusted_root, signer_workflows=(FORK.build_signer_uri,))
    signers = options.signers()
    assert [(s.repo_id, s.signer_uris) for s in signers] == [("someone/kernels-community", (FORK.build_signer_uri,))]
    assert _kinds(_verdicts(_variant(repo), trusted_root, signers)) == ("Success",) * 2
    written, skipped, _ = _convert(repo, tmp_path / "out", options)
    assert skipped == [] and len(written) == 1
    # ... and kernels-community's own workflow is then no longer accepted
    sigstore.sign_variant(_variant(repo))
    written, skipped, _ = _convert(repo, tmp_path / "out2", options)
    assert written == [] and "not an accepted signer (" + FORK.build_signer_uri + ")" in skipped[0][1]
    assert kernels_verify_variant(_variant(repo), trusted_root, signers).name == "SignatureVerificationFailure"


def test_a_signature_from_another_sigstore_is_refused(repo: Path, tmp_path: Path, trusted_root: Path) -> None:
    SigstoreInstance(name="elsewhere").sign_variant(_variant(repo))
    theirs, ours = _verdicts(_variant(repo), trusted_root)
    assert theirs.name == "SignatureVerificationFailure" and theirs.reason is not None
    assert isinstance(ours, signatures.SignatureVerdict.SignatureVerificationFailure)
    assert "failed to build timestamp certificate chain" in theirs.reason
    assert ours.reason == f"the signing certificate does not chain to the trusted root's CA ({theirs.reason})"


def test_a_bundle_that_is_not_a_bundle_is_refused(repo: Path, tmp_path: Path, trusted_root: Path) -> None:
    (_variant(repo) / "metadata.json.sigstore").write_text('{"mediaType": "application/json"}')
    theirs, _ = _verdicts(_variant(repo), trusted_root)
    assert theirs.name == "SignatureBundleInvalid"
    with pytest.raises(SignatureInvalid, match=f"^{WHERE}/metadata.json.sigstore: not a Sigstore bundle"):
        check_variant(_variant(repo), collect_files(_variant(repo), WHERE), WHERE,
                      SignatureOptions(trusted_root=trusted_root))


def test_unsigned_warns_and_converts_or_is_skipped_when_a_signature_is_required(repo: Path, tmp_path: Path,
                                                                               trusted_root: Path) -> None:
    assert _kinds(_verdicts(_variant(repo), trusted_root)) == ("SignatureBundleMissing",) * 2
    warnings: list[str] = []
    written, skipped, _ = _convert(repo, tmp_path / "out", SignatureOptions(warn=warnings.append))
    assert len(written) == 1 and skipped == []
    assert warnings == [f"{WHERE}: no metadata.json.sigstore, the variant is unsigned: converted without signature "
                        "verification"]
    assert not any(f.endswith(".sigstore") for f in read_wheel(tmp_path / "out" / written[0]).files)
    written, skipped, _ = _convert(repo, tmp_path / "strict", SignatureOptions(require_signature=True))
    assert written == [] and skipped == [
        (VARIANT, f"{WHERE}: no metadata.json.sigstore, the variant is unsigned and --require-signature is set")]


def test_signed_bundle_without_metadata_json(repo: Path, trusted_root: Path, sigstore: SigstoreInstance) -> None:
    sigstore.sign_variant(_variant(repo))
    (_variant(repo) / "metadata.json").unlink()
    assert _kinds(_verdicts(_variant(repo), trusted_root)) == ("MetadataMissing",) * 2


def test_signed_metadata_without_digest_is_refused_as_kernels_refuses_it(tmp_path: Path, so_cache: Path,
                                                                        trusted_root: Path,
                                                                        sigstore: SigstoreInstance) -> None:
    repo = tmp_path / "img2gray"
    variant_dir = kernel_repos.flat_variant(repo / "build", VARIANT, so_cache, with_digest=False)
    sigstore.sign_variant(variant_dir)
    assert kernels_verify_variant(variant_dir, trusted_root).name == "DigestMissing"
    assert _ours(variant_dir, trusted_root) == signatures.SignatureVerdict.Success()  # the signature itself is good
    written, skipped, _ = _convert(repo, tmp_path / "out", SignatureOptions(trusted_root=trusted_root))
    assert written == [] and skipped == [(VARIANT, f"{WHERE}/metadata.json: signed, but it has no digest, so the "
                                                   "signature covers none of the variant's files")]


def test_bundle_symlinks_follow_the_layout_rules(repo: Path, tmp_path: Path, trusted_root: Path,
                                                 sigstore: SigstoreInstance) -> None:
    blobs = tmp_path / "cache" / "blobs"
    blobs.mkdir(parents=True)
    bundle = sigstore.sign_variant(_variant(repo))
    os.replace(bundle, blobs / "0123abcd")
    bundle.symlink_to(blobs / "0123abcd")  # how the Hub cache lays a snapshot out
    files = collect_files(_variant(repo), WHERE, [blobs])
    options = SignatureOptions(trusted_root=trusted_root)
    assert check_variant(_variant(repo), files, WHERE, options, [blobs]).bundle == (blobs / "0123abcd").read_bytes()
    with pytest.raises(InvalidVariant, match=r"metadata.json.sigstore is a symlink pointing outside the variant"):
        check_variant(_variant(repo), files, WHERE, options)  # the same link, without the cache as a trusted root


def test_bad_trust_settings_fail_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(InvalidTrustSettings, match=r"--signer-workflow 'https://github.com/a/b': expected https://"):
        workflow_signers(["https://github.com/a/b"])
    (tmp_path / "root.json").write_text('{"mediaType": "nonsense"}')
    with pytest.raises(InvalidTrustSettings, match=r"^--sigstore-trusted-root .*root.json: not a usable Sigstore"):
        SignatureOptions(trusted_root=tmp_path / "root.json").validate()
    with pytest.raises(InvalidTrustSettings, match=r"missing.json: not a usable .*No such file"):
        SignatureOptions(trusted_root=tmp_path / "missing.json").validate()


def test_default_root_is_sigstores_production_root(repo: Path, trusted_root: Path, sigstore: SigstoreInstance,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --sigstore-trusted-root the root is Sigstore's (offline: the copy in sigstore-python's TUF cache), so
    the test CA's perfectly formed signature is refused: it does not chain to Fulcio."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(signatures, "_VERIFIERS", {})
    sigstore.sign_variant(_variant(repo))
    with pytest.raises(SignatureInvalid, match="failed to build timestamp certificate chain"):
        check_variant(_variant(repo), collect_files(_variant(repo), WHERE), WHERE, SignatureOptions())
    assert kernels_verify_variant(_variant(repo), trusted_root).name == "Success"  # ours is accepted


def test_nested_layout_ships_metadata_and_bundle_in_the_package(tmp_path: Path, so_cache: Path, trusted_root: Path,
                                                                sigstore: SigstoreInstance) -> None:
    repo = tmp_path / "img2gray"
    variant_dir = kernel_repos.nested_variant(repo / "build", VARIANT, so_cache, with_metadata=True).parent
    bundle = sigstore.sign_variant(variant_dir)
    assert kernels_verify_variant(variant_dir, trusted_root).name == "Success"
    written, skipped, _ = _convert(repo, tmp_path / "out", SignatureOptions(trusted_root=trusted_root))
    assert skipped == [] and len(written) == 1
    wheel = read_wheel(tmp_path / "out" / written[0])
    assert wheel.files["img2gray/metadata.json.sigstore"] == bundle.read_bytes()
    assert wheel.files["img2gray/metadata.json"] == (variant_dir / "metadata.json").read_bytes()


def test_require_signature_skips_only_the_unsigned_variant(tmp_path: Path, so_cache: Path, trusted_root: Path,
                                                           sigstore: SigstoreInstance) -> None:
    repo = tmp_path / "img2gray"
    signed = kernel_repos.flat_variant(repo / "build", VARIANT, so_cache)
    kernel_repos.flat_variant(repo / "build", "torch212-cxx11-cpu-x86_64-linux", so_cache)
    sigstore.sign_variant(signed)
    written, skipped, _ = _convert(repo, tmp_path / "out", SignatureOptions(trusted_root=trusted_root,
                                                                             require_signature=True))
    assert written == ["img2gray_cpu-1+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl"]
    assert [name for name, _ in skipped] == ["torch212-cxx11-cpu-x86_64-linux"]


@pytest.mark.parametrize(("make", "reason"), [
    (os.mkfifo, "not a regular file (a FIFO)"),  # open() of a FIFO waited for a writer: the command hung
    (lambda path: path.symlink_to("/dev/zero"), "not a regular file (a character device)"),
    (lambda path: path.write_bytes(b" " * ((4 << 20) + 1)), "over 4 MiB, more than a trusted root holds"),
])
def test_a_trusted_root_that_is_not_a_small_regular_file_is_refused_without_reading_it(
        tmp_path: Path, make: Callable[[Path], object], reason: str) -> None:
    make(tmp_path / "root.json")
    with pytest.raises(InvalidTrustSettings) as caught:
        SignatureOptions(trusted_root=tmp_path / "root.json").validate()
    assert str(caught.value) == (f"--sigstore-trusted-root {tmp_path / 'root.json'}: not a usable Sigstore "
                                 f"trusted_root.json ({reason})")


@pytest.mark.parametrize("release", RELEASES)
def test_kernels_community_rs_signatures_are_accepted_as_the_newest_kernels_accepts_them(
        release: str, repo: Path, tmp_path: Path, trusted_root: Path, sigstore: SigstoreInstance) -> None:
    sigstore.sign_variant(_variant(repo), KERNELS_COMMUNITY_RS)
    assert _ours(_variant(repo), trusted_root) == signatures.SignatureVerdict.Success()
    theirs = kernels_verify_variant(_variant(repo), trusted_root, release=release)
    # 0.17.2 trusts kernels-community only; 0.19.1 added kernels-community-rs, and this toolkit follows the newest.
    assert theirs.name == ("SignatureVerificationFailure" if release == "0.17.2" else "Success")
    written, skipped, _ = _convert(repo, tmp_path / "out", SignatureOptions(trusted_root=trusted_root))
    assert skipped == [] and len(written) == 1
