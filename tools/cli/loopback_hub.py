"""``python -m tools.cli.loopback_hub start|stop``: a Hub on 127.0.0.1 to try the whole workflow against (``make hub``,
``make hub-stop``).

It is olah (the Hub mirror the tests use, from PyPI) in offline mode, serving the git repositories under
``<dir>/mirrors/models/<org>/<name>``: ``tools.cli.publish --git-remote`` writes them, and huggingface_hub (so
``tools.hub2wheel`` and ``kernels``) reads them through ``HF_ENDPOINT``. olah cannot take uploads, which is why
publishing goes through git. ``start`` creates each ``--repo`` as an empty bare repository, runs olah in a session of
its own (it outlives this command) and prints ``export HF_ENDPOINT=...`` on stdout, so ``eval "$(make -s hub)"``
sets it; ``stop`` ends that olah, by the process id ``start`` recorded, and nothing else.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from kernelwheel.cli.arguments import check_repo_id_argument, path_argument
from kernelwheel.io.console import make_console, print_error, print_step
from kernelwheel.io.errors import ToolError

STARTUP_SECONDS = 60.0
STOP_SECONDS = 10.0


class HubNotStarted(ToolError):
    """olah is missing, exited, or did not answer in time."""


def config_text(root: Path, port: int) -> str:
    """olah's configuration for ``root``: its cache in ``root/cache``, the repositories under ``root/mirrors``."""
    return olah_config(port, repos=root / "cache", mirrors=root / "mirrors")


def olah_config(port: int, *, repos: Path, mirrors: Path) -> str:
    """olah offline (never goes upstream) on 127.0.0.1:``port``, serving the git repositories under ``mirrors``."""
    return f"""[basic]
host = "127.0.0.1"
port = {port}
repos-path = "{repos}"
mirrors-path = ["{mirrors}"]
mirror-scheme = "http"
mirror-netloc = "127.0.0.1:{port}"
mirror-lfs-netloc = "127.0.0.1:{port}"
[accessibility]
offline = true
"""


def repo_folder(root: Path, repo_id: str) -> Path:
    return root / "mirrors" / "models" / repo_id


def create_repo(root: Path, repo_id: str) -> Path:
    """An empty bare git repository for ``repo_id`` (kept if it exists): what ``publish --git-remote`` writes to."""
    folder = repo_folder(root, repo_id)
    if not (folder / "HEAD").exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "--quiet", "--bare", str(folder)], check=True)
    return folder


def running_pid(root: Path) -> int | None:
    """The recorded olah's process id while that process still runs olah with this folder's configuration (a
    recycled process id is not ours), else None."""
    try:
        pid = int((root / "olah.pid").read_text())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    return pid if str(root / "olah.toml").encode() in cmdline else None


def wait_until_answering(endpoint: str, server: subprocess.Popen[bytes], log: Path) -> None:
    """Any HTTP answer from olah means it serves; its exit, or silence past STARTUP_SECONDS, is an error."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise HubNotStarted(f"olah exited with status {server.returncode} instead of serving {endpoint}; "
                                f"see {log}")
        try:
            with urllib.request.urlopen(endpoint + "/api/models/x/y/refs", timeout=2):
                return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.2)
    raise HubNotStarted(f"olah did not answer on {endpoint} within {STARTUP_SECONDS:.0f} s; see {log}")


def start(root: Path, port: int, olah: Path, repos: Sequence[str]) -> str:
    """Create the repositories, then run olah unless it already runs here; returns the endpoint."""
    console = make_console()
    root = root.absolute()
    (root / "mirrors" / "models").mkdir(parents=True, exist_ok=True)
    for repo_id in repos:
        print_step(console, f"* {repo_id}: publish with --git-remote {create_repo(root, repo_id)}")
    config = root / "olah.toml"
    pid = running_pid(root)
    if pid is not None:
        port_line = re.search(r"^port = (\d+)$", config.read_text(), flags=re.M)  # written by config_text
        endpoint = f"http://127.0.0.1:{port_line.group(1) if port_line else port}"
        print_step(console, f"* olah already serves {endpoint} (process {pid}); stop it with make hub-stop")
        return endpoint
    if not os.access(olah, os.X_OK):
        raise HubNotStarted(f"expected olah's command at {olah} (make hub installs it into .venv-olah); "
                            "it is not an executable file")
    config.write_text(config_text(root, port))
    endpoint = f"http://127.0.0.1:{port}"
    log = root / "olah.log"
    with log.open("wb") as out:  # the child keeps its own descriptor
        server = subprocess.Popen([str(olah.absolute()), "-c", str(config)], cwd=root, stdout=out,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    (root / "olah.pid").write_text(f"{server.pid}\n")
    try:
        wait_until_answering(endpoint, server, log)
    except HubNotStarted:
        stop(root)
        raise
    print_step(console, f"* olah serves {endpoint} (log: {log}); stop it with make hub-stop")
    return endpoint


def stop(root: Path) -> bool:
    """End the olah ``start`` ran here and the processes it started (its own session): SIGTERM, then SIGKILL after
    STOP_SECONDS. Returns whether one was running."""
    root = root.absolute()
    pid = running_pid(root)
    (root / "olah.pid").unlink(missing_ok=True)
    if pid is None:
        return False
    os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    while running_pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if running_pid_alive(pid):
        os.killpg(pid, signal.SIGKILL)
    return True


def running_pid_alive(pid: int) -> bool:
    """Whether ``pid`` is still a process (a zombie counts as gone: it serves nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.cli.loopback_hub", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("start", "stop"))
    parser.add_argument("--dir", type=path_argument, default=Path("dist/hub"),
                        help="olah's configuration, log, cache and git repositories (default: dist/hub)")
    parser.add_argument("--port", type=int, default=8090, help="port on 127.0.0.1 (default: 8090)")
    parser.add_argument("--olah", type=path_argument, default=Path(".venv-olah/bin/olah-cli"),
                        help="olah's command (default: .venv-olah/bin/olah-cli)")
    parser.add_argument("--repo", action="append", default=[], metavar="ORG/NAME",
                        help="create this repository, empty, if it does not exist (repeatable)")
    args = parser.parse_args(argv)
    for repo_id in args.repo:
        check_repo_id_argument(parser, "--repo", repo_id)
    console = make_console()
    try:
        if args.action == "start":
            print(f"export HF_ENDPOINT={start(args.dir, args.port, args.olah, args.repo)}")
        elif not stop(args.dir):
            print_step(console, f"* no olah started from {args.dir} is running")
    except (ToolError, OSError, subprocess.CalledProcessError) as exc:
        print_error(console, exc)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
