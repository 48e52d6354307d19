"""``kernelwheel mirror`` at organisation scale, against olah on 127.0.0.1: cold, rerun, one new tag, memory.

The loopback Hub holds ``--kernels × max(--scales)`` kernel repositories (``bench/k000`` ...), each with ``--tags``
release tags (``v0.1.0`` ...) of ``--variants`` build variants (torch 2.10-2.13 × CPU, CUDA 12.8, CUDA 13.0, ...):
every variant holds the test kernel's tiny abi3 extension (compiled once per kernel and backend) with a tail unique to
the variant and the tag, so no two releases share a blob, as real releases do not. Its ``metadata.json`` carries the
kernel-builder digest, computed here.

For each scale (the first ``--kernels × scale`` repositories), every command a fresh process, wall seconds and max
RSS (GNU ``time``'s ``%M``):

* ``download only``: ``snapshot_download`` of every tag's ``build/`` in one process, empty cache: the bare download
  of the same files, for reference;
* ``cold``: ``kernelwheel mirror`` with an empty cache and wheelhouse: every release converted, then the index;
* ``rerun``: the same again, nothing new (ref listings only; the index reads no wheel it hashed before);
* ``new tag``: one more release tag on one kernel, then the mirror: that tag's wheels alone converted and indexed;
  ``new tag download only`` is the bare download of that one tag, which ``new tag`` includes.

Run: ``.venv/bin/python benchmarks/bench_mirror.py [--kernels 50] [--tags 5] [--variants 12] [--scales 1,2,4]
[--olah-workers N] [--json RAW.json] [--record RECORD.json]``; prints a Markdown table.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: the repository root holds tests/ and tools/
KERNELWHEEL_PATH = [] if importlib.util.find_spec("kernelwheel") else [str(ROOT / "tools")]
sys.path.extend(KERNELWHEEL_PATH)

from benchmarks import record  # noqa: E402
from tests.helpers import kernel_repos  # noqa: E402
from tests.helpers.hub_fixtures import OLAH_VERSION, olah_server  # noqa: E402

ORG = "bench"
TORCH = ["torch213", "torch212", "torch211", "torch210", "torch29", "torch28"]
BACKENDS = ["cpu", "cu128", "cu130", "cu126"]
AGENT_REGISTRY = {"standardEnvVars": [], "harnesses": {}}  # bench_hub2wheel.py says why every HF_HOME gets it
GNU_TIME = "/usr/bin/time"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "PATH": "/usr/bin:/bin"}
FETCH_CODE = """
import sys
from huggingface_hub import snapshot_download
pairs = [line.split() for line in open(sys.argv[1])]
for repo, tag in pairs:
    snapshot_download(repo, revision=tag, allow_patterns=["build/*"], max_workers=8)
