"""``python -m tools.hub2wheel`` on signed variants and ``python -m tools.cli.verify_wheel`` on what it wrote: the
wheel file, and the distribution pip installed into a fresh venv, before and after its files are edited. The
signatures come from a Sigstore instance of the test's own (tests/helpers/sigstore_fixtures.py); nothing goes out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from kernelwheel.cli import hub2wheel, verify_wheel
from tests.helpers import fatbins, kernel_repos
from tests.helpers.hub_fixtures import HubRepos
from tests.helpers.repo import REPO_ROOT
from tests.helpers.sigstore_fixtures import (
    SigstoreInstance,
    WorkflowIdentity,
    kernels_verify_variant,
    tamper_ops_and_rewrite_digest,
)
from tests.helpers.venvs import fresh_venv

# The sigstore and trusted_root fixtures: this module's own Sigstore instance and its trusted_root.json.
pytest_plugins = ["tests.helpers.sigstore_plugin"]
VARIANT = "torch213-cxx11-cpu-x86_64-linux"
WHEEL = "sigkernel_cpu-1+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl"


@pytest.fixture(scope="module")
def signed_repo(tmp_path_factory: pytest.TempPathFactory, so_cache: Path, sigstore: SigstoreInstance) -> Path:
    repo = tmp_path_factory.mktemp("signed") / "sigkernel"
    sigstore.sign_variant(kernel_repos.flat_variant(repo / "build", VARIANT, so_cache, name="sigkernel"))
    return repo


@pytest.fixture(scope="module")
def wheelhouse(signed_repo: Path, trusted_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheelhouse")
    assert hub2wheel.main([str(signed_repo), "--out", str(out), "--sigstore-trusted-root", str(trusted_root),
                           "--require-signature"]) == 0
    return out


def _run(main: object, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(argv)  # type: ignore[operator]
    out, err = capsys.readouterr()
    return rc, out, err


def test_hub2wheel_converts_a_signed_variant_and_refuses_a_tampered_one(
        signed_repo: Path, trusted_root: Path, tmp_path: Path, so_cache: Path, sigstore: SigstoreInstance,
        capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(hub2wheel.main, [str(signed_repo), "--out", str(tmp_path / "ok"),
                                         "--sigstore-trusted-root", str(trusted_root)], capsys)
    assert rc == 0 and Path(out.strip()).name == WHEEL and "warning" not in err
    with zipfile.ZipFile(tmp_path / "ok" / WHEEL) as wheel:
        assert wheel.read("sigkernel/metadata.json.sigstore") == (
            signed_repo / "build" / VARIANT / "metadata.json.sigstore").read_bytes()

    tampered = tmp_path / "tampered" / "sigkernel"
    variant = kernel_repos.flat_variant(tampered / "build", VARIANT, so_cache, name="sigkernel")
    sigstore.sign_variant(variant)
    tamper_ops_and_rewrite_digest(variant, "print('patched')\n")
    rc, out, err = _run(hub2wheel.main, [str(tampered), "--out", str(tmp_path / "bad"),
                                         "--sigstore-trusted-root", str(trusted_root)], capsys)
    assert rc == 1 and out == ""
    assert (f"skipped {VARIANT}: build/{VARIANT}/metadata.json.sigstore: signature over metadata.json does not "
            "verify: Bundle message digest mismatch") in err
    assert not (tmp_path / "bad").exists() or not list((tmp_path / "bad").iterdir())


def test_hub2wheel_from_the_hub_cache(hub_repos: HubRepos, hf_env: Path, trusted_root: Path, so_cache: Path,
                                      sigstore: SigstoreInstance, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Through olah and huggingface_hub's cache, where the bundle is a symlink into the cache's blobs/."""
    repo = hub_repos.mirrors / "models" / "testorg" / "sigkernel"
    if not repo.exists():
        sigstore.sign_variant(kernel_repos.flat_variant(repo / "build", VARIANT, so_cache, name="sigkernel"))
        kernel_repos.git_commit_all(repo, "signed build")
    rc, out, err = _run(hub2wheel.main, ["testorg/sigkernel", "--trust-remote-code", "--require-signature",
                                         "--sigstore-trusted-root", str(trusted_root), "--out", str(tmp_path)], capsys)
    assert rc == 0, err
    wheel = Path(out.strip())
    assert wheel.name.startswith("sigkernel_cpu-1.") and wheel.parent == tmp_path  # version from the commit's date
    cached = next(hf_env.glob(f"models--testorg--sigkernel/snapshots/*/build/{VARIANT}/metadata.json.sigstore"))
    assert cached.is_symlink()
    rc, out, err = _run(verify_wheel.main, [str(wheel), "--sigstore-trusted-root", str(trusted_root)], capsys)
    assert rc == 0 and out.startswith(f"{wheel.name}:sigkernel: metadata.json signed by"), err


