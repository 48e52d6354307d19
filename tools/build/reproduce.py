"""Rebuild a wheel from the commit it records and say whether the bytes match (``python -m tools.cli.build_wheel
--reproduce WHEEL``).

The wheel's ``img2gray/_build_info.json`` names the commit (``source_commit``), the ABI, the backend and the CUDA
architectures it was built with; its filename names the platform tag. The commit's tracked files are exported
(``git archive``) into a fresh folder and built there by that commit's own ``tools.cli.build_wheel`` and build
backend, with ``SOURCE_DATE_EPOCH`` set to the commit's date, in the running environment, which should be the one the
commit's requirements/*.lock pin (a warning names every package that differs). Then the two files are compared
(``tools.build.compare_wheels``): equal sha256, or the list of what differs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from kernelwheel.io.errors import InvalidWheel
from kernelwheel.wheels.naming import WheelName
from tools.build.compare_wheels import differences, sha256
from tools.build.errors import BuildFailed
from tools.build.lock import LOCKS, environment_differences
from tools.build.source import COMMIT, SourceFacts, check_commit, commit_date, export_commit


@dataclass(frozen=True)
class Reproduction:
    commit: str
    sha256: str  # of the rebuilt wheel
    kept: Path | None  # the rebuilt wheel, when an output folder was given
    differences: list[str]  # empty: the same bytes

    @property
    def matches(self) -> bool:
        return not self.differences


@dataclass(frozen=True)
class RecordedBuild:
    """What a wheel says about how it was built, as much as a rebuild needs."""

    commit: str
    abi: str
    backend: str  # "cuda", "cpu": IMG2GRAY_BACKEND
    arch_list: tuple[str, ...]
    platform: str


def recorded_build(wheel: Path) -> RecordedBuild:
    name = WheelName.parse(wheel.name)
    if "." in name.platform_tag:
        raise InvalidWheel(f"{wheel.name}: several platform tags; tools.build.wheel writes one")
    try:
        with zipfile.ZipFile(wheel) as archive:
            infos = [n for n in archive.namelist() if n.endswith("/_build_info.json") and n.count("/") == 1]
            if len(infos) != 1:
                raise InvalidWheel(f"{wheel.name}: expected one <package>/_build_info.json, found {infos}")
            info = json.loads(archive.read(infos[0]))
    except FileNotFoundError:
        raise InvalidWheel(f"{wheel}: no such file") from None
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        raise InvalidWheel(f"{wheel}: not a readable img2gray wheel: {exc}") from None
    commit = info.get("source_commit") if isinstance(info, dict) else None
    if not isinstance(commit, str) or not COMMIT.fullmatch(commit):
        raise InvalidWheel(f"{wheel.name} records no source commit (built from a modified tree, outside a git "
                           "checkout, or before wheels recorded one): there is nothing to rebuild it from")
    backend = info.get("backend")
    if not isinstance(backend, dict) or backend.get("type") not in ("cuda", "cpu") or info.get("abi") not in (
            "stable", "classic"):
        raise InvalidWheel(f"{wheel.name}: _build_info.json has no known backend type and ABI")
    archs = info.get("cuda_arch_list") or []
    return RecordedBuild(commit, info["abi"], backend["type"], tuple(str(a) for a in archs), name.platform_tag)


def _locks_at(repo: Path, commit: str) -> list[tuple[str, str]]:
    locks = []
    for name in LOCKS:
        result = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:requirements/{name}"],
                                capture_output=True, text=True, check=False)
        if result.returncode == 0:
            locks.append((f"{commit[:12]}:requirements/{name}", result.stdout))
    return locks


def reproduce(wheel: Path, *, repo: Path, out_dir: Path | None = None) -> Reproduction:
    """Rebuild ``wheel`` from its commit in ``repo`` (into ``out_dir``, or a temporary folder) and compare."""
    recorded = recorded_build(wheel)
    check_commit(repo, recorded.commit)
    facts = SourceFacts(recorded.commit, commit_date(repo, recorded.commit))
    locks = _locks_at(repo, recorded.commit)
    unlocked = environment_differences(locks)
    if not locks:
        print(f"warning: commit {recorded.commit[:12]} has no requirements/*.lock: its build environment is not "
              "recorded", file=sys.stderr, flush=True)
    elif unlocked:
        print(f"warning: this environment is not the one commit {recorded.commit[:12]} locks "
              f"({'; '.join(unlocked)}): expect differences", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="img2gray-reproduce-") as scratch:
        source = Path(scratch) / f"img2gray-{recorded.commit[:12]}"
        export_commit(repo, recorded.commit, source)
        target = out_dir if out_dir is not None else Path(scratch) / "wheelhouse"
        env = dict(os.environ, IMG2GRAY_BACKEND=recorded.backend, TORCH_CUDA_ARCH_LIST=" ".join(recorded.arch_list),
                   PYTHONPATH=os.pathsep.join(filter(None, [str(source / "tools"), os.environ.get("PYTHONPATH")])),
                   **facts.environment())
        # The commit's own build command and backend (its kernelwheel first on the path), not this checkout's.
        command = [sys.executable, "-m", "tools.cli.build_wheel", "--abi", recorded.abi, "--plat", recorded.platform,
                   "--out", str(target)]
        print("* " + " ".join(command) + f"  (in {source})", file=sys.stderr, flush=True)
        result = subprocess.run(command, cwd=source, env=env, stdout=subprocess.PIPE, text=True, check=False)
        if result.returncode != 0:
            raise BuildFailed(f"the rebuild of {recorded.commit[:12]} failed (exit code {result.returncode})")
        lines = result.stdout.strip().splitlines()
        rebuilt = Path(lines[-1]) if lines else None
        if rebuilt is None or not rebuilt.is_file():
            raise BuildFailed(f"the rebuild of {recorded.commit[:12]} named no wheel it wrote: {result.stdout!r:.200}")
        return Reproduction(recorded.commit, sha256(rebuilt), rebuilt if out_dir is not None else None,
                            differences(wheel, rebuilt))