"""
METHOD = ("bench_mirror.py: a loopback Hub (olah) of kernels x release tags x variants (tiny abi3 extensions, unique "
          "per variant and tag); per scale, fresh processes in order: the bare download of every tag (snapshot_download"
          ", empty cache), kernelwheel mirror cold (empty cache and wheelhouse), a rerun with nothing new, one new tag "
          "(and its bare download); wall seconds, max RSS from GNU time.")


def variant_names(n: int) -> list[str]:
    names = [f"{torch}-cxx11-{backend}-x86_64-linux" for torch in TORCH for backend in BACKENDS]
    if n > len(names):
        raise SystemExit(f"--variants: at most {len(names)}")
    return sorted(names[:n])


def _git(repo: Path, *args: str, date: str = "2026-01-01T00:00:00Z") -> None:
    env = {**GIT_ENV, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)


def write_release(repo: Path, name: str, variants: list[str], tag: str, so_cache: Path, day: int) -> None:
    """Every variant of ``name`` rewritten with a tail unique to it and ``tag``, committed and tagged ``tag``."""
    for variant in variants:
        vdir = repo / "build" / variant
        vdir.mkdir(parents=True, exist_ok=True)
        backend = "cpu" if "-cpu-" in variant else "cuda"
        module = f"_{name}_{backend}_{kernel_repos.OPS_ID}"
        so = kernel_repos.compile_extension(so_cache / "out" / f"{module}.abi3.so", module, so_cache).read_bytes()
        files = {
            f"{module}.abi3.so": so + f"\0{variant}@{tag}\0".encode(),
            "__init__.py": f'"""{name} ({variant})."""\nfrom ._ops import ext\n'.encode(),
            "_ops.py": f"from . import {module} as ext\n".encode(),
        }
        for rel, data in files.items():
            (vdir / rel).write_bytes(data)
        meta = {"name": name, "id": kernel_repos.build_id(name, backend, variant), "version": 0,
                "license": "Apache-2.0", "python-depends": [], "backend": {"type": backend},
                "digest": kernel_repos.digest(files)}
        (vdir / "metadata.json").write_text(json.dumps(meta, indent=2))
    date = f"2026-01-{day:02d}T00:00:00Z"
    _git(repo, "add", "-A", date=date)
    _git(repo, "commit", "-q", "-m", f"release {tag}", date=date)
    _git(repo, "tag", tag, date=date)


def make_hub(mirrors: Path, count: int, tags: int, variants: list[str], so_cache: Path) -> list[str]:
    repos = []
    for i in range(count):
        name = f"k{i:03d}"
        repo = mirrors / "models" / ORG / name
        repo.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=GIT_ENV)
        for t in range(tags):
            write_release(repo, name, variants, f"v0.{t + 1}.0", so_cache, t + 1)
        repos.append(f"{ORG}/{name}")
    return repos


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """Wall seconds, max RSS (MB) and stdout of ``cmd``; exits with its stderr when it fails."""
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out, tempfile.NamedTemporaryFile("r") as rss:
        start = time.perf_counter()
        proc = subprocess.run([GNU_TIME, "-q", "-o", rss.name, "-f", "%M", *cmd], env=env, cwd=cwd, stdout=out,
                              stderr=err)
        seconds = time.perf_counter() - start
        err.seek(0)
        out.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err.read()[-3000:].decode()}")
        return seconds, int(rss.read().split()[-1]) / 1024, out.read().decode()


def fresh_home(base: Path, label: str) -> Path:
    home = base / f"hf-{label}"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    (home / ".agent_harnesses.json").write_text(json.dumps(AGENT_REGISTRY))
    return home


def converted(out: str) -> tuple[int, int]:
    """(release tags converted, wheels) from the mirror's --json summary."""
    kernels = json.loads(out)["kernels"]
    return sum(len(k["converted"]) for k in kernels), sum(len(k["wheels"]) for k in kernels)


def run_scale(scale: int, repos: list[str], tags: int, variants: int, mirrors: Path, endpoint: str, base: Path,
              so_cache: Path) -> list[dict[str, object]]:
    folder = base / f"scale-{scale}"
    folder.mkdir()
    config = folder / "mirror.toml"
    config.write_text('wheelhouse = "wheelhouse"\n' + "".join(f'[[kernels]]\nrepo = "{r}"\ntrust = true\n'
                                                               for r in repos))
    pairs = folder / "pairs.txt"
    listed = [(r, t) for r in repos for t in _tags_of(mirrors, r)]
    pairs.write_text("".join(f"{r} {t}\n" for r, t in listed))
    env = {**os.environ, "HF_ENDPOINT": endpoint, "PYTHONPATH": os.pathsep.join([str(ROOT), *KERNELWHEEL_PATH])}
    env.pop("HF_HUB_OFFLINE", None)
    mirror = [sys.executable, "-m", "tools.cli.mirror", str(config), "--json"]
    rows: list[dict[str, object]] = []

    def measure(phase: str, cmd: list[str], home: Path) -> str:
        seconds, rss, out = timed(cmd, {**env, "HF_HOME": str(home)}, ROOT)
        entry: dict[str, object] = {"scale": scale, "kernels": len(repos), "phase": phase, "seconds": seconds,
                                    "max_rss_mb": rss}
        if cmd is mirror:
            entry["tags_converted"], entry["wheels_converted"] = converted(out)
            entry["index_hashed"] = (json.loads(out)["index"] or {}).get("hashed")
        rows.append(entry)
        print(f"  {scale}x {phase}: {seconds:.2f} s, {rss:.0f} MB {entry.get('wheels_converted', '')}",
              file=sys.stderr)
        return out

    measure("download only", [sys.executable, "-c", FETCH_CODE, str(pairs)], fresh_home(folder, "bare"))
    home = fresh_home(folder, "mirror")
    measure("cold", mirror, home)
    measure("rerun", mirror, home)
    repo = repos[-1]
    name = repo.split("/")[1]
    tag = f"v0.{len(_tags_of(mirrors, repo)) + 1}.0"
    write_release(mirrors / "models" / repo, name, variant_names(variants), tag, so_cache, 28)
    (folder / "one.txt").write_text(f"{repo} {tag}\n")
    measure("new tag download only", [sys.executable, "-c", FETCH_CODE, str(folder / "one.txt")],
            fresh_home(folder, "one"))
    measure("new tag", mirror, home)
    wheels = len(list((folder / "wheelhouse").glob("*.whl")))
    rows.append({"scale": scale, "kernels": len(repos), "phase": "wheels in the wheelhouse", "count": wheels})
    return rows


