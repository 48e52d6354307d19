"""Hostile input, the hub2wheel side: hostile build/ trees and arguments through the real ``python -m tools.hub2wheel``.

Every case the attack found (a traceback that aborted the run, a wrong acceptance, a stray temporary) is a variant
of one fixture tree here, next to one good variant: each bad one is skipped with its one-line reason, the good one
still converts, the exit code says some failed (3), no traceback is printed and nothing but the good wheel is left.
Arguments (--out, --dist-name, --kernel-version), full disks and file-size limits, and signals mid-write are the
other tests. The unit-level checks are in tests/kernelwheel/ (test_variants, test_layout, test_naming, test_elf,
test_python_depends, test_atomic).

A Hub that takes connections and never answers, or answers a byte at a time, is the last part: every route to a Hub
kernel (a tag, a branch, --version, a commit id, --lock, a kernel's kernel-depends) ends within the deadline, with one
warning naming the Hub and what the cache gave instead, or one error when the cache has nothing usable. A misspelt
repository is reported as missing, not as a publisher to trust."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from kernelwheel.io.atomic import stale_temporary_owner
from tests.helpers import kernel_repos
from tests.helpers.elf import CXX_NEEDS, as_aarch64, cxx_library, endless_version_needs, with_version_need
from tests.helpers.hub_fixtures import HubRepos
from tests.helpers.repo import REPO_ROOT
from tests.helpers.servers import DripServer, SilentServer, drip_server, silent_server
from tests.helpers.signals import communicate_after_signal, deliverable_stop_signals

GOOD = "torch213-cxx11-cpu-x86_64-linux"
GOOD_WHEEL = "img2gray_cpu-1+torch2.13-cp39-abi3-manylinux_2_17_x86_64.whl"
SO = "_img2gray_cpu_abc1234.abi3.so"


def _hub2wheel(args: list[str], env_home: Path, timeout: float = 120,
               preexec: Callable[[], None] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HOME": str(env_home), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([sys.executable, "-m", "tools.hub2wheel", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout, preexec_fn=preexec)


def _skips(stderr: str) -> dict[str, str]:
    """``{variant: reason}`` from the ``skipped <variant>: <reason>`` lines."""
    return dict(line.removeprefix("skipped ").split(": ", 1) for line in stderr.splitlines()
                if line.startswith("skipped "))


def _variant(build: Path, name: str, so_cache: Path, *, meta: Mapping[str, object] | None = None,
             raw_meta: bytes | None = None, files: Mapping[bytes, bytes] = {}) -> Path:
    """A good flat variant, then ``files`` added (raw byte names), metadata.json updated with ``meta`` (digest
    recomputed by kernels' own Digest.hash_variant where the names allow it) or replaced by ``raw_meta``."""
    staging = build.parent / "staging"
    made = kernel_repos.flat_variant(staging, "torch-cpu" if name == "torch-cpu" else GOOD, so_cache,
                                     with_digest=False)
    folder = made.rename(build / name)
    for raw_name, data in files.items():
        with open(os.fsencode(folder) + b"/" + raw_name, "wb") as fh:
            fh.write(data)
    document = json.loads((folder / "metadata.json").read_text())
    document.update(meta or {})
    if all(n.decode("utf-8", "replace").isprintable() and b"\xff" not in n for n in files):
        digest = kernel_repos.kernel_builder_digest(folder)
        if isinstance(document.get("digest"), dict):  # a case that damages the digest itself
            digest["files"].update(document["digest"]["files"])
        document["digest"] = digest
    (folder / "metadata.json").write_bytes(raw_meta if raw_meta is not None else json.dumps(document).encode())
    return folder


# variant → (how it is made, what its one-line reason says). Distinct torch minors give distinct wheels.
def _cases(so: bytes) -> dict[str, tuple[dict[str, object], str]]:
    deep_field = json.dumps({"name": "img2gray", "version": 1, "backend": {"type": "cpu", "archs": "@"}})
    return {
        # tracebacks before (each aborted the whole run)
        "torch２１３-cxx11-cpu-x86_64-linux": ({}, "holds '２' (U+FF12): variant names are ASCII"),
        os.fsdecode(b"torch213-cxx11-cpu-x86_64-\xfflinux"): ({}, "holds '\\udcff' (U+DCFF): variant names are ASCII"),
        "torch210-cxx11-cpu-x86_64-linux": ({"meta": {"name": "a" * 230}}, "shorten the kernel name"),
        "torch230-cxx11-cpu-x86_64-linux": ({"meta": {"name": "a" * 300}},
                                            "is 300 characters; a folder name holds at most 255"),
        "torch211-cxx11-cpu-x86_64-linux": ({"meta": {"version": "1." + ".".join(["0"] * 150)}},
                                            "shorten the kernel name (--dist-name) or the version"),
        "torch212-cxx11-cpu-x86_64-linux": ({"files": {b"bad\xff.txt": b"x"}},
                                            "file name 'bad\\udcff.txt' holds bytes that are not UTF-8"),
        "torch214-cxx11-cpu-x86_64-linux": ({"raw_meta": b"[" * 100_000 + b"]" * 100_000},
                                            "metadata.json: nested deeper than 32 levels"),
        "torch215-cxx11-cpu-x86_64-linux": ({"raw_meta": deep_field.replace('"@"', "[" * 5000 + "]" * 5000).encode()},
                                            "metadata.json: nested deeper than 32 levels"),
        "torch216-cxx11-cpu-x86_64-linux": ({"meta": {"python-depends": 123}}, "python-depends must be a list"),
        "torch217-cxx11-cpu-x86_64-linux": ({"meta": {"digest": {"files": {"_ops.py": 1}}}},
                                            "digest of _ops.py must be a base64 string, got 1"),
        "torch218-cxx11-cpu-x86_64-linux": ({"meta": {"digest": {"files": {"_ops.py": []}}}},
                                            "digest of _ops.py must be a base64 string, got []"),
        "torch219-cxx11-cpu-x86_64-linux": ({"meta": {"digest": {"files": {"_ops.py": None}}}},
                                            "digest of _ops.py must be a base64 string, got None"),
        "torch220-cxx11-cpu-x86_64-linux": ({"files": {SO.encode(): endless_version_needs(so)}},
                                            f"{SO}: unreadable ELF file: more symbol-version entries than"),
        "torch221-cxx11-cpu-x86_64-linux": ({"files": {b"helper.bin": b"\x7fELF" + bytes(range(256)) * 4}},
                                            "helper.bin: unreadable ELF file"),
        "torch222-cxx11-cpu-x86_64-linux": ({}, "Is a directory"),  # its wheel's path is a folder (EISDIR)
        # wrong acceptances before
        "torch223-cxx11-cpu-x86_64-linux": ({"meta": {"python-depends": "numpy"}}, "got 'numpy'"),
        "torch224-cxx11-cpu-x86_64-linux": ({"meta": {"python-depends": [None, 1]}}, "got [None, 1]"),
        "torch225-cxx11-cpu-x86_64-linux": ({"meta": {"python-depends": {"numpy": 1}}}, "got {'numpy': 1}"),
        "torch226-cxx11-cpu-x86_64-linux": ({"meta": {"python-depends": ["torch==2.1"]}},
                                            "'torch==2.1' pins torch; the framework requirement comes from"),
        "torch227-cxx11-cpu-x86_64-linux": ({"meta": {"license": {"text": "MIT"}}},
                                            "'license' must be a string, got dict {'text': 'MIT'}"),
        "torch-cpu": ({"files": {b"_ops.bin": so}}, "a noarch variant must not contain compiled files "
                                                    "(build/torch-cpu/_ops.bin)"),
        "torch228-cxx11-cpu-x86_64-linux": ({"files": {b"helper": as_aarch64(so)}}, "helper is built for aarch64, not "
                                                                                  "x86_64"),
        "torch229-cxx11-cpu-x86_64-linux": ({"files": {"a\u2028b.py".encode(): b"x = 1\n"}},
                                            "file name 'a\\u2028b.py' holds a line separator"),
    }


@pytest.fixture(scope="module")
def hostile_repo(tmp_path_factory: pytest.TempPathFactory, so_cache: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("hostile") / "img2gray"
    build = root / "build"
    kernel_repos.flat_variant(build, GOOD, so_cache)
    so = (build / GOOD / SO).read_bytes()
    expected: dict[str, str] = {}
    for name, (how, reason) in _cases(so).items():
        _variant(build, name, so_cache, **how)  # type: ignore[arg-type]
        expected[name if name.isprintable() and "\udcff" not in name else ascii(name)] = reason
    return root, expected


def test_every_hostile_variant_is_skipped_with_its_reason_and_the_good_one_converts(
        hostile_repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    repo, expected = hostile_repo
    out = tmp_path / "out"
    (out / "img2gray_cpu-1+torch2.22-cp39-abi3-manylinux_2_17_x86_64.whl").mkdir(parents=True)  # wheel path: a dir
    started = time.monotonic()
    run = _hub2wheel([str(repo), "--out", str(out), "--allow-unknown-deps", "--jobs", "2"], tmp_path / "hf")
    assert time.monotonic() - started < 60  # the endless .gnu.version_r no longer hangs
    assert run.returncode == 3, run.stderr  # some converted, some failed
    assert "Traceback" not in run.stderr
    assert run.stdout.split() == [str(out / GOOD_WHEEL)]
    skipped = _skips(run.stderr)
    assert set(skipped) == set(expected)
    for variant, reason in expected.items():
        assert reason in skipped[variant], (variant, skipped[variant])
    summary = f"1 wheel(s) written, {len(expected)} variant(s) skipped ({len(expected)} failed)"
    assert run.stderr.splitlines()[-1] == summary
    # nothing but the good wheel (and the folder in the way) is left: no temporary, no partial wheel
    assert sorted(os.listdir(out)) == sorted([GOOD_WHEEL, "img2gray_cpu-1+torch2.22-cp39-abi3-manylinux_2_17_x86_64.whl"])


def test_name_arguments_too_long_or_invalid(flat_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = _hub2wheel([str(flat_repo), "--out", str(out), "--dist-name", "k" * 300, "--variant", GOOD], tmp_path)
    assert run.returncode == 1 and "Traceback" not in run.stderr  # nothing converted
    assert f"skipped {GOOD}: wheel filename 'kkkk" in run.stderr and "shorten the kernel name" in run.stderr
    assert not out.exists()  # nothing written, not even the folder
    for args, message in [(["--dist-name", "fóo"], "kernel name 'fóo' is not a valid distribution name"),
                          (["--dist-name", "img2gray\n"], "is not a valid distribution name"),
                          (["--kernel-version", "1" * 5000], "--kernel-version '1111"),
                          (["--kernel-version", "1." + ".".join(["0"] * 150)], None)]:
        run = _hub2wheel([str(flat_repo), "--out", str(out), "--variant", GOOD, *args], tmp_path)
        assert "Traceback" not in run.stderr
        if message is None:  # a valid but long version: refused per variant, before writing
            assert run.returncode == 1 and "shorten the kernel name" in run.stderr
        else:
            assert run.returncode == 2 and message in run.stderr  # a usage error
        assert not out.exists()


@pytest.mark.parametrize("case", ["a file", "below a file", "unwritable", "name too long"])
def test_an_out_folder_that_cannot_take_wheels_is_one_line_and_exit_1(flat_repo: Path, tmp_path: Path,
                                                                       case: str) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("not a folder\n")
    out, message = {
        "a file": (a_file, "exists and is not a folder"),
        "below a file": (a_file / "wheels", f"{a_file} above it is a file, not a folder"),
        "unwritable": (Path("/proc/wheels"), "/proc cannot be written into"),  # refuses root too
        "name too long": (tmp_path / ("w" * 300), "is over 255 bytes"),
    }[case]
    run = _hub2wheel([str(flat_repo), "--out", str(out), "--variant", GOOD], tmp_path / "hf")
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.startswith("error: --out ") and message in run.stderr and "Traceback" not in run.stderr
    assert len(run.stderr.splitlines()) == 1
    assert a_file.read_text() == "not a folder\n"


@pytest.mark.parametrize("needs", [b"GLIBCXX_3.4.99", b"GLIBCXX_3.4.35"])
def test_a_symbol_version_beyond_every_manylinux_policy_refuses_the_variant(so_cache: Path, tmp_path: Path,
                                                                            needs: bytes) -> None:
    """A .so needing GLIBCXX_3.4.99 was tagged manylinux_2_17, lower than the same file unpatched (2_24)."""
    lib = cxx_library(tmp_path / "libhelper.so")
    for name, data in [("plain", lib), ("patched", with_version_need(lib, CXX_NEEDS, needs))]:
        (tmp_path / name / "build").mkdir(parents=True)
        _variant(tmp_path / name / "build", GOOD, so_cache, files={b"libhelper.so": data})
    plain = _hub2wheel([str(tmp_path / "plain"), "--out", str(tmp_path / "out-plain")], tmp_path / "hf")
    assert plain.returncode == 0 and plain.stdout.strip().endswith("-manylinux_2_24_x86_64.whl"), plain.stderr
    out = tmp_path / "out"
    run = _hub2wheel([str(tmp_path / "patched"), "--out", str(out)], tmp_path / "hf")
    assert run.returncode == 1 and "Traceback" not in run.stderr and run.stdout == "", run.stderr
    assert _skips(run.stderr)[GOOD] == (f"build/{GOOD}/libhelper.so: needs symbol version {needs.decode()}, which "
                                        "no manylinux policy in auditwheel allows; expected at most GLIBCXX_3.4.33 "
                                        "(a libstdc++/libgcc that a manylinux image ships)")
    assert not out.exists() or os.listdir(out) == []


@pytest.fixture(scope="module")
def big_repo(tmp_path_factory: pytest.TempPathFactory, so_cache: Path) -> Path:
    """The good variant, a second one holding a 48 MiB file (a wheel write that takes a while), and torch-cpu."""
    root = tmp_path_factory.mktemp("big") / "img2gray"
    build = root / "build"
    kernel_repos.flat_variant(build, GOOD, so_cache)
    kernel_repos.flat_variant(build, "torch-cpu", so_cache)
    big = kernel_repos.flat_variant(build, "torch212-cxx11-cpu-x86_64-linux", so_cache, with_digest=False)
    # base64 text: deflates (so the write is not a plain copy) but not to nothing
    (big / "weights.txt").write_bytes(base64.b64encode(os.urandom(36 * 1024 * 1024)))
    return root


def test_a_file_size_limit_skips_that_variant_and_keeps_the_others(big_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    limit = 4 * 1024 * 1024  # RLIMIT_FSIZE: every write past 4 MiB fails with EFBIG

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    run = _hub2wheel([str(big_repo), "--out", str(out)], tmp_path / "hf", preexec=limit_file_size)
    assert run.returncode == 3 and "Traceback" not in run.stderr, run.stderr
    reason = _skips(run.stderr)["torch212-cxx11-cpu-x86_64-linux"]
    assert "File too large" in reason and "\n" not in reason  # EFBIG
    assert sorted(os.listdir(out)) == sorted([GOOD_WHEEL, "img2gray-1-py3-none-any.whl"])  # no temporary left


@pytest.mark.parametrize("limit_kib", [1, 2, 3])  # the wheel is about 5 KiB
def test_a_failed_wheel_write_prints_its_one_line_error_and_nothing_at_exit(flat_repo: Path, tmp_path: Path,
                                                                           limit_kib: int) -> None:
    """A write that fails on the first bytes left the zip writer open: ZipFile.__del__ retried RECORD and the central
    directory at exit and printed "Exception ignored in: ... OSError: [Errno 27]" after the one-line error."""
    out = tmp_path / "out"
    limit = limit_kib * 1024

    def limit_file_size() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    run = _hub2wheel([str(flat_repo), "--out", str(out), "--variant", GOOD], tmp_path / "hf", preexec=limit_file_size)
    assert run.returncode == 1, run.stderr
    assert "Exception ignored" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert f"skipped {GOOD}: {GOOD_WHEEL}: cannot be written to {out}: File too large\n" in run.stderr
    summary = run.stderr.splitlines()[-1]
    assert summary.startswith("0 wheel(s) written,") and summary.endswith("(1 failed)")
    assert os.listdir(out) == []  # no partial wheel, no temporary


def test_a_full_disk_skips_that_variant_and_leaves_nothing_partial(big_repo: Path, tmp_path: Path) -> None:
    # A 1 MiB tmpfs as --out, mounted in a private user+mount namespace (no privilege needed, gone afterwards).
    if shutil.which("unshare") is None or subprocess.run(
            ["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True).returncode != 0:
        pytest.skip("unprivileged user namespaces are not available here (the EFBIG test covers the same path)")
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO_ROOT)}
    script = (f"mount -t tmpfs -o size=1m tmpfs {out} && {sys.executable} -m tools.hub2wheel {big_repo} --out {out}; "
              f"echo rc=$?; ls -A {out}")
    run = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script], cwd=REPO_ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert "Traceback" not in run.stderr, run.stderr
    lines = run.stdout.splitlines()
    rc = next(line for line in lines if line.startswith("rc="))
    assert rc == "rc=3", run.stderr
    reason = _skips(run.stderr)["torch212-cxx11-cpu-x86_64-linux"]
    assert "No space left on device" in reason and "\n" not in reason  # ENOSPC
    assert sorted(lines[lines.index(rc) + 1:]) == sorted([GOOD_WHEEL, "img2gray-1-py3-none-any.whl"])


def _signal_mid_write(big_repo: Path, out: Path, home: Path, signum: int) -> subprocess.Popen[str]:
    """Start a run and send it ``signum`` the moment its temporary wheel file exists in ``out`` (the 48 MiB member
    then takes about a second to deflate). Not SIGSTOP first: a SIGTERM pending across SIGSTOP/SIGCONT can reach
    Python's main thread only once its wait ends, which is not what a real ``kill`` does."""
    env = {**os.environ, "HF_HOME": str(home), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO_ROOT)}
    run = subprocess.Popen([sys.executable, "-m", "tools.hub2wheel", str(big_repo), "--out", str(out),
                            "--variant", "torch212-*"], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, preexec_fn=deliverable_stop_signals)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        names = os.listdir(out) if out.is_dir() else []
        if any(n.startswith(".img2gray") and stale_temporary_owner(n) == run.pid for n in names):
            run.send_signal(signum)
            return run
        time.sleep(0.001)
    run.kill()
    raise AssertionError(f"no temporary appeared in {out}: {run.communicate()}")


def test_sigkill_mid_write_leftovers_are_removed_by_the_next_run(big_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = _signal_mid_write(big_repo, out, tmp_path / "hf", signal.SIGKILL)
    run.communicate(timeout=30)
    left = sorted(os.listdir(out))
    assert left and all(stale_temporary_owner(n) == run.pid for n in left)  # .<wheel>.<pid>.*.part, .wheel.<pid>…
    (out / "unrelated.part").write_text("not ours")  # not of the tool's pattern: never touched
    rerun = _hub2wheel([str(big_repo), "--out", str(out), "--variant", GOOD], tmp_path / "hf")
    assert rerun.returncode == 0, rerun.stderr
    for name in left:
        assert f"removed {name} from {out}: a temporary left by process {run.pid}, which is gone" in rerun.stderr
    assert sorted(os.listdir(out)) == [GOOD_WHEEL, "unrelated.part"]


def test_sigterm_mid_write_removes_its_temporaries(big_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = _signal_mid_write(big_repo, out, tmp_path / "hf", signal.SIGTERM)
    _, stderr = communicate_after_signal(run, 60)
    assert run.returncode == 143 and "Traceback" not in stderr, stderr
    assert "error: terminated (SIGTERM)" in stderr
    assert os.listdir(out) == [], stderr  # no .part file, no staging folder, no partial wheel


def test_an_out_folder_whose_name_is_not_utf8_is_printed_as_the_file_system_spells_it(flat_repo: Path,
                                                                                       tmp_path: Path) -> None:
    out = os.fsencode(tmp_path) + b"/wheels\xff"
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO_ROOT),
           "PYTHONIOENCODING": "utf-8"}  # strict: print() of the path raised UnicodeEncodeError after the write
    run = subprocess.run([sys.executable, "-m", "tools.hub2wheel", str(flat_repo), "--out", out, "--variant", GOOD],
                         cwd=REPO_ROOT, env=env, capture_output=True, timeout=120)
    assert run.returncode == 0 and b"Traceback" not in run.stderr, run.stderr
    assert run.stdout == out + b"/" + GOOD_WHEEL.encode() + b"\n"
    assert os.listdir(out) == [GOOD_WHEEL.encode()]


@pytest.mark.parametrize(("lock", "message"), [
    (b"[" * 100_000 + b"]" * 100_000, "nested deeper than 32 levels"),
    (b'[{"repo_id": "org/x", "sha": "' + b"a" * 40 + b'", "variants": {"../../etc": {"hash": "sha256-' + b"0" * 64
     + b'"}}}]', "variant '../../etc' is not a plain folder name"),
    (b"\xff", "not UTF-8"),
    # refused before as "entry 0: missing repo_id, sha, variants"; kernels says "duplicate dependency"
    (b"[" + b",".join([b'{"dependency": {"repo-id": "org/x", "version": 1}, "lock": {"commit": "' + b"a" * 40
                       + b'"}}'] * 2) + b"]",
     "entry 1: duplicate dependency: org/x version 1, already locked by entry 0; expected each dependency locked once"),
])
def test_a_hostile_lock_file_is_one_line_and_exit_1(tmp_path: Path, lock: bytes, message: str) -> None:
    path = tmp_path / "kernels.lock"
    path.write_bytes(lock)
    run = _hub2wheel(["--lock", str(path), "--out", str(tmp_path / "out")], tmp_path / "hf")
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.startswith(f"error: {path}") and message in run.stderr and len(run.stderr.splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("make", "kind"), [(os.mkfifo, "a FIFO"),
                                            (lambda path: path.symlink_to("/dev/zero"), "a character device")])
def test_a_lock_path_that_is_not_a_regular_file_is_refused_without_waiting(
        tmp_path: Path, make: Callable[[Path], object], kind: str) -> None:
    """open() of a FIFO waits for a writer, and /dev/zero never ends: --lock FIFO hung until killed."""
    make(tmp_path / "kernels.lock")
    run = _hub2wheel(["--lock", str(tmp_path / "kernels.lock"), "--out", str(tmp_path / "out")], tmp_path / "hf",
                     timeout=60)
    assert run.returncode == 1, run.stderr
    assert run.stderr == f"error: {tmp_path / 'kernels.lock'}: cannot be read: not a regular file ({kind})\n"
    assert not (tmp_path / "out").exists()


# The deadline of every Hub answer in these runs: huggingface_hub's own HF_HUB_ETAG_TIMEOUT and HF_HUB_DOWNLOAD_TIMEOUT
# (whole seconds), which hub2wheel applies to each whole answer, however slowly it comes.
DEADLINE_S = "1"
ROUTES = ("tag", "branch", "version", "sha", "lock", "kernel-depends")


def _hub_run(args: list[str], home: Path, endpoint: str, out: Path,
             deadline_s: str | None = DEADLINE_S) -> subprocess.CompletedProcess[str]:
    """``python -m tools.hub2wheel --trust-remote-code ARGS`` against the Hub at ``endpoint``, online, with
    ``deadline_s`` for every answer (None: huggingface_hub's defaults)."""
    env = {**os.environ, "HF_HOME": str(home), "HF_ENDPOINT": endpoint, "PYTHONPATH": str(REPO_ROOT)}
    for name in ("HF_HUB_OFFLINE", "HF_HUB_CACHE", "HF_TOKEN", "HF_HUB_ETAG_TIMEOUT", "HF_HUB_DOWNLOAD_TIMEOUT"):
        env.pop(name, None)
    if deadline_s is not None:
        env.update(HF_HUB_ETAG_TIMEOUT=deadline_s, HF_HUB_DOWNLOAD_TIMEOUT=deadline_s)
    return subprocess.run([sys.executable, "-m", "tools.hub2wheel", "--trust-remote-code", *args, "--out", str(out)],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)


@dataclass(frozen=True)
class WarmHomes:
    """An HF_HOME per route, filled by one run of that route against olah; the arguments of each route."""

    homes: dict[str, Path]
    args: dict[str, list[str]]


@pytest.fixture(scope="module")
def warm_homes(hub_repos: HubRepos, tmp_path_factory: pytest.TempPathFactory) -> WarmHomes:
    base = tmp_path_factory.mktemp("warm-homes")
    sha = hub_repos.commits["v1.0.0"]
    lock = base / "kernels.lock"
    lock.write_text(json.dumps([{"dependency": {"repo-id": "testorg/img2gray", "version": 1}, "lock": {"commit": sha}}]))
    args = {"tag": ["testorg/img2gray", "--revision", "v1.0.0", "--variant", "torch-cpu"],
            "branch": ["testorg/img2gray", "--revision", "v2"],
            "version": ["testorg/img2gray", "--version", "1", "--variant", "torch-cpu"],
            "sha": ["testorg/img2gray", "--revision", sha, "--variant", "torch-cpu"],
            "lock": ["--lock", str(lock), "--variant", "torch-cpu"],
            "kernel-depends": ["testorg/relu-plus", "--version", "1"]}  # it needs testorg/relu version 1
    homes = {}
    for route in ROUTES:  # olah with the default deadlines: a loaded machine can keep one of its answers past 1 s
        homes[route] = base / route
        run = _hub_run(args[route], homes[route], hub_repos.endpoint, base / f"{route}-wheels", deadline_s=None)
        assert run.returncode == 0, run.stderr
    return WarmHomes(homes, args)


def _server(kind: str) -> contextlib.AbstractContextManager[SilentServer | DripServer]:
    """A Hub that never answers, one that sends its answers' headers a byte every 0.3 s (a read timeout of 1 s never
    fires), or complete headers and then a body a byte every 0.3 s (a HEAD's answer left such bytes on a kept-alive
    connection, and the next request on it waited for ever)."""
    if kind == "never answers":
        return silent_server()
    return drip_server(0.3, body=kind == "drips its body")


# (route, server, cache): every route against both servers, with the cache an earlier online run left and with none;
# the drip after complete headers for the two routes that ask a HEAD first, with the cache warm.
OUTAGES = [(route, server, cache) for route in ROUTES for server in ("never answers", "drips")
           for cache in ("warm", "cold")] + [(route, "drips its body", "warm") for route in ("tag", "branch")]


@pytest.mark.parametrize(("route", "server", "cache"), OUTAGES)
def test_a_hub_that_does_not_answer_ends_within_the_deadline_in_one_line(
        warm_homes: WarmHomes, tmp_path: Path, route: str, server: str, cache: str) -> None:
    """It printed nothing for 137 s (a tag, a branch; a Hub dripping its answers 143.7 s), then used the cache
    without a word; a HEAD's answer dripping a body held the next request for ever."""
    home = tmp_path / "hf"
    if cache == "warm":
        shutil.copytree(warm_homes.homes[route], home, symlinks=True)
    out = tmp_path / "out"
    with _server(server) as hub:
        start = time.monotonic()
        run = _hub_run(warm_homes.args[route], home, hub.endpoint, out)
        elapsed = time.monotonic() - start
        connections = len(hub.connections)
    lines = run.stderr.splitlines()
    warnings = [line for line in lines if line.startswith("warning:") and ".sigstore" not in line]  # unsigned builds
    errors = [line for line in lines if line.startswith("error:")]
    assert elapsed < 30, f"{elapsed:.1f} s: {run.stderr}"
    assert "Traceback" not in run.stderr and "Retrying" not in run.stderr, run.stderr
    if cache == "cold":  # nothing usable: one error, naming the Hub, and nothing written
        assert run.returncode == 1 and len(errors) == 1 and not warnings, run.stderr
        assert hub.endpoint in errors[0], errors[0]
        assert not out.exists() or not os.listdir(out)
    elif route in ("sha", "lock"):  # a commit id whose files and tags the cache recorded: nothing to ask
        assert run.returncode == 0 and not warnings and not errors, run.stderr
        assert connections == 0
    else:  # one warning: the Hub, and what the cache gave instead
        assert run.returncode == 0 and len(warnings) == 1 and not errors, run.stderr
        assert hub.endpoint in warnings[0] and "the cache" in warnings[0], warnings[0]
        assert "no complete answer within 1 s" in warnings[0], warnings[0]
    if run.returncode == 0:
        assert run.stdout.strip() and all(Path(p).parent == out for p in run.stdout.split())


def test_a_misspelt_repository_is_reported_missing_not_as_a_publisher_to_trust(
        hub_repos: HubRepos, tmp_path: Path) -> None:
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_ENDPOINT": hub_repos.endpoint,
           "PYTHONPATH": str(REPO_ROOT)}
    env.pop("HF_HUB_OFFLINE", None)
    for args in (["testorg/img2grey"], ["testorg/img2grey", "--version", "1"]):
        run = subprocess.run([sys.executable, "-m", "tools.hub2wheel", *args, "--out", str(tmp_path / "out")],
                             cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 1 and run.stdout == "", run.stderr
        assert run.stderr == (f"error: testorg/img2grey: no such kernel or model repository on {hub_repos.endpoint} "
                              "(or HF_TOKEN cannot see it)\n")
        assert not (tmp_path / "out").exists()
