"""benchmarks/record.py and benchmarks/result.schema.json: every result file in the tree is a valid record, the
schema itself is a valid JSON Schema, and the writer refuses what the schema refuses."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import ab_summary  # noqa: E402
import record  # noqa: E402

RESULTS = sorted((BENCHMARKS / "results").glob("*.json"))


def test_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(json.loads(record.SCHEMA_PATH.read_text()))


def test_results_folder_holds_only_records() -> None:
    assert RESULTS, "benchmarks/results/ holds no result file"
    assert sorted(p.name for p in (BENCHMARKS / "results").iterdir()) == [p.name for p in RESULTS]


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_every_result_file_matches_the_schema(path: Path) -> None:
    doc = json.loads(path.read_text())
    assert record.validation_errors(doc) == []
    assert doc.get("hardware_class") == path.stem  # results/<class>.json
    for rec in doc["records"]:
        assert rec["commit"] != "unknown", f"{path.name}: {rec['benchmark']} names no commit"
        for made in rec["rows"]:
            if made["spread"] is not None:
                low, high = made["spread"]
                assert low <= made["median"] <= high, made


def _record(rows: list[record.Row]) -> record.Record:
    host: record.Host = {"cpu": "test CPU", "cores": 2, "gpu": None, "driver": None}
    software: record.Software = {"torch": None, "cuda": None, "python": "3.11.0"}
    return record.make_record("test", rows, unit="us", method="test", command="test", commit_id="abc1234",
                              date="2026-12-06T12:00Z", host=host, software=software)


def test_write_then_read(tmp_path: Path) -> None:
    rows = [record.row("720p", "img2gray", [5.0, 4.0, 6.0], peer={"contender": "NPP", "median": 5.5}),
            record.row("720p", "NPP", median=5.5)]
    record.write(tmp_path / "x.json", [_record(rows)], "dev-cpu")
    (back,) = record.records_of(tmp_path / "x.json")
    assert back["rows"][0] == {"case": "720p", "contender": "img2gray", "median": 5.0, "spread": [4.0, 6.0], "n": 3,
                               "peer": {"contender": "NPP", "median": 5.5}}
    assert back["rows"][1]["spread"] is None and back["rows"][1]["n"] is None


@pytest.mark.parametrize("breaks", [
    lambda r: r.update(commit="not a commit"),
    lambda r: r.update(date="yesterday"),
    lambda r: r.update(unit="furlongs"),
    lambda r: r.update(rows=[]),
    lambda r: r["rows"][0].update(spread=[1.0]),
    lambda r: r["rows"][0].pop("n"),
    lambda r: r["host"].pop("driver"),
])
def test_writer_refuses_what_the_schema_refuses(tmp_path: Path, breaks: object) -> None:
    made = _record([record.row("720p", "img2gray", [5.0])])
    breaks(made)  # type: ignore[operator]
    with pytest.raises(ValueError, match="not a valid benchmark record"):
        record.write(tmp_path / "x.json", [made])
    assert not (tmp_path / "x.json").exists()


def test_shape_check_without_jsonschema_finds_missing_keys() -> None:
    made = _record([record.row("720p", "img2gray", [5.0])])
    del made["rows"][0]["n"]  # type: ignore[misc]
    del made["host"]  # type: ignore[misc]
    assert record._shape_errors(record.result_file([made])) == ["records/0: missing host", "records/0/rows/0: missing n"]


def _bench_rows(npp: float, wrapper: float) -> list[dict[str, object]]:
    """bench_img2gray.py --sections host,small rows, as gpu_run.sh's ab rounds hold them."""
    per_call = {"img2gray": 0.007, "img2gray(out=)": 0.005, "torch.add": 0.007, "op._img2gray_into": 0.005,
                "op._img2gray_into, empty image": 0.001, "torch.ops.aten.alias": 0.0015, "op._img2gray_no_grad": 0.0065,
                "copy": 0.007}
    frame = {"copy": 0.006, "img2gray(out=)": wrapper, "NPP": npp}
    return [
        {"case": "8x8 per call", "dtype": "uint8", "mode": "host cuda", "bytes_moved": 0, "ms": per_call,
         "reference": "img2gray"},
        {"case": "1920x1080", "dtype": "uint8", "mode": "stream out=", "bytes_moved": 8294400, "ms": frame,
         "reference": "img2gray(out=)"},
        {"case": "1280x720", "dtype": "uint8", "mode": "stream out=", "bytes_moved": 3686400, "ms": frame,
         "reference": "img2gray(out=)"},
    ]


def test_ab_rounds_become_rows_with_spread_and_ab_summary_columns() -> None:
    rounds = {"/tmp/ab-stable-1.json": _bench_rows(0.0055, 0.0050), "/tmp/ab-stable-2.json": _bench_rows(0.0060, 0.0050)}
    rows = record.from_ab(rounds)
    frame = next(r for r in rows if r["case"] == "1280x720 uint8 stream out=" and r["contender"] == "img2gray(out=)")
    assert frame["n"] == 2 and frame["build"] == "stable" and frame["peer"]["contender"] == "NPP"
    assert frame["peer"]["median"] == pytest.approx(5.75)
    column = next(r for r in rows if r["case"] == "per process: 720p NPP / ours")
    assert column["unit"] == "ratio" and column["spread"] == pytest.approx([1.1, 1.2])
    assert "copy" not in {r["contender"] for r in rows if r["case"].startswith("8x8")}
    assert ab_summary.table(rounds).count("| stable (2) |") == 1  # the same rounds ab_summary reads
    assert record.validation_errors(record.result_file([_record(rows)])) == []


def test_bench_hub2wheel_rows_compare_with_to_wheel() -> None:
    raw = {"sizes": {"random-8MiB": 84054497}, "rows": [
        {"case": "random-8MiB", "tool": tool, "phase": "warm", "repeat": repeat, "seconds": seconds, "max_rss_mb": 60.0,
         "exit": 0, "wheels": 10, "rewritten": 10, "bytes_written": 84000000}
        for tool, repeat, seconds in [("to-wheel 0.11.3", 0, 3.0), ("hub2wheel", 0, 0.5), ("hub2wheel", 1, 0.7)]]}
    rows = {r["contender"]: r for r in record.from_bench_hub2wheel(raw)}
    assert rows["hub2wheel"]["median"] == pytest.approx(0.6) and rows["hub2wheel"]["n"] == 2
    assert rows["hub2wheel"]["peer"] == {"contender": "to-wheel 0.11.3", "median": 3.0}
    assert "peer" not in rows["to-wheel 0.11.3"]