def _tags_of(mirrors: Path, repo: str) -> list[str]:
    out = subprocess.run(["git", "-C", str(mirrors / "models" / repo), "tag"], check=True, capture_output=True,
                         text=True).stdout
    return sorted(out.split())


def to_rows(raw: list[dict[str, object]]) -> list[record.Row]:
    rows: list[record.Row] = []
    for item in raw:
        case = f"{item['kernels']} kernels: {item['phase']}"
        if "seconds" not in item:
            rows.append(record.row(case, "wheelhouse", median=float(str(item["count"])), unit="wheels"))
            continue
        extra = {k: item[k] for k in ("max_rss_mb", "tags_converted", "wheels_converted", "index_hashed") if k in item}
        contender = "snapshot_download" if "download" in str(item["phase"]) else "kernelwheel mirror"
        rows.append(record.row(case, contender, median=float(str(item["seconds"])),
                               extra={k: v if v is None else float(str(v)) for k, v in extra.items()}))
    return rows


def table(raw: list[dict[str, object]]) -> str:
    lines = ["| kernels | phase | s | max RSS MB | tags | wheels | index hashed |", "|---|---|---|---|---|---|---|"]
    for item in raw:
        if "seconds" not in item:
            lines.append(f"| {item['kernels']} | {item['phase']} | | | | {item['count']} | |")
            continue
        lines.append(f"| {item['kernels']} | {item['phase']} | {float(str(item['seconds'])):.2f} | "
                     f"{float(str(item['max_rss_mb'])):.0f} | {item.get('tags_converted', '')} | "
                     f"{item.get('wheels_converted', '')} | {item.get('index_hashed', '')} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--kernels", type=int, default=50)
    parser.add_argument("--tags", type=int, default=5)
    parser.add_argument("--variants", type=int, default=12)
    parser.add_argument("--scales", default="1,2,4")
    parser.add_argument("--olah-workers", type=int, default=1)
    parser.add_argument("--json", type=Path, help="write the raw measurements here")
    parser.add_argument("--record", type=Path, help="write a result record (benchmarks/result.schema.json) here")
    parser.add_argument("--host-name", help="the host's name in the record (e.g. the hardware class's)")
    args = parser.parse_args()
    scales = sorted({int(s) for s in args.scales.split(",")})
    compileall.compile_dir(str(ROOT / "tools" / "kernelwheel"), quiet=1)
    raw: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="bench-mirror-") as tmp:
        base = Path(tmp)
        so_cache = base / "so"
        started = time.perf_counter()
        repos = make_hub(base / "mirrors", args.kernels * scales[-1], args.tags, variant_names(args.variants), so_cache)
        print(f"hub of {len(repos)} kernels made in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        with olah_server(base / "mirrors", base, workers=args.olah_workers) as endpoint:
            for scale in scales:
                raw += run_scale(scale, repos[:args.kernels * scale], args.tags, args.variants, base / "mirrors",
                                 endpoint, base, so_cache)
                if args.json:  # after every scale: a long run stopped later keeps what it measured
                    args.json.write_text(json.dumps(raw, indent=2) + "\n")
    print(table(raw))
    if args.json:
        args.json.write_text(json.dumps(raw, indent=2) + "\n")
    if args.record:
        made = record.make_record(
            "bench_mirror.py", to_rows(raw), unit="s", method=METHOD,
            host=record.host_facts(args.host_name), software=record.software_facts({"olah": OLAH_VERSION}, with_torch=False),
            notes=[f"{args.tags} release tags x {args.variants} variants per kernel; olah workers: "
                   f"{args.olah_workers}"])
        record.write(args.record, [made])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
