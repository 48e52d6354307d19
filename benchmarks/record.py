"""Benchmark results as records (benchmarks/result.schema.json): build, write, check, and convert what the scripts
print as JSON.

    python benchmarks/record.py convert KIND RAW.json -o OUT.json [--commit C] [--command CMD] [--build NAME=WHAT]
    python benchmarks/record.py validate FILE.json ...
    python benchmarks/record.py merge OUT.json IN.json ... [--hardware-class NAME]

KIND is the script whose ``--json`` output RAW is: ``bench_img2gray`` (its rows), ``ab`` (gpu_run.sh's ab.json or
ab-classic.json: {round file: rows}), ``bench_cpu`` or ``bench_hub2wheel``. ``convert`` reads the host and software
facts (CPU, GPU and driver through nvidia-smi, torch and its CUDA) on the machine it runs on, so run it where the
benchmark ran, as gpu_run.sh and cpu_run.sh do; the commit comes from ``--commit``, else $BENCH_COMMIT, else
``git rev-parse`` (a copy of the tree without .git gives "unknown"). The scripts that measure take ``--record FILE``
and write a record themselves through the same functions.

Every median and spread is in the record's unit (or the row's own); spread is [lowest, highest] of the n samples the
median was taken over, null where a run kept only its median.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

SCHEMA_ID = "img2gray-benchmark/1"
SCHEMA_PATH = Path(__file__).resolve().with_name("result.schema.json")
ROOT = Path(__file__).resolve().parents[1]


class Peer(TypedDict):
    contender: str
    median: float


class _RowOptional(TypedDict, total=False):
    build: str
    unit: str
    peer: Peer
    extra: dict[str, float | str | None]


class Row(_RowOptional):
    case: str
    contender: str
    median: float
    spread: list[float] | None
    n: int | None


class _HostOptional(TypedDict, total=False):
    name: str
    details: dict[str, str]


class Host(_HostOptional):
    cpu: str
    cores: int
    gpu: str | None
    driver: str | None


class _SoftwareOptional(TypedDict, total=False):
    other: dict[str, str]


class Software(_SoftwareOptional):
    torch: str | None
    cuda: str | None
    python: str


class _RecordOptional(TypedDict, total=False):
    builds: dict[str, str]
    notes: list[str]


class Record(_RecordOptional):
    benchmark: str
    command: str
    commit: str
    date: str
    host: Host
    software: Software
    unit: str
    method: str
    rows: list[Row]


class _ResultFileOptional(TypedDict, total=False):
    hardware_class: str


class ResultFile(_ResultFileOptional):
    schema: str
    records: list[Record]


# --- facts of the machine and the tree ------------------------------------------------------------------------------


def _run(*cmd: str) -> str | None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def commit(explicit: str | None = None) -> str:
    """The commit measured: explicit, else $BENCH_COMMIT, else this tree's HEAD, else "unknown"."""
    value = explicit or os.environ.get("BENCH_COMMIT") or _run("git", "-C", str(ROOT), "rev-parse", "--short", "HEAD")
    return value.strip().lower() if value else "unknown"


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def host_facts(name: str | None = None, details: Mapping[str, str] | None = None) -> Host:
    """This machine: CPU model and usable cores, and the first GPU with its driver if nvidia-smi answers."""
    gpu = driver = None
    answer = _run("nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader")
    if answer:
        gpu, _, driver = (part.strip() for part in answer.splitlines()[0].partition(","))
    host: Host = {"cpu": cpu_model(), "cores": len(os.sched_getaffinity(0)), "gpu": gpu, "driver": driver or None}
    if name:
        host["name"] = name
    if details:
        host["details"] = dict(details)
    return host


def software_facts(other: Mapping[str, str] | None = None, with_torch: bool = True) -> Software:
    """Python, and torch with its CUDA version when torch imports (with_torch=False: a run that does not use it)."""
    torch_version = cuda = None
    if with_torch:
        try:
            import torch

            torch_version, cuda = str(torch.__version__), torch.version.cuda
        except ImportError:
            pass
    software: Software = {"torch": torch_version, "cuda": cuda, "python": platform.python_version()}
    if other:
        software["other"] = dict(other)
    return software


# --- rows and records -----------------------------------------------------------------------------------------------


def summarize(samples: Sequence[float]) -> tuple[float, list[float], int]:
    """(median, [lowest, highest], n) of a non-empty sequence of samples."""
    if not samples:
        raise ValueError("no samples to summarize")
    return statistics.median(samples), [min(samples), max(samples)], len(samples)


