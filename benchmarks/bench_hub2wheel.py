"""hub2wheel vs ``kernels to-wheel`` (kernels 0.11.3, the last release that had it) on the same repository.

Both tools fetch the same olah-served repository (local git, flat layout, CUDA variants only, because
``to-wheel`` aborts on any other family) through ``HF_ENDPOINT`` with an empty HF cache ("cold") and again with
the cache filled ("warm"). Prints a Markdown table; ``--append`` adds it to benchmarks/RESULTS.md.
Run: ``.venv/bin/python benchmarks/bench_hub2wheel.py [--variants 8] [--append]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: the repository root holds tests/ and tools/

from tests.helpers import kernel_repos  # noqa: E402
from tests.helpers.hub_fixtures import KERNELS_VERSION, olah_server  # noqa: E402
from tests.helpers.venvs import helper_venv  # noqa: E402

TORCH = ["torch29", "torch210", "torch211", "torch212", "torch213", "torch28", "torch27", "torch26"]
CUDA = ["cu126", "cu128", "cu130"]


def variants(n: int) -> list[str]:
    names = [f"{t}-cxx11-{c}-x86_64-linux" for t in TORCH for c in CUDA]
    return names[:n]


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    return time.perf_counter() - start, proc.returncode, proc.stderr[-2000:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", type=int, default=8)
    parser.add_argument("--append", action="store_true", help="append the table to benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    kernels = helper_venv(".venv-kernels", f"kernels=={KERNELS_VERSION}", "wheel")
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        repo = tmp / "mirrors" / "models" / "testorg" / "img2gray"
        repo.mkdir(parents=True)
        for name in variants(args.variants):
            kernel_repos.flat_variant(repo / "build", name, tmp / "so")
        kernel_repos.git_commit_all(repo, "build")
        kernel_repos.git(repo, "tag", "v0.1.0")
        rows = []
        with olah_server(tmp / "mirrors", tmp) as endpoint:
            tools = {
                f"kernels {KERNELS_VERSION} to-wheel": [str(kernels / "bin" / "kernels"), "to-wheel", "testorg/img2gray",
                                                        "0.1.0"],
                "hub2wheel": [sys.executable, "-m", "tools.hub2wheel", "testorg/img2gray", "--revision", "v0.1.0",
                              "--out", "{out}"],
            }
            for label, cmd in tools.items():
                hf_home = tmp / f"hf-{len(rows)}"
                for phase in ("cold", "warm"):
                    out = tmp / f"out-{len(rows)}-{phase}"
                    out.mkdir()
                    env = {**os.environ, "HF_ENDPOINT": endpoint, "HF_HOME": str(hf_home), "HF_HUB_DISABLE_PROGRESS_BARS": "1",
                           "PYTHONPATH": str(ROOT)}
                    seconds, rc, err = timed([c.replace("{out}", str(out)) for c in cmd], env, out if "kernels" in label else ROOT)
                    wheels = sorted(p.name for p in out.glob("*.whl"))
                    rows.append((label, phase, seconds, rc, len(wheels), wheels[0] if wheels else "-"))
                    if rc != 0:
                        print(f"{label} ({phase}) exited {rc}: {err}", file=sys.stderr)
                shutil.rmtree(hf_home, ignore_errors=True)
    lines = [
        f"{args.variants} flat CUDA variants (tiny abi3 .so each), served by olah on 127.0.0.1; "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}.",
        "",
        "| tool | HF cache | seconds | exit | wheels | first wheel |",
        "|---|---|---:|---:|---:|---|",
        *(f"| {t} | {p} | {s:.2f} | {rc} | {n} | `{w}` |" for t, p, s, rc, n, w in rows),
    ]
    text = "\n".join(lines)
    print(text)
    if args.append:
        results = ROOT / "benchmarks" / "RESULTS.md"
        existing = results.read_text() if results.exists() else "# Benchmark results\n"
        heading = "## hub2wheel vs kernels to-wheel"
        if heading not in existing:
            existing = existing.rstrip("\n") + f"\n\n{heading}\n"
        results.write_text(existing.rstrip("\n") + "\n\n" + text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
