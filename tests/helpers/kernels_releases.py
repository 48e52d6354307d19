"""The ``kernels`` releases the toolkit is checked against, each in a venv of its own that the suite makes.

Two kinds of venv per release, created on first use and reused across runs (git-ignored, like the other helper
venvs):

* the **oracle** (``.venv-kernels-<release>``): that release alone (and sigstore, its verifier). Tests ask it what
  the release itself decides on a fixture, through ``ask``, which runs a function of
  ``tests/helpers/kernels_oracle/`` in that venv. Only the oracle reaches into a release's internals; the toolkit
  never does.
* the **toolkit venv** (``.venv-toolkit-kernels-<release>``): the release installed over the suite's own
  environment (a ``.pth`` file shares the rest), so the toolkit's commands run with that ``kernels`` installed, as
  a user's would.

``LATEST_KERNELS`` set in the environment (the upstream canary workflow does) adds that release to the list.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

from tests.helpers.repo import REPO_ROOT
from tests.helpers.venvs import fresh_venv, helper_venv

SUPPORTED_KERNELS: tuple[str, ...] = ("0.17.2", "0.19.1")
RELEASES: tuple[str, ...] = tuple(
    dict.fromkeys([*SUPPORTED_KERNELS, *filter(None, [os.environ.get("LATEST_KERNELS", "").strip()])])
)


def oracle_python(release: str) -> Path:
    """The interpreter of the venv that holds ``kernels==release`` and nothing of the project."""
    return helper_venv(f".venv-kernels-{release}", f"kernels=={release}", "sigstore>=4,<5") / "bin" / "python"


def ask(release: str, module: str, function: str, payload: Any = None) -> Any:
    """``tests.helpers.kernels_oracle.<module>.<function>(payload)`` run under ``kernels==release``; its JSON answer.

    A function that raises answers ``{"error": "<type>: <message>"}``, so a refusal is a decision too."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(REPO_ROOT)
    result = subprocess.run(
        [str(oracle_python(release)), "-m", "tests.helpers.kernels_oracle", module, function],
        input=json.dumps(payload), capture_output=True, text=True, env=env, cwd=REPO_ROOT, check=False,
    )
    if result.returncode != 0:
        raise AssertionError(f"kernels {release} oracle {module}.{function} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout)


def toolkit_python(release: str) -> Path:
    """An interpreter that sees this environment's packages, with ``kernels==release`` installed over them: one venv
    per release and per environment that runs the tests (`make test`'s and `make test-toolkit`'s), made once."""
    from filelock import FileLock  # pytest's workers (-n 2) wait for the one that makes it

    shared = sysconfig.get_paths()["purelib"]
    venv = REPO_ROOT / f".venv-toolkit-kernels-{release}-{hashlib.sha256(shared.encode()).hexdigest()[:8]}"
    with FileLock(f"{venv}.lock"):
        return _toolkit_python(venv, release, shared)


def _toolkit_python(venv: Path, release: str, shared: str) -> Path:
    marker = venv / ".kernels-release"
    # and the shared environment's editable installs (kernelwheel), which fresh_venv starts in the venv
    editables = " ".join(sorted(p.name for p in Path(shared).glob("__editable__*.pth")))
    wanted = f"{release}\n{shared}\n{editables}"
    if not (marker.exists() and marker.read_text() == wanted and installed_kernels(venv / "bin" / "python") == release):
        import shutil

        shutil.rmtree(venv, ignore_errors=True)
        fresh_venv(venv, share_site_packages_of=Path(shared))
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        # --ignore-installed: the shared environment's own kernels would otherwise satisfy the requirement, and
        # the venv would see whichever release that environment holds.
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed",
                        f"kernels=={release}"], check=True, env=env)
        marker.write_text(wanted)
    return venv / "bin" / "python"


def installed_kernels(python: Path) -> str:
    """The ``kernels`` version ``python`` imports (a check that a toolkit venv really holds its release)."""
    out = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('kernels'))"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


__all__ = ["RELEASES", "SUPPORTED_KERNELS", "ask", "installed_kernels", "oracle_python", "toolkit_python"]
