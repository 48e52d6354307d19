"""``kernelwheel install-command PROJECT --index-url URL``: print (or ``--run``) the pip/uv command that
installs a project's wheel for the torch already installed, with torch pinned (``kernelwheel.index.install_plan``; the
command line and its passwords: ``kernelwheel.index.install_command_line``).

A password is never printed. It may come from the URL (``http://reader:pw@host/simple/``) or, kept off the command
line, from ``$KERNELWHEEL_INDEX_PASSWORD`` with ``http://reader@host/simple/``; either way the printed command (and
``--json``'s argv) says ``"${KERNELWHEEL_INDEX_PASSWORD}"`` where the password goes. ``--run`` hands an index URL
with a password to the installer in its environment (``PIP_INDEX_URL``/``UV_INDEX_URL``, ``runnable_command``), never
on its command line, which other local users can read. The GPU a wheel must run on is ``--gpu-arch X.Y``, else each
GPU nvidia-smi lists (``kernelwheel.index.target_gpu``; no nvidia-smi: no GPU check, and ``--json``'s ``gpu`` says
why). Exit status: 0 planned (or installed with ``--run``), 1 any
error (one ``error:`` line), the installer's own status when ``--run`` fails."""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from packaging.version import Version
from rich.console import Console

from kernelwheel.cli.command import command_parser, run_command
from kernelwheel.index.indexed_wheel import check_project_name
from kernelwheel.index.install_command_line import (
    PASSWORD_ENV,
    printable_argv,
    runnable_command,
    shell_command,
    with_password,
)
from kernelwheel.index.install_plan import DEFAULT_DEADLINE_S, plan_install
from kernelwheel.index.target_environment import Environment
from kernelwheel.index.target_gpu import GpuCheck, from_argument, parse_capability
from kernelwheel.index.target_gpu import probe as probe_gpus
from kernelwheel.io.console import print_error, print_step
from kernelwheel.io.errors import ToolError, TorchNotInstalled
from kernelwheel.io.urls import redact

_MAX_TIMEOUT_S = 86400  # beyond it the deadline's arithmetic overflows long before anyone waits that long


def _find_uv() -> str:
    """uv on PATH, else the one installed beside this interpreter (an unactivated venv); "" when neither."""
    beside = Path(sys.executable).with_name("uv")
    return shutil.which("uv") or (str(beside) if os.access(beside, os.X_OK) else "")


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds <= _MAX_TIMEOUT_S:  # also refuses nan
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, at most {_MAX_TIMEOUT_S} (a day), "
                                         f"got {text!r:.40}")
    return seconds


def _capability(text: str) -> str:
    try:
        parse_capability(text)
    except ToolError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text.strip()


def build_parser() -> argparse.ArgumentParser:
    parser = command_parser(
        "install_command", "install-command",
        "Print (or run) the pip/uv command that installs a project's wheel for the torch already installed, with "
        "torch pinned so the installer cannot change it.",
    )
    parser.add_argument("project", help="distribution name, e.g. img2gray-cu130")
    parser.add_argument("--index-url", required=True, help="the index root, e.g. http://127.0.0.1:8080/simple/")
    parser.add_argument("--extra-index-url", action="append", default=[], help="passed through (repeatable)")
    parser.add_argument("--python", default=sys.executable, help="interpreter of the target environment")
    parser.add_argument("--installer", choices=["pip", "uv"], default="pip")
    parser.add_argument("--torch", type=Version, help="plan for this torch version instead of the installed one")
    parser.add_argument("--gpu-arch", type=_capability, metavar="X.Y",
                        help="the CUDA compute capability the wheel must run on (9.0 for an H100); default: each GPU "
                        "nvidia-smi lists, none checked without nvidia-smi")
    parser.add_argument("--run", action="store_true", help="run the command, then check torch is unchanged")
    parser.add_argument("--json", action="store_true", help="print a JSON plan instead of a shell command")
    parser.add_argument("--timeout", type=_seconds, default=DEFAULT_DEADLINE_S, metavar="SECONDS",
                        help="seconds for probing the target and reading the index, all requests together "
                        f"(default {DEFAULT_DEADLINE_S:g}); the installer run by --run is not limited")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(build_parser(), _install_command, argv)


def _install_command(args: argparse.Namespace, parser: argparse.ArgumentParser, console: Console) -> int:
    try:
        check_project_name(args.project)  # a usage error, before the target is probed
    except ToolError as exc:
        parser.error(f"project: {exc}")
    uv = ""
    if args.run and args.installer == "uv":
        uv = _find_uv()
        if not uv:
            parser.error(f"--installer uv --run: uv is neither on PATH nor beside {sys.executable}; install it "
                         "(pip install uv) or use --installer pip")
    index_url = with_password(args.index_url, os.environ.get(PASSWORD_ENV))
    deadline = time.monotonic() + args.timeout  # one deadline for probing the target and reading the index
    target = Environment.probe(args.python, timeout_s=args.timeout)
    if args.torch is not None:
        target = Environment(target.python, target.python_version, args.torch, target.tags, target.cuda,
                             tag_order=target.tag_order, markers=target.markers)
    if target.torch is None:
        raise TorchNotInstalled(
            f"{args.python} has no torch installed, so no build can be matched to it; install torch first "
            "(e.g. pip install torch==2.14.1) or pass --torch X.Y.Z"
        )
    print_step(console, f"* {target.describe()} ({args.python})")
    gpu: GpuCheck = from_argument(args.gpu_arch) if args.gpu_arch else probe_gpus(
        timeout_s=max(min(deadline - time.monotonic(), 20), 1))
    print_step(console, f"* {gpu.describe()}")
    plan = plan_install(
        index_url, args.project, target, installer=args.installer, extra_index_urls=args.extra_index_url,
        deadline_s=deadline - time.monotonic(), deadline_shown_s=args.timeout, gpu=gpu,
    )
    for item in plan.rejected:
        print_step(console, f"  skipped {item.candidate.filename}: {item.reason}")
    print_step(console, f"* {plan.project}: {plan.wheel.filename} from {redact(plan.index_url)}")
    print_step(console, f"  why: {plan.reason}")
    shown, variables = printable_argv(plan)
    if variables and not args.run:
        print_step(console, f"  the password is not printed: set {', '.join(variables)} before running the command "
                            "(or drop it from the URL and keep it in ~/.netrc)")
    if args.json:
        print(json.dumps({"version": 1, "wheel": plan.wheel.filename, "index_url": redact(plan.index_url),
                          "torch_pin": plan.torch_pin, "argv": shown, "password_env": variables,
                          "gpu": gpu.to_json(),
                          "gpu_targets": plan.gpu_targets.to_json() if plan.gpu_targets is not None else None},
                         indent=2))
    else:
        print(shell_command(shown))
    if not args.run:
        return 0
    command, index_env = runnable_command(plan)  # passwords travel in the installer's environment, not its argv
    if command[0] == "uv":
        command[0] = uv
    try:
        returncode = subprocess.run(command, env={**os.environ, **index_env}).returncode
    except OSError as exc:
        print_error(console, f"cannot run {command[0]}: {exc.strerror or exc}")
        return 1
    after = Environment.probe(args.python).torch
    if after != target.torch:
        print_error(console, f"torch changed from {target.torch} to {after}; this is a bug in the pin")
        return 1
    return returncode


if __name__ == "__main__":
    raise SystemExit(main())