def row(case: str, contender: str, samples: Sequence[float] | None = None, *, median: float | None = None,
        peer: Peer | None = None, build: str | None = None, unit: str | None = None,
        extra: Mapping[str, float | str | None] | None = None) -> Row:
    """A row from its samples, or from a median alone (spread and n unknown)."""
    if samples is not None:
        mid, spread, n = summarize(samples)
        made: Row = {"case": case, "contender": contender, "median": mid, "spread": spread, "n": n}
    elif median is not None:
        made = {"case": case, "contender": contender, "median": median, "spread": None, "n": None}
    else:
        raise ValueError("a row needs samples or a median")
    if build is not None:
        made["build"] = build
    if unit is not None:
        made["unit"] = unit
    if peer is not None:
        made["peer"] = peer
    if extra:
        made["extra"] = dict(extra)
    return made


def make_record(benchmark: str, rows: list[Row], *, unit: str, method: str, command: str | None = None,
                commit_id: str | None = None, date: str | None = None, host: Host | None = None,
                software: Software | None = None, builds: Mapping[str, str] | None = None,
                notes: Iterable[str] = ()) -> Record:
    record: Record = {
        "benchmark": benchmark,
        "command": command or " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "commit": commit(commit_id),
        "date": date or now(),
        "host": host or host_facts(),
        "software": software or software_facts(),
        "unit": unit,
        "method": method,
        "rows": rows,
    }
    if builds:
        record["builds"] = dict(builds)
    if notes:
        record["notes"] = list(notes)
    return record


def result_file(records: list[Record], hardware_class: str | None = None) -> ResultFile:
    doc: ResultFile = {"schema": SCHEMA_ID, "records": records}
    if hardware_class:
        doc["hardware_class"] = hardware_class
    return doc


def validation_errors(doc: object) -> list[str]:
    """What is wrong with doc against result.schema.json (jsonschema when installed; else the required keys)."""
    try:
        import jsonschema  # type: ignore[import-untyped, unused-ignore]
    except ImportError:  # a CUDA host's bare Python: check the shape, the dev machine checks the rest
        return _shape_errors(doc)
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    return [f"{'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"
            for error in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))]


def _shape_errors(doc: object) -> list[str]:
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA_ID or not isinstance(doc.get("records"), list):
        return [f"(top): expected {{'schema': {SCHEMA_ID!r}, 'records': [...]}}"]
    errors = []
    for i, record in enumerate(doc["records"]):
        missing = [key for key in Record.__required_keys__ if key not in record]
        errors += [f"records/{i}: missing {key}" for key in sorted(missing)]
        for j, made in enumerate(record.get("rows", [])):
            errors += [f"records/{i}/rows/{j}: missing {key}" for key in sorted(Row.__required_keys__ - set(made))]
    return errors


def write(path: str | Path, records: list[Record], hardware_class: str | None = None) -> None:
    """Check, then write: a file that does not match the schema is never written."""
    doc = result_file(records, hardware_class)
    errors = validation_errors(doc)
    if errors:
        raise ValueError(f"{path}: not a valid benchmark record:\n  " + "\n  ".join(errors[:20]))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


# --- adapters for the scripts' own JSON -----------------------------------------------------------------------------

BENCH_IMG2GRAY_METHOD = (
    "bench_img2gray.py: CUDA events; 'single' = 50 single calls after warm-up, 'stream' and 'stream out=' = 200 "
    "back-to-back calls over inputs rotated through 512 MB, 'graph, per frame' = 20 replays of a CUDA graph of 16 "
    "frames, each taken once per round over 7 interleaved rounds; 'host' rows: wall clock of 2,000 calls on an 8x8 "
    "image, 7 rounds. Peer of the op's row: the device copy of the same bytes (large), NPP (frames), torch.add "
    "(per call); of every other contender: the op."
)


def _peer_of(contender: str, reference: str, ms: Mapping[str, float], mode: str) -> str | None:
    """The contender a row is compared with: the op's reference row against its peer, every other row against it."""
    if contender != reference:
        return reference
    if mode.startswith("host"):
        candidates = ("torch.add",)
    elif mode.startswith("graph"):
        candidates = ("graph: NPP pipeline",)
    elif mode.endswith("out="):
        candidates = ("NPP",)
    else:
        candidates = ("copy",)
    return next((name for name in candidates if name in ms), None)


