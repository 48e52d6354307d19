"""The format data and decisions tools/kernelwheel/format/ owns, compared with each supported kernels release's own
(asked in that release's oracle venv, tests/helpers/kernels_releases.py): the python-depends mapping, the signer
policy, lock parsing, kernel-depends parsing and digest verdicts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kernelwheel.format import kernel_depends, python_depends
from kernelwheel.format.digests import digest_violations
from kernelwheel.format.kernel_depends import parse_kernel_info
from kernelwheel.format.lockfile import parse_lockfile
from kernelwheel.format.signer_policy import DEFAULT_SIGNERS
from kernelwheel.format.variant_folder import collect_files, read_metadata
from kernelwheel.io.errors import InvalidLockfile, InvalidVariant
from tests.helpers import kernel_repos
from tests.helpers.kernels_releases import RELEASES, SUPPORTED_KERNELS, ask

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_tested_releases_are_the_supported_ones() -> None:
    assert kernel_depends.KERNELS_TESTED_RELEASES == SUPPORTED_KERNELS
    assert all(release in kernel_depends.KERNELS_TESTED for release in SUPPORTED_KERNELS)


@pytest.mark.parametrize("release", RELEASES)
def test_python_depends_data_is_the_releases(release: str) -> None:
    ours = json.loads(Path(python_depends.__file__).with_name(python_depends.DATA_FILE).read_text())
    assert ask(release, "format_data", "python_depends") == ours
    data = python_depends.dependency_data()
    assert data == python_depends.parse_dependency_data(ours)
    assert [p.pkg for p in data.general["tvm-ffi"].python] == ["apache-tvm-ffi"]


def test_a_bad_python_depends_file_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"general\.einops\.python\[0\]"):
        python_depends.parse_dependency_data({"general": {"einops": {"python": [{"import": "einops"}]}}})


def _as_data(signers: Any) -> set[tuple[str, str]]:
    return {(repo, uri) for repo, uris in signers for uri in uris}


@pytest.mark.parametrize("release", RELEASES)
def test_our_signers_accept_every_signer_the_release_accepts(release: str) -> None:
    ours = _as_data([(s.repo_id, s.signer_uris) for s in DEFAULT_SIGNERS])
    theirs = _as_data(ask(release, "format_data", "signer_policy"))
    assert theirs <= ours
    if release == SUPPORTED_KERNELS[-1]:
        assert theirs == ours  # the newest release's policy, no wider


LOCKS: dict[str, Any] = {
    "version": [{"dependency": {"repo-id": "org/a", "version": 1}, "lock": {"commit": COMMIT}}],
    "revision": [{"dependency": {"repo-id": "org/a", "revision": "main"}, "lock": {"commit": COMMIT}}],
    "upper-case commit": [{"dependency": {"repo-id": "org/a", "version": 1}, "lock": {"commit": COMMIT.upper()}}],
    "sha-256 commit": [{"dependency": {"repo-id": "org/a", "version": 1}, "lock": {"commit": "ab" * 32}}],
    "two versions": [{"dependency": {"repo-id": "org/a", "version": 1}, "lock": {"commit": COMMIT}},
                     {"dependency": {"repo-id": "org/a", "version": 2}, "lock": {"commit": COMMIT}}],
    "short commit": [{"dependency": {"repo-id": "org/a", "version": 1}, "lock": {"commit": COMMIT[:39]}}],
    "non-hex commit": [{"dependency": {"repo-id": "org/a", "version": 1}, "lock": {"commit": "g" * 40}}],
    "both": [{"dependency": {"repo-id": "org/a", "version": 1, "revision": "x"}, "lock": {"commit": COMMIT}}],
    "neither": [{"dependency": {"repo-id": "org/a"}, "lock": {"commit": COMMIT}}],
    "negative": [{"dependency": {"repo-id": "org/a", "version": -1}, "lock": {"commit": COMMIT}}],
    "string version": [{"dependency": {"repo-id": "org/a", "version": "1"}, "lock": {"commit": COMMIT}}],
    "bool version": [{"dependency": {"repo-id": "org/a", "version": True}, "lock": {"commit": COMMIT}}],
    "snake case": [{"dependency": {"repo_id": "org/a", "version": 1}, "lock": {"commit": COMMIT}}],
    "unknown key": [{"dependency": {"repo-id": "org/a", "version": 1}, "lock": {"commit": COMMIT}, "z": 1}],
    "unknown lock key": [{"dependency": {"repo-id": "org/a", "version": 1}, "lock": {"commit": COMMIT, "y": 1}}],
    "no lock": [{"dependency": {"repo-id": "org/a", "version": 1}}],
    "twice": [{"dependency": {"repo-id": "org/a", "version": 1}, "lock": {"commit": COMMIT}}] * 2,
    "integer repo": [{"dependency": {"repo-id": 5, "version": 1}, "lock": {"commit": COMMIT}}],
}


def _our_lock(text: str) -> Any:
    try:
        locks = parse_lockfile(text)
    except InvalidLockfile as exc:
        assert "\n" not in str(exc) and str(exc).startswith("kernels.lock: entry ")
        return "refused"
    assert all(type(lock.sha) is str for lock in locks)  # a plain str, never kernels' Oid
    return [[lock.repo_id, lock.sha] for lock in locks]


@pytest.mark.parametrize("release", RELEASES)
def test_lock_verdicts_match_the_release(release: str) -> None:
    texts = [json.dumps(value) for value in LOCKS.values()]
    theirs = ask(release, "format_data", "parse_locks", texts)
    for name, text, answer in zip(LOCKS, texts, theirs):
        expected = "refused" if "error" in answer else [[repo, commit] for repo, _, _, commit in answer]
        assert _our_lock(text) == expected, (name, answer)


BASE_METADATA = {"name": "relu-plus", "id": "_relu_plus_abc1234", "version": 1, "license": "MIT",
                 "python-depends": [], "backend": {"type": "cpu"}}
DEPENDS: dict[str, dict[str, Any]] = {
    "none": {},
    "version and revision": {"kernel-depends": [{"repo-id": "org/relu", "version": 1},
                                                {"repo-id": "org/x", "revision": "abc"}]},
    "minver": {"kernels-minver": "0.17.0", "kernel-depends": [{"repo-id": "org/relu", "version": 2}]},
    "null": {"kernel-depends": None},
    "snake case": {"kernel-depends": [{"repo_id": "org/relu", "version": 1}]},
    "both": {"kernel-depends": [{"repo-id": "org/relu", "version": 1, "revision": "a"}]},
    "neither": {"kernel-depends": [{"repo-id": "org/relu"}]},
    "unknown key": {"kernel-depends": [{"repo-id": "org/relu", "version": 1, "x": 1}]},
    "negative": {"kernel-depends": [{"repo-id": "org/relu", "version": -1}]},
    "an object": {"kernel-depends": {"repo-id": "org/relu", "version": 1}},
    "two-part minver": {"kernels-minver": "0.99"},
    "pre-release minver": {"kernels-minver": "0.17.0rc1"},
    "integer minver": {"kernels-minver": 17},
    "integer id": {"id": 5},
}


def _our_depends(raw: bytes) -> Any:
    try:
        info = parse_kernel_info(raw, "build/torch-cpu")
    except InvalidVariant as exc:
        assert "\n" not in str(exc) and str(exc).startswith("build/torch-cpu/metadata.json: ")
        return "refused"
    return {"id": info.build_id, "kernel_depends": [[d.repo_id, d.version, d.revision] for d in info.dependencies],
            "kernels_minver": info.kernels_minver}


@pytest.mark.parametrize("release", RELEASES)
def test_kernel_depends_verdicts_match_the_release(release: str) -> None:
    texts = [json.dumps({**BASE_METADATA, **change}) for change in DEPENDS.values()]
    theirs = ask(release, "format_data", "kernel_depends_each", texts)
    for name, text, answer in zip(DEPENDS, texts, theirs):
        assert _our_depends(text.encode()) == ("refused" if "error" in answer else answer), (name, answer)


def _digest_cases(root: Path) -> dict[str, Path]:
    good = kernel_repos.python_kernel_variant(root / "good", "torch-cpu", name="relu", init=kernel_repos.RELU_INIT,
                                              modules={"layers.py": "X = 1\n"})
    cases = {"good": good}

    def copy(name: str) -> Path:
        cases[name] = shutil.copytree(good, root / name)
        return cases[name]

    (copy("changed") / "layers.py").write_text("X = 2\n")
    (copy("extra file") / "extra.py").write_text("\n")
    (copy("missing file") / "layers.py").unlink()
    (copy("bytecode") / "__pycache__").mkdir()
    (cases["bytecode"] / "__pycache__" / "layers.cpython-311.pyc").write_bytes(b"\0")
    (cases["bytecode"] / "stray.pyc").write_bytes(b"\0")
    (copy("signature beside") / "metadata.json.sigstore").write_text("{}")
    unsigned = copy("no digest")
    meta = json.loads((unsigned / "metadata.json").read_text())
    del meta["digest"]
    (unsigned / "metadata.json").write_text(json.dumps(meta))
    return cases


def _our_digest(variant: Path) -> str:
    files = collect_files(variant, variant.name)
    violations = digest_violations(files, read_metadata(files, variant.name), variant.name)
    if violations is None:
        return "DigestMissing"
    return "DigestVerificationFailure" if violations else "Success"


@pytest.mark.parametrize("release", RELEASES)
def test_digest_verdicts_match_the_release(release: str, tmp_path: Path) -> None:
    cases = _digest_cases(tmp_path)
    theirs = ask(release, "format_data", "digest_verdicts", [str(p) for p in cases.values()])
    assert {name: _our_digest(path) for name, path in cases.items()} == {
        name: answer.get("verdict", answer.get("error")) for name, answer in zip(cases, theirs)}
    assert theirs[0]["verdict"] == "Success" and theirs[1]["verdict"] == "DigestVerificationFailure"
