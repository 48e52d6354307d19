"""hub2wheel vs ``kernels to-wheel`` (kernels 0.11.3, the last release that had it) on the same olah-served repos.

Each case is one git repository served by olah on 127.0.0.1 (flat layout, current kernels format with a
``metadata.json`` digest, CUDA variants only because ``to-wheel`` aborts on any other family): every variant holds
the test kernel's abi3 extension with a payload appended, different in every variant (as real variants differ, and
so that neither git nor the HF cache can share one blob between them):

* ``random-8MiB`` / ``random-64MiB``: that many random bytes (the worst case for deflate);
* ``real``: a real, compressible CUDA shared object (torch's ``libtorch_cuda_linalg.so``, 44 MB, deflates to ~79 %)
  as a second ``.so`` of the variant, with a 16-byte variant-unique tail.

Phases, each run for both tools in turn (interleaved), every command a fresh process:

* ``cold``: empty HF cache, empty output folder (plus a bare ``snapshot_download`` of the same files, the download
  alone, as a reference: both tools download through it);
* ``warm``: the cache filled by ``cold``, empty output folder;
* ``offline``: ``HF_HUB_OFFLINE=1``, the same cache, empty output folder;
* ``rerun``: online, the same cache, the ``warm`` output folder again (hub2wheel should rewrite nothing);
* ``commit`` / ``commit rerun`` (hub2wheel only: ``to-wheel`` takes a version, not a commit): ``--revision`` the tag's
  commit id, the same cache, a new output folder (the wheels' version carries the commit's date), then that folder
  again. A rerun of a commit id asks the Hub nothing.

Every ``HF_HOME`` gets the agent-harness registry file huggingface_hub ≥ 2 keeps there (``.agent_harnesses.json``,
fetched from ``{endpoint}/api/agent-harnesses`` at most once a day for its user agent): olah does not serve that
path, so without the file every hub2wheel process would pay a failing GET (0.04–0.16 s here) that a Hub user pays
once a day. kernels 0.11.3's huggingface_hub (1.x) does not read it.

tools/ is byte-compiled first (``compileall``), as an installed package is. Each command starts once the CPUs
are quiet (``wait_until_quiet``: olah keeps a core busy for a while after serving a download). Reported per command: wall seconds, max RSS (GNU ``time``'s ``%M``), wheels and bytes written (files whose
inode or mtime changed). Run: ``.venv/bin/python benchmarks/bench_hub2wheel.py [--cases random-8MiB,real]
[--variants 10] [--repeats 1] [--jobs N] [--olah-workers N] [--json RAW.json] [--record RECORD.json]``; prints a
Markdown table. One olah process serves ~20-27 MB/s however many connections ask (NOTES.md says why), which sets the cold
phase on its own; ``--olah-workers N`` runs N olah processes behind the port, as a Hub's CDN serves connections in
parallel (``hub2wheel_run.sh`` runs it that way on a 16-core machine).
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: the repository root holds tests/ and tools/
# The kernelwheel package (tools/kernelwheel), where it is not installed (`make venv` installs it, editable): after
# site-packages, so tools/build cannot stand in for an installed `build`.
KERNELWHEEL_PATH = [] if importlib.util.find_spec("kernelwheel") else [str(ROOT / "tools")]
sys.path.extend(KERNELWHEEL_PATH)

from tests.helpers import kernel_repos  # noqa: E402
from tests.helpers.hub_fixtures import KERNELS_VERSION, olah_server  # noqa: E402
from tests.helpers.venvs import helper_venv  # noqa: E402

TORCH = ["torch29", "torch210", "torch211", "torch212", "torch213", "torch28", "torch27", "torch26"]
CUDA = ["cu126", "cu128", "cu130"]
REAL_SO = "libtorch_cuda_linalg.so"
CASES = ("random-8MiB", "random-64MiB", "real")
PHASES = ("cold", "warm", "offline", "rerun", "commit", "commit rerun")
PINNED_PHASES = ("commit", "commit rerun")  # hub2wheel only
# The registry as huggingface_hub caches it; no harness listed, so no process is reported as an agent.
AGENT_REGISTRY = {"standardEnvVars": [], "harnesses": {}}
GNU_TIME = "/usr/bin/time"
TO_WHEEL = f"to-wheel {KERNELS_VERSION}"
HUB2WHEEL = "hub2wheel"
FETCH_ONLY = "snapshot_download only"  # the download alone (cold phase): what the server allows, for reference
FETCH_CODE = ("import sys; from huggingface_hub import snapshot_download; "
              "snapshot_download(sys.argv[1], revision='v0.1.0', allow_patterns=['build/*'], max_workers=8)")
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "PATH": "/usr/bin:/bin"}


def variant_names(n: int) -> list[str]:
    return [f"{t}-cxx11-{c}-x86_64-linux" for t in TORCH for c in CUDA][:n]


def real_so() -> Path:
    # Found without importing torch: this process stays small (see ``timed``).
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the real case needs torch installed (for its lib/" + REAL_SO + ")")
    return Path(next(iter(spec.submodule_search_locations))) / "lib" / REAL_SO


def _git(repo: Path, *args: str) -> str:
    # Loose objects stored without zlib: committing ~1 GB of random bytes would otherwise take a minute.
    return subprocess.run(["git", "-c", "core.compression=0", "-c", "core.looseCompression=0", "-C", str(repo),
                           *args], check=True, env=GIT_ENV, capture_output=True, text=True).stdout


def make_repo(mirrors: Path, case: str, n: int, so_cache: Path) -> tuple[str, int, str]:
    """``testorg/<case>`` at tag v0.1.0; returns the repo id, the bytes of its build/ tree and the tag's commit."""
    repo = mirrors / "models" / "testorg" / case
    repo.mkdir(parents=True)
    rng = random.Random(case)  # the same bytes every run of the benchmark
    size = 0
    for name in variant_names(n):
        vdir = kernel_repos.flat_variant(repo / "build", name, so_cache, name="img2gray")
        if case.startswith("random-"):
            ext = next(vdir.glob("*.abi3.so"))
            with ext.open("ab") as fh:
                fh.write(rng.randbytes(int(case.split("-")[1].removesuffix("MiB")) << 20))
        else:
            shutil.copyfile(real_so(), vdir / REAL_SO)
            with (vdir / REAL_SO).open("ab") as fh:
                fh.write(rng.randbytes(16))
        meta = json.loads((vdir / "metadata.json").read_text())
        (vdir / "metadata.json").unlink()
        meta["digest"] = kernel_repos.kernel_builder_digest(vdir)
        (vdir / "metadata.json").write_text(json.dumps(meta, indent=2))
        size += sum(p.stat().st_size for p in vdir.iterdir())
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", case)
    _git(repo, "tag", "v0.1.0")
    return f"testorg/{case}", size, _git(repo, "rev-parse", "HEAD").strip()