def from_bench_img2gray(raw: Sequence[Mapping[str, Any]], build: str | None = None) -> list[Row]:
    """bench_img2gray.py --json rows -> record rows in us (spread and n where the script kept them)."""
    rows: list[Row] = []
    for item in raw:
        ms: Mapping[str, float] = item["ms"]
        mode, reference = str(item["mode"]), str(item.get("reference", "img2gray"))
        case = f"{item['case']} {item['dtype']} {mode}"
        spreads: Mapping[str, Sequence[float]] = item.get("spread_ms") or {}
        counts: Mapping[str, int] = item.get("n") or {}
        for contender, value in ms.items():
            if contender == "copy" and int(item.get("bytes_moved", 0)) == 0:
                continue  # per-call rows carry a stand-in copy column for the table only
            made = row(case, contender, median=value * 1e3, build=build)
            if contender in spreads:
                made["spread"] = [spreads[contender][0] * 1e3, spreads[contender][1] * 1e3]
                made["n"] = int(counts[contender])
            peer = _peer_of(contender, reference, ms, mode)
            if peer is not None:
                made["peer"] = {"contender": peer, "median": ms[peer] * 1e3}
            if item.get("bytes_moved"):
                made["extra"] = {"bytes_moved": int(item["bytes_moved"])}
            rows.append(made)
    return rows


AB_METHOD = (
    "gpu_run.sh ab/abclassic: bench_img2gray.py --sections host,small once per build per round, each in a fresh "
    "process, builds alternated; per contender the median over rounds of each round's median, spread and n over "
    "rounds. The 'per process' rows are ab_summary.py's columns: a ratio or difference taken inside each process, "
    "median over rounds."
)


def from_ab(data: object) -> list[Row]:
    """gpu_run.sh's ab.json / ab-classic.json -> per build: each contender over the rounds, and ab_summary's columns."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import ab_summary

    rounds = ab_summary.rounds_of(data)
    times: dict[tuple[str, str, str], list[float]] = {}
    peers: dict[tuple[str, str, str], str] = {}
    columns: dict[tuple[str, str], list[float]] = {}
    for path, raw in rounds.items():
        build = ab_summary.build_name(path)
        for made in from_bench_img2gray(raw):
            key = (build, made["case"], made["contender"])
            times.setdefault(key, []).append(made["median"])
            if "peer" in made:
                peers[key] = made["peer"]["contender"]
        timings = {str(item["case"]): item["ms"] for item in raw}
        for column, measure in ab_summary.COLUMNS.items():
            with contextlib.suppress(KeyError):  # a build without that contender (an older wheel)
                value = measure(timings)
                columns.setdefault((build, column), []).append(value)
    rows: list[Row] = []
    for (build, case, contender), samples in times.items():
        made = row(case, contender, samples, build=build)
        peer = peers.get((build, case, contender))
        if peer is not None and (build, case, peer) in times:
            made["peer"] = {"contender": peer, "median": statistics.median(times[(build, case, peer)])}
        rows.append(made)
    for (build, column), samples in columns.items():
        unit = "us" if column.endswith(", us") else "ratio"
        rows.append(row(f"per process: {column.removesuffix(', us')}", "img2gray", samples, build=build, unit=unit))
    return rows


BENCH_CPU_METHOD = (
    "bench_cpu.py: every row in fresh processes, the op alone in its own, torch's contenders and OpenCV/Pillow in "
    "others, process groups alternated (default twice); per round each contender makes two calls on the same input "
    "and the second is timed; median over all rounds. Peer of img2gray: OpenCV (out= against dst=)."
)
CPU_PEERS = {"img2gray": "opencv", "img2gray out=": "opencv dst="}


def from_bench_cpu(data: Mapping[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for item in data["rows"]:
        ms: Mapping[str, float] = item["ms"]
        case = f"{item['size']} {item['dtype']} x{item['threads']}"
        spreads: Mapping[str, Sequence[float]] = item.get("spread_ms") or {}
        counts: Mapping[str, int] = item.get("n") or {}
        for contender, value in ms.items():
            made = row(case, contender, median=value * 1e3)
            if contender in spreads:
                made["spread"] = [spreads[contender][0] * 1e3, spreads[contender][1] * 1e3]
                made["n"] = int(counts[contender])
            peer = CPU_PEERS.get(contender)
            if peer is not None and peer in ms:
                made["peer"] = {"contender": peer, "median": ms[peer] * 1e3}
            extra: dict[str, float | str | None] = {"bytes": int(item["bytes"]), "load_average": item["load_average"]}
            if contender in item.get("best_ms", {}):
                extra["best"] = item["best_ms"][contender] * 1e3
            if contender in item.get("page_faults_per_call", {}):
                extra["page_faults_per_call"] = item["page_faults_per_call"][contender]
            made["extra"] = extra
            rows.append(made)
    return rows


BENCH_HUB2WHEEL_METHOD = (
    "bench_hub2wheel.py: one fresh process per command, tools alternated within each phase, wall seconds; median "
    "over repeats. Peer of hub2wheel: kernels' to-wheel in the same phase. extra: max RSS (GNU time %M), wheels "
    "written and rewritten, bytes written."
)


def from_bench_hub2wheel(data: Mapping[str, Any]) -> list[Row]:
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for item in data["rows"]:
        groups.setdefault((str(item["case"]), str(item["phase"]), str(item["tool"])), []).append(item)
    medians = {key: statistics.median(float(i["seconds"]) for i in items) for key, items in groups.items()}
    rows: list[Row] = []
    for (case, phase, tool), items in groups.items():
        made = row(f"{case} {phase}", tool, [float(i["seconds"]) for i in items])
        if tool == "hub2wheel":
            peer = next((key for key in medians if key[:2] == (case, phase) and key[2].startswith("to-wheel")), None)
            if peer is not None:
                made["peer"] = {"contender": peer[2], "median": medians[peer]}
        made["extra"] = {
            "max_rss_mb": statistics.median(float(i["max_rss_mb"]) for i in items),
            "wheels": max(int(i["wheels"]) for i in items),
            "rewritten": max(int(i["rewritten"]) for i in items),
            "bytes_written": max(int(i["bytes_written"]) for i in items),
            "exit": max(int(i["exit"]) for i in items),
        }
        if "sizes" in data and case in data["sizes"]:
            made["extra"]["case_bytes"] = int(data["sizes"][case])
        rows.append(made)
    return rows


KINDS: dict[str, tuple[str, str, str, Callable[[Any], list[Row]]]] = {
    # kind: (benchmark, unit, method, converter)
    "bench_img2gray": ("bench_img2gray.py", "us", BENCH_IMG2GRAY_METHOD, from_bench_img2gray),
    "ab": ("gpu_run.sh ab rounds (bench_img2gray.py --sections host,small)", "us", AB_METHOD, from_ab),
    "bench_cpu": ("bench_cpu.py", "us", BENCH_CPU_METHOD, from_bench_cpu),
    "bench_hub2wheel": ("bench_hub2wheel.py", "s", BENCH_HUB2WHEEL_METHOD, from_bench_hub2wheel),
}


def convert(kind: str, data: object, **facts: Any) -> Record:
    """A raw JSON of one of KINDS -> a record; facts are make_record's keyword arguments."""
    benchmark, unit, method, converter = KINDS[kind]
    return make_record(facts.pop("benchmark", None) or benchmark, converter(data), unit=unit, method=method, **facts)