def test_hub2wheel_signature_options(signed_repo: Path, trusted_root: Path, tmp_path: Path, so_cache: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    fork = WorkflowIdentity(repository="my-org/kernels").build_signer_uri
    rc, _, err = _run(hub2wheel.main, [str(signed_repo), "--out", str(tmp_path), "--sigstore-trusted-root",
                                       str(trusted_root), "--signer-workflow", fork], capsys)
    assert rc == 1 and f"which is not an accepted signer ({fork})" in err
    rc, _, err = _run(hub2wheel.main, [str(signed_repo), "--out", str(tmp_path), "--signer-workflow", "build.yaml"],
                      capsys)
    assert rc == 1 and err.startswith("error: --signer-workflow 'build.yaml': expected https://github.com/")
    assert len(err.splitlines()) == 1

    unsigned = tmp_path / "unsigned" / "sigkernel"
    kernel_repos.flat_variant(unsigned / "build", VARIANT, so_cache, name="sigkernel")
    rc, out, err = _run(hub2wheel.main, [str(unsigned), "--out", str(tmp_path / "w")], capsys)
    assert rc == 0 and Path(out.strip()).name == WHEEL
    assert f"warning: build/{VARIANT}: no metadata.json.sigstore, the variant is unsigned" in err
    rc, out, err = _run(hub2wheel.main, [str(unsigned), "--out", str(tmp_path / "s"), "--require-signature"], capsys)
    assert rc == 1 and out == "" and "and --require-signature is set" in err

    # unsigned: its RECORD and metadata.json's digest are still checked, then the missing signature is an error
    rc, _, err = _run(verify_wheel.main, [str(tmp_path / "w" / WHEEL)], capsys)
    checked = "file(s) match their RECORD hashes; 3 file(s) match its sha256 digest"
    assert rc == 1 and err.startswith(f"error: {WHEEL}: no <package>/metadata.json.sigstore (built from an unsigned "
                                      "variant?); ") and checked in err
    assert err.endswith("; --allow-unsigned accepts it\n") and err.count("\n") == 1
    rc, out, err = _run(verify_wheel.main, [str(tmp_path / "w" / WHEEL), "--allow-unsigned"], capsys)
    assert (rc, err) == (0, "") and out.startswith(f"{WHEEL}: unsigned; ") and checked in out
    tampered = tmp_path / "tampered" / WHEEL
    tampered.parent.mkdir()
    with zipfile.ZipFile(tmp_path / "w" / WHEEL) as source, zipfile.ZipFile(tampered, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            target.writestr(info, data + b"# edited\n" if info.filename.endswith("_ops.py") else data)
    rc, out, err = _run(verify_wheel.main, [str(tampered), "--allow-unsigned"], capsys)
    assert rc == 1 and out == "" and "Hash mismatch for file 'sigkernel/_ops.py'" in err and err.count("\n") == 1


def test_verify_wheel_file(wheelhouse: Path, trusted_root: Path, tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(verify_wheel.main, [str(wheelhouse / WHEEL), "--sigstore-trusted-root", str(trusted_root)],
                        capsys)
    assert (rc, err) == (0, "")
    assert out == (f"{WHEEL}:sigkernel: metadata.json signed by https://github.com/huggingface/kernels-community/"
                   ".github/workflows/build.yaml@refs/heads/main; 3 file(s) match its sha256 digest\n")
    rc, out, err = _run(verify_wheel.main, [str(wheelhouse / WHEEL)], capsys)  # Sigstore's own root: not our CA
    assert rc == 1 and out == "" and "failed to build timestamp certificate chain" in err


def _venv_run(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PIP_CONFIG_FILE": "/dev/null", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([str(venv / "bin" / "python"), *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True)


def test_verify_installed_wheel_then_edited_files(wheelhouse: Path, trusted_root: Path, tmp_path: Path) -> None:
    """pip installs the wheel into a fresh venv (which sees this venv's sigstore and kernels for the command);
    verify_wheel passes, then fails on an edited module and on an edited metadata.json."""
    site = Path(sysconfig.get_paths()["purelib"])  # the venv running the tests: `make test`'s or `make test-toolkit`'s
    venv = fresh_venv(tmp_path / "venv", share_site_packages_of=site)
    pip = _venv_run(venv, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--find-links", str(wheelhouse),
                    "sigkernel-cpu")
    assert pip.returncode == 0, pip.stderr
    verify = ("-m", "tools.cli.verify_wheel", "sigkernel-cpu", "--sigstore-trusted-root", str(trusted_root))
    ok = _venv_run(venv, *verify)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("sigkernel-cpu 1+torch2.13 (sigkernel): metadata.json signed by https://github.com/")
    package = Path(_venv_run(venv, "-c", "import importlib.util as u; print(u.find_spec('sigkernel').origin)")
                   .stdout.strip()).parent
    assert package.is_relative_to(venv) and (package / "metadata.json.sigstore").is_file()
    # the installed folder is laid out like the variant, so kernels' own verify_variant agrees
    assert kernels_verify_variant(package, trusted_root).name == "Success"

    ops = package / "_ops.py"
    original = ops.read_bytes()
    ops.write_bytes(original + b"print('edited after install')\n")
    (package / "extra.py").write_text("import os\n")
    edited = _venv_run(venv, *verify)
    assert edited.returncode == 1 and edited.stdout == ""
    assert edited.stderr == ("error: sigkernel-cpu 1+torch2.13 (sigkernel): extra.py is not covered by metadata.json's "
                             "digest; _ops.py does not match its sha256 digest in metadata.json\n")
    theirs = kernels_verify_variant(package, trusted_root)
    assert theirs.name == "DigestVerificationFailure" and theirs.violations == 2
    ops.write_bytes(original)
    (package / "extra.py").unlink()

    meta = package / "metadata.json"
    meta.write_text(meta.read_text().replace('"license": "Apache-2.0"', '"license": "MIT"'))
    resigned = _venv_run(venv, *verify)
    assert resigned.returncode == 1
    assert "metadata.json.sigstore: signature over metadata.json does not verify" in resigned.stderr
    assert len(resigned.stderr.splitlines()) == 1
    assert kernels_verify_variant(package, trusted_root).name == "SignatureVerificationFailure"


def test_verify_installed_unsigned_wheel_checks_record_and_digest(tmp_path: Path, so_cache: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """An installed wheel from an unsigned variant: every installed file is hashed against RECORD and the package
    against metadata.json's digest; the missing signature fails it unless --allow-unsigned, an edited file always."""
    unsigned = tmp_path / "unsigned" / "sigkernel"
    kernel_repos.flat_variant(unsigned / "build", VARIANT, so_cache, name="sigkernel")
    rc, _, err = _run(hub2wheel.main, [str(unsigned), "--out", str(tmp_path / "w")], capsys)
    assert rc == 0, err
    site = Path(sysconfig.get_paths()["purelib"])
    venv = fresh_venv(tmp_path / "venv", share_site_packages_of=site)
    pip = _venv_run(venv, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--find-links",
                    str(tmp_path / "w"), "sigkernel-cpu")
    assert pip.returncode == 0, pip.stderr
    verify = ("-m", "tools.cli.verify_wheel", "sigkernel-cpu")
    refused = _venv_run(venv, *verify)
    assert refused.returncode == 1 and refused.stdout == "" and len(refused.stderr.splitlines()) == 1
    assert refused.stderr.startswith("error: sigkernel-cpu 1+torch2.13: no <package>/metadata.json.sigstore")
    assert "file(s) match their RECORD hashes; 3 file(s) match its sha256 digest" in refused.stderr
    accepted = _venv_run(venv, *verify, "--allow-unsigned")
    assert accepted.returncode == 0 and accepted.stdout.startswith("sigkernel-cpu 1+torch2.13: unsigned; ")

    package = Path(_venv_run(venv, "-c", "import importlib.util as u; print(u.find_spec('sigkernel').origin)")
                   .stdout.strip()).parent
    ops = package / "_ops.py"
    original = ops.read_bytes()
    ops.write_text("edited = True\n")
    edited = _venv_run(venv, *verify, "--allow-unsigned")  # metadata.json's digest speaks first
    assert edited.returncode == 1 and edited.stdout == ""
    assert edited.stderr == ("error: sigkernel-cpu 1+torch2.13 (sigkernel): _ops.py does not match its sha256 digest "
                             "in metadata.json\n")
    ops.write_bytes(original)
    (next(package.parent.glob("sigkernel_cpu-*.dist-info")) / "INSTALLER").write_text("not pip\n")  # RECORD only
    edited = _venv_run(venv, *verify, "--allow-unsigned")
    assert edited.returncode == 1 and edited.stdout == ""
    assert edited.stderr.startswith("error: sigkernel-cpu 1+torch2.13: sigkernel_cpu-")
    assert edited.stderr.endswith(".dist-info/INSTALLER does not match its RECORD hash\n")


def test_verify_wheel_nested_layout(tmp_path: Path, so_cache: Path, trusted_root: Path, sigstore: SigstoreInstance,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Nested layout: metadata.json sits above the package and its digest names ``<pkg>/...``; the wheel carries
    metadata.json and the bundle inside the package, and verify_wheel resolves the digest from the package's parent."""
    repo = tmp_path / "nestedkernel"
    variant_dir = kernel_repos.nested_variant(repo / "build", VARIANT, so_cache, package="nestedkernel",
                                              with_metadata=True).parent
    sigstore.sign_variant(variant_dir)
    rc, out, err = _run(hub2wheel.main, [str(repo), "--out", str(tmp_path / "w"), "--sigstore-trusted-root",
                                         str(trusted_root), "--require-signature"], capsys)
    assert rc == 0, err
    wheel = Path(out.strip())
    rc, out, err = _run(verify_wheel.main, [str(wheel), "--sigstore-trusted-root", str(trusted_root)], capsys)
    assert (rc, err) == (0, "") and out.endswith("@refs/heads/main; 3 file(s) match its sha256 digest\n")


def test_verify_wheel_refuses_what_it_cannot_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _run(verify_wheel.main, ["no-such-distribution-xyz"], capsys)
    assert rc == 1 and err == (f"error: 'no-such-distribution-xyz' is neither a .whl file nor a distribution "
                               f"installed in {sys.prefix}\n")
    rc, _, err = _run(verify_wheel.main, [""], capsys)  # was importlib's ValueError traceback
    assert rc == 1 and err == f"error: '' is neither a .whl file nor a distribution installed in {sys.prefix}\n"
    rc, _, err = _run(verify_wheel.main, [str(tmp_path / "missing.whl")], capsys)
    assert rc == 1 and err == f"error: {tmp_path / 'missing.whl'}: no such file\n"
    os.mkfifo(tmp_path / "fifo.whl")  # was "no such wheel file", though it is there
    rc, _, err = _run(verify_wheel.main, [str(tmp_path / "fifo.whl")], capsys)
    assert rc == 1 and err == f"error: {tmp_path / 'fifo.whl'}: not a regular file (a FIFO)\n"
    rc, _, err = _run(verify_wheel.main, ["packaging"], capsys)  # installed, but no bundle: its RECORD is checked
    assert rc == 1 and "no <package>/metadata.json.sigstore (built from an unsigned variant?); " in err
    assert "file(s) match their RECORD hashes; --allow-unsigned accepts it" in err
    junk = tmp_path / "junk-1.0-py3-none-any.whl"
    junk.write_bytes(b"not a zip")  # was a zipfile.BadZipFile traceback
    rc, _, err = _run(verify_wheel.main, [str(junk)], capsys)
    assert rc == 1 and err == f"error: {junk}: not a readable wheel (zip archive): zipfile.BadZipFile: File is not a zip file\n"


def test_json_prints_the_gpu_code_of_the_binaries(tmp_path: Path, so_cache: Path,
                                                   tmp_path_factory: pytest.TempPathFactory,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """``verify --json``: the verification lines and ``gpu_targets`` as hub2wheel recorded them in .dist-info."""
    objects = fatbins.built(tmp_path_factory)
    repo = fatbins.cuda_variant_repo(tmp_path, so_cache, objects["arch_specific"], ["9.0a", "10.0a+PTX", "12.0+PTX"])
    assert hub2wheel.main([str(repo), "--out", str(tmp_path / "out")]) == 0
    (wheel,) = (tmp_path / "out").glob("*.whl")
    capsys.readouterr()
    assert verify_wheel.main(["--json", "--allow-unsigned", str(wheel)]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["gpu_targets"] == {"cuda_sass": ["9.0a", "10.0a"], "cuda_ptx": ["10.0a", "12.0"], "rocm": []}
    assert answer["target"] == str(wheel) and answer["verified"][0].startswith(f"{wheel.name}: unsigned; ")