@dataclass
class Row:
    case: str
    tool: str
    phase: str
    repeat: int
    seconds: float
    max_rss_mb: float
    exit: int
    wheels: int
    rewritten: int
    bytes_written: int


def _snapshot(out: Path) -> dict[str, tuple[int, int, int]]:
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.stat().st_size) for p in out.glob("*.whl")}


def _busy_and_total_ticks() -> tuple[int, int]:
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def wait_until_quiet(limit_s: float = 30.0, window_s: float = 0.25, busy_below: float = 0.15) -> None:
    """Wait (at most ``limit_s``) until the machine's CPUs are ``busy_below`` busy over ``window_s``: olah goes on
    working for a while after a download (its own cache), which would slow whichever command came next."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        busy0, total0 = _busy_and_total_ticks()
        time.sleep(window_s)
        busy1, total1 = _busy_and_total_ticks()
        if total1 > total0 and (busy1 - busy0) / (total1 - total0) < busy_below:
            return


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int, str]:
    """Wall seconds, max RSS (MB), exit code, stderr tail of ``cmd``.

    The RSS comes from GNU time, which forks ``cmd`` itself: a child forked from this (larger) Python process would
    count this process's pages in its own ``ru_maxrss`` (Linux carries the pre-exec high-water mark over)."""
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as rss:
        start = time.perf_counter()
        proc = subprocess.run([GNU_TIME, "-q", "-o", rss.name, "-f", "%M", *cmd], env=env, cwd=cwd,
                              stdout=subprocess.DEVNULL, stderr=err)
        seconds = time.perf_counter() - start
        err.seek(0)
        tail = err.read()[-1500:].decode(errors="replace")
        max_rss_kb = int(rss.read().split()[-1])
    return seconds, max_rss_kb / 1024, proc.returncode, tail


