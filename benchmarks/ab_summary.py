"""The per-build table of ``gpu_run.sh ab``/``abclassic`` rounds: ``python benchmarks/ab_summary.py ab-classic.json``.

Each round is one fresh process per build, and these VMs put each process in a fast or a slow state (every
contender in it, NPP and torch included, 1.3-1.6 us or 2.2-3.0 us for ``torch.ops.aten.alias``), so the columns are
ratios and differences taken inside each process, and each cell is their median over the rounds (range after it).
docs/performance.md's small-frame table is this script's output (record.py's ``ab`` adapter keeps its columns).

* NPP / ours at 720p and 1080p: back-to-back ``img2gray(x, out=o)`` against ``nppiRGBToGray_8u_C3C1R_Ctx``
  (above 1: ours is faster);
* the allocating wrapper ``img2gray(x)`` and ``img2gray(x, out=o)`` over ``torch.add`` on an 8x8 image (below 1:
  ours is cheaper per call);
* the call without its launch (``_img2gray_into`` on an empty image) minus ``torch.ops.aten.alias``, a no-op
  ``torch.ops`` call, in us;
* the allocating private op minus the out= one (``_img2gray_no_grad`` - ``_img2gray_into``), in us: what
  allocating and returning a tensor costs.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections.abc import Callable, Mapping
from typing import Any

Timings = Mapping[str, Mapping[str, float]]  # case -> contender -> ms

COLUMNS: dict[str, Callable[[Timings], float]] = {
    "720p NPP / ours": lambda t: t["1280x720"]["NPP"] / t["1280x720"]["img2gray(out=)"],
    "1080p NPP / ours": lambda t: t["1920x1080"]["NPP"] / t["1920x1080"]["img2gray(out=)"],
    "`img2gray(x)` / `torch.add`": lambda t: t["8x8 per call"]["img2gray"] / t["8x8 per call"]["torch.add"],
    "`img2gray(x, out=o)` / `torch.add`": (
        lambda t: t["8x8 per call"]["img2gray(out=)"] / t["8x8 per call"]["torch.add"]
    ),
    "no-launch path - `aten.alias`, us": lambda t: 1000 * (
        t["8x8 per call"]["op._img2gray_into, empty image"] - t["8x8 per call"]["torch.ops.aten.alias"]
    ),
    "`_no_grad` - `_into`, us": lambda t: 1000 * (
        t["8x8 per call"]["op._img2gray_no_grad"] - t["8x8 per call"]["op._img2gray_into"]
    ),
}


def build_name(path: str) -> str:
    """``/tmp/ab-classic-2.json`` -> ``classic``: gpu_run.sh names each round's file ab-<build>-<round>.json."""
    found = re.fullmatch(r"(?:.*/)?ab-(.+)-\d+\.json", path)
    if found is None:
        raise ValueError(f"expected a round file named ab-<build>-<round>.json, got {path!r}")
    return found.group(1)


Rounds = dict[str, list[dict[str, Any]]]  # round file -> bench_img2gray.py's JSON rows


def rounds_of(data: object) -> Rounds:
    """gpu_run.sh's {round file: rows}; also a file that gathers several of those under names (gpu_run.sh before ab and abclassic wrote one JSON each)."""
    if not isinstance(data, dict) or not data:
        got = "an empty object" if isinstance(data, dict) else f"a JSON {type(data).__name__}"
        raise ValueError(f"expected {{round file: rows}} as gpu_run.sh writes it, got {got}")
    if all(isinstance(rows, list) for rows in data.values()):
        return data
    if all(isinstance(group, dict) for group in data.values()):
        return {path: rows for group in data.values() for path, rows in rounds_of(group).items()}
    raise ValueError("expected {round file: rows} as gpu_run.sh writes it, or named groups of those")


def table(rounds: Rounds) -> str:
    """A markdown table, one row per build (in the order of the first rounds)."""
    cells: dict[str, dict[str, list[float]]] = {}
    for path, rows in rounds.items():
        timings: Timings = {str(row["case"]): row["ms"] for row in rows}
        per_build = cells.setdefault(build_name(path), {column: [] for column in COLUMNS})
        for column, measure in COLUMNS.items():
            per_build[column].append(measure(timings))
    lines = ["| build (rounds) | " + " | ".join(COLUMNS) + " |", "|---|" + "---:|" * len(COLUMNS)]
    for build, values in cells.items():
        rendered = [f"{statistics.median(v):.2f} ({min(v):.2f} to {max(v):.2f})" for v in values.values()]
        lines.append(f"| {build} ({len(next(iter(values.values())))}) | " + " | ".join(rendered) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", help="ab.json or ab-classic.json as gpu_run.sh writes it")
    args = parser.parse_args()
    try:
        with open(args.json, encoding="utf-8") as file:
            print(table(rounds_of(json.load(file))))
    except (OSError, ValueError) as exc:
        parser.exit(2, f"ab_summary: {args.json}: {exc}\n")
    except KeyError as exc:
        parser.exit(2, f"ab_summary: {args.json}: expected rows of `bench_img2gray.py --sections host,small`, "
                       f"got none for {exc}\n")


if __name__ == "__main__":
    main()
