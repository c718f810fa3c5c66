#!/usr/bin/env python3
"""Output test of layerbench-coll on the host backend (4 ranks): the acceptance command of the
collective-sweep issue, its layerbench JSON, CSV, and the Google Benchmark JSON that GB's
tools/compare.py reads (benchmarks[] with repetitions and aggregates, manual time)."""
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

mpiexec, binary = sys.argv[1], sys.argv[2]
tmp = Path(tempfile.mkdtemp())
ops = ["all_gather", "all_to_all", "all_to_allv", "all_reduce", "reduce_scatter", "scalar_exchange"]
cmd = [mpiexec, "-np", "4", "--oversubscribe", binary, "--backend", "host", "--ops", ",".join(ops),
       "-b", "1K", "-e", "1M", "-f", "4", "--iterations", "8", "--warmup", "2", "--json", str(tmp / "out.json"),
       "--csv", str(tmp / "out.csv"), "--benchmark_format=json", f"--benchmark_out={tmp / 'gb.json'}"]
proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
# --benchmark_format=json takes standard output: the table goes to standard error.
assert "out of bounds values : 0 OK" in proc.stderr, proc.stderr[-2000:]
assert json.loads(proc.stdout)["benchmarks"], proc.stdout[-2000:]

doc = json.loads((tmp / "out.json").read_text())
assert doc["schema"] == "layerbench/2" and doc["binary"] == "layerbench-coll" and doc["complete"] is True
assert "Avg bus bandwidth" in proc.stderr, proc.stderr[-2000:]
ctx = doc["context"]
for key in ("date", "git_sha", "backend", "world_size", "versions", "ranks", "argv", "timing"):
    assert key in ctx, key
assert ctx["backend"] == "host" and ctx["world_size"] == 4 and len(ctx["ranks"]) == 4
assert ctx["timing"]["iterations"] == 8 and ctx["timing"]["rank_combine"] == "max per iteration"
seen = set()
for r in doc["results"]:
    seen.add(r["params"]["op"])
    assert len(r["samples_ms"]) == 8 and r["min_ms"] <= r["median_ms"] <= r["max_ms"]
    assert r["metrics"]["wrong"] == 0
    for k in ("time_us", "wrong"):
        assert k in r["metrics"], k
    # Every measurement is a probe declaring nccl-tests' size; its rates come from that work.
    assert r["role"] == "probe" and r["work"]["bytes"] == r["params"]["bytes"], r
    for k in ("algbw_bytes_per_s", "busbw_bytes_per_s"):
        assert r["rates"][k] > 0, (k, r)
    if r["params"]["op"] not in ("scalar_exchange", "scalar_exchange_device"):
        assert r["metrics"]["agg_time_us"] > 0 and r["metrics"]["agg_busbw_bytes_per_s"] > 0, r
        assert r["params"]["bytes"] >= 1024
assert seen >= set(ops) | {"scalar_exchange_device"}, seen
# all_gather 1 MiB on 4 ranks: busbw = algbw * 3/4 exactly (nccl-tests factor).
ag = [r for r in doc["results"] if r["params"]["op"] == "all_gather"][0]
assert ag["work"]["bus_factor"] == 0.75
assert abs(ag["rates"]["busbw_bytes_per_s"] - 0.75 * ag["rates"]["algbw_bytes_per_s"]) < 1e-6

rows = list(csv.DictReader((tmp / "out.csv").open()))
assert len(rows) == len(doc["results"]) and "busbw_bytes_per_s" in rows[0] and "median_ms" in rows[0]
# The CSV's rates are numbers, row for row the JSON's (both from the declared work).
for row, r in zip(rows, doc["results"]):
    assert row["name"] == r["name"] and row["role"] == "probe", row
    assert abs(float(row["busbw_bytes_per_s"]) - r["rates"]["busbw_bytes_per_s"]) <= 1e-6 * r["rates"]["busbw_bytes_per_s"]

gb = json.loads((tmp / "gb.json").read_text())
assert "context" in gb and gb["benchmarks"], "GB JSON without benchmarks"
its = [b for b in gb["benchmarks"] if b["run_type"] == "iteration"]
aggs = [b for b in gb["benchmarks"] if b["run_type"] == "aggregate"]
assert len(its) == 8 * len(doc["results"]), (len(its), len(doc["results"]))
assert {a["aggregate_name"] for a in aggs} >= {"mean", "median", "stddev"}
first = its[0]
assert first["repetitions"] == 8 and first["iterations"] == 1 and first["time_unit"] in ("ns", "us", "ms", "s")
assert first["name"].startswith("layerbench-coll/") and "manual_time" in first["name"]
# GB reports exactly the rank-max samples of the layerbench JSON.
name_of = its[0]["run_name"]
to_ms = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
reps = sorted(b["real_time"] * to_ms[b["time_unit"]] for b in its if b["run_name"] == name_of)
assert all(abs(a - b) < 1e-6 * max(1.0, b) for a, b in zip(reps, sorted(doc["results"][0]["samples_ms"]))), reps
print("PASS")