def run_case(case: str, repo_id: str, commit: str, endpoint: str, tmp: Path, kernels: Path, repeats: int,
             jobs: int | None) -> list[Row]:
    rows: list[Row] = []
    commands = {
        TO_WHEEL: [str(kernels / "bin" / "kernels"), "to-wheel", repo_id, "0.1.0"],
        HUB2WHEEL: [sys.executable, "-m", "tools.hub2wheel", repo_id, "--revision", "{revision}",
                    "--trust-remote-code", "--out", "{out}", *(["--jobs", str(jobs)] if jobs else [])],
        FETCH_ONLY: [sys.executable, "-c", FETCH_CODE, repo_id],
    }
    for repeat in range(repeats):
        homes = {tool: tmp / f"hf-{case}-{repeat}-{i}" for i, tool in enumerate(commands)}
        for home in homes.values():
            home.mkdir()
            (home / ".agent_harnesses.json").write_text(json.dumps(AGENT_REGISTRY))
        reused_out: dict[tuple[str, str], Path] = {}  # (tool, phase) → the folder a later phase runs into again
        for phase in PHASES:
            for tool, cmd in commands.items():
                if (tool == FETCH_ONLY and phase != "cold") or (tool != HUB2WHEEL and phase in PINNED_PHASES):
                    continue
                earlier = {"rerun": "warm", "commit rerun": "commit"}.get(phase)
                out = reused_out[tool, earlier] if earlier else tmp / f"out-{case}-{repeat}-{tool}-{phase}"
                out.mkdir(exist_ok=True)
                reused_out[tool, phase] = out
                revision = commit if phase in PINNED_PHASES else "v0.1.0"
                env = {**os.environ, "HF_ENDPOINT": endpoint, "HF_HOME": str(homes[tool]),
                       "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
                env.pop("HF_HUB_CACHE", None)
                # to-wheel runs from its own venv with nothing of ours on its path; hub2wheel and the bare download
                # see the repository root (and tools/, where kernelwheel is not installed), then whatever
                # PYTHONPATH this benchmark was given (packages carried to a machine that lacks them).
                env.pop("PYTHONPATH", None)
                if tool != TO_WHEEL:
                    env["PYTHONPATH"] = os.pathsep.join(
                        p for p in (str(ROOT), *KERNELWHEEL_PATH, os.environ.get("PYTHONPATH")) if p)
                if phase == "offline":
                    env["HF_HUB_OFFLINE"] = "1"
                before = _snapshot(out)
                wait_until_quiet()
                seconds, rss, rc, err = timed([c.replace("{out}", str(out)).replace("{revision}", revision)
                                               for c in cmd], env,
                                              out if tool == TO_WHEEL else ROOT)
                after = _snapshot(out)
                changed = [n for n, facts in after.items() if before.get(n) != facts]
                rows.append(Row(case, tool, phase, repeat, seconds, rss, rc, len(after), len(changed),
                                sum(after[n][2] for n in changed)))
                print(f"{case} {tool} {phase} #{repeat}: {seconds:.2f} s, {rss:.0f} MB, exit {rc}, "
                      f"{len(changed)}/{len(after)} wheels written", file=sys.stderr)
                if rc != 0:
                    print(err, file=sys.stderr)
        for home in homes.values():
            shutil.rmtree(home, ignore_errors=True)
        for out in tmp.glob(f"out-{case}-{repeat}-*"):
            shutil.rmtree(out, ignore_errors=True)
    return rows


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def table(rows: list[Row], sizes: dict[str, int]) -> str:
    lines = ["| case | phase | to-wheel s | hub2wheel s | ratio | download only s | to-wheel max RSS | "
             "hub2wheel max RSS | to-wheel written | hub2wheel written |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for case in dict.fromkeys(r.case for r in rows):
        for phase in PHASES:
            picked = {tool: [r for r in rows if r.case == case and r.phase == phase and r.tool == tool]
                      for tool in (TO_WHEEL, HUB2WHEEL)}
            if not picked[HUB2WHEEL]:
                continue
            secs = {t: f"{_median([r.seconds for r in rs]):.2f}" if rs else "-" for t, rs in picked.items()}
            rss = {t: f"{max(r.max_rss_mb for r in rs):.0f} MB" if rs else "-" for t, rs in picked.items()}
            written = {t: (f"{rs[-1].rewritten}/{rs[-1].wheels} wheels, {rs[-1].bytes_written / 2**20:.0f} MiB"
                           + ("" if all(r.exit == 0 for r in rs) else f", exit {rs[-1].exit}")) if rs else "-"
                       for t, rs in picked.items()}
            ratio = (f"**{float(secs[HUB2WHEEL]) / float(secs[TO_WHEEL]):.2f}**" if picked[TO_WHEEL]
                     else "- (to-wheel takes no commit)")
            fetch = [r.seconds for r in rows if r.case == case and r.phase == phase and r.tool == FETCH_ONLY]
            lines.append(f"| {case} ({sizes[case] / 2**20:.0f} MiB) | {phase} | {secs[TO_WHEEL]} | "
                         f"{secs[HUB2WHEEL]} | {ratio} | {f'{_median(fetch):.2f}' if fetch else '-'} | "
                         f"{rss[TO_WHEEL]} | {rss[HUB2WHEEL]} | {written[TO_WHEEL]} | {written[HUB2WHEEL]} |")
    return "\n".join(lines)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--variants", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--jobs", type=int, help="hub2wheel --jobs (default: its own default)")
    parser.add_argument("--olah-workers", type=int, default=1,
                        help="olah processes serving the repos (default 1; one process is the cold phase's limit)")
    parser.add_argument("--json", type=Path, help="also write every row as JSON here")
    parser.add_argument("--record", type=Path,
                        help="also write the rows as a benchmark record (benchmarks/result.schema.json)")
    args = parser.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    if args.olah_workers < 1:
        parser.error(f"--olah-workers: expected a number of processes >= 1, got {args.olah_workers}")
    unknown = set(cases) - set(CASES)
    if unknown:
        parser.error(f"unknown cases {sorted(unknown)}; known: {', '.join(CASES)}")
    kernels = helper_venv(".venv-kernels", f"kernels=={KERNELS_VERSION}", "wheel")
    # Byte code for tools/, as an installed package has it: with PYTHONDONTWRITEBYTECODE set (this sandbox sets it)
    # every hub2wheel start would otherwise compile its ~30 modules again (~0.07 s).
    compileall.compile_dir(str(ROOT / "tools"), quiet=1)
    rows: list[Row] = []
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        repos: dict[str, tuple[str, str]] = {}
        for case in cases:
            repo_id, sizes[case], commit = make_repo(tmp / "mirrors", case, args.variants, tmp / "so")
            repos[case] = repo_id, commit
        with olah_server(tmp / "mirrors", tmp, workers=args.olah_workers) as endpoint:
            for case in cases:
                rows += run_case(case, *repos[case], endpoint, tmp, kernels, args.repeats, args.jobs)
    served = f"{args.olah_workers} olah processes" if args.olah_workers > 1 else "olah"
    header = (f"{args.variants} flat CUDA variants per case, served by {served} on 127.0.0.1; {cpu_model()}, "
              f"{os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}; "
              f"median of {args.repeats} interleaved run(s); ratio = hub2wheel / to-wheel.")
    text = header + "\n\n" + table(rows, sizes)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"header": header, "sizes": sizes, "rows": [asdict(r) for r in rows]},
                                        indent=1) + "\n")
    if args.record:
        import record  # this script's folder is first on sys.path

        record.write(args.record, [record.make_record(
            "bench_hub2wheel.py", record.from_bench_hub2wheel({"sizes": sizes, "rows": [asdict(r) for r in rows]}),
            unit="s", method=record.BENCH_HUB2WHEEL_METHOD,
            host=record.host_facts(), software=record.software_facts({"kernels (to-wheel)": KERNELS_VERSION},
                                                                     with_torch=False),
            notes=[header])])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