def records_of(path: str | Path) -> list[Record]:
    doc = json.loads(Path(path).read_text())
    errors = validation_errors(doc)
    if errors:
        raise ValueError(f"{path}: not a valid benchmark record:\n  " + "\n  ".join(errors[:20]))
    records: list[Record] = doc["records"]
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="action", required=True)
    conv = sub.add_parser("convert", help="a script's --json output -> a record file")
    conv.add_argument("kind", choices=sorted(KINDS))
    conv.add_argument("raw", type=Path)
    conv.add_argument("-o", "--out", type=Path, required=True)
    conv.add_argument("--commit", help="the commit measured (default: $BENCH_COMMIT, else git)")
    conv.add_argument("--command", help="how the benchmark was run (default: this command)")
    conv.add_argument("--benchmark", help="what was measured (default: the script's name)")
    conv.add_argument("--host-name", help="a short name for the machine, e.g. 'H100 machine'")
    conv.add_argument("--hardware-class", help="e.g. h100, h200, dev-cpu")
    conv.add_argument("--build", action="append", default=[], metavar="NAME=WHAT", help="what a build name means")
    conv.add_argument("--other", action="append", default=[], metavar="LIB=VERSION", help="another library's version")
    conv.add_argument("--note", action="append", default=[])
    check = sub.add_parser("validate", help="check files against result.schema.json")
    check.add_argument("files", nargs="+", type=Path)
    merge = sub.add_parser("merge", help="the records of several files in one")
    merge.add_argument("out", type=Path)
    merge.add_argument("files", nargs="+", type=Path)
    merge.add_argument("--hardware-class")
    args = parser.parse_args(argv)
    try:
        if args.action == "convert":
            data = json.loads(args.raw.read_text())
            record = convert(args.kind, data, commit_id=args.commit, command=args.command, benchmark=args.benchmark,
                             host=host_facts(args.host_name),
                             software=software_facts(dict(o.split("=", 1) for o in args.other),
                                                     with_torch=args.kind != "bench_hub2wheel"),
                             builds=dict(b.split("=", 1) for b in args.build), notes=args.note)
            write(args.out, [record], args.hardware_class)
        elif args.action == "validate":
            for path in args.files:
                print(f"{path}: {len(records_of(path))} record(s), valid")
        else:
            write(args.out, [r for path in args.files for r in records_of(path)], args.hardware_class)
    except (OSError, ValueError, KeyError) as exc:
        print(f"record: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
