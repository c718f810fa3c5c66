#!/usr/bin/env python3
"""Google Benchmark output of the real layerbench-coll (host backend, 2 ranks), as its users read it:
   1. --benchmark_format=json with --benchmark_out: standard output is one JSON document (the
      table goes to standard error), the file too; times in a unit where they do not round to 0;
   2. Google Benchmark's own compare.py (Debian libbenchmark-tools) on two runs: every Time
      Old/New cell of a sample, mean and median row is non-zero;
   3. --benchmark_filter measures only what it selects (the layerbench JSON holds only those);
   4. --benchmark_list_tests=true prints the names, measures nothing and writes no file.
Part 2 is skipped (exit 77) when compare.py or the scipy/numpy it imports are missing.
Usage: gbench_test.py MPIEXEC LAYERBENCH-COLL [COMPARE.PY]"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SKIP = 77
mpiexec, binary = sys.argv[1], sys.argv[2]
compare = sys.argv[3] if len(sys.argv) > 3 else ""
tmp = Path(tempfile.mkdtemp())
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
base = [mpiexec, "-np", "2", "--oversubscribe", binary, "--backend", "host", "--ops", "all_gather,all_reduce",
        "-b", "1K", "-e", "256K", "-f", "16", "--iterations", "9", "--warmup", "2"]


def run(*extra):
    p = subprocess.run(base + list(extra), capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, f"{extra}: rc {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    return p


# 1. Pure JSON on stdout, the same report in the file. The two runs compare.py reads name their
# unit (compare.py compares a benchmark only between files of one unit).
for arm in ("a", "b"):
    p = run("--benchmark_format=json", f"--benchmark_out={tmp / (arm + '.json')}", "--benchmark_time_unit=us")
    doc = json.loads(p.stdout)  # the whole of stdout is one document
    assert "out of bounds values : 0 OK" in p.stderr, p.stderr[-2000:]
    ctx = doc["context"]
    assert ctx["backend"] == "host" and ctx["ranks"] == "2" and ctx["git_sha"], ctx
    filed = json.loads((tmp / (arm + ".json")).read_text())
    assert [b["name"] for b in filed["benchmarks"]] == [b["name"] for b in doc["benchmarks"]]
    for b in doc["benchmarks"]:
        assert b["cpu_time"] == b["real_time"], b
        if b["run_type"] == "iteration":
            assert b["repetitions"] == 9 and b["iterations"] == 1, b
            assert b["busbw"] > 0 and b["bytes_per_second"] > 0, b
        if b.get("aggregate_name") != "cv":
            assert b["time_unit"] == "us", b
p = run("--benchmark_format=json")  # no --benchmark_out: stdout is still pure JSON
medians = [b for b in json.loads(p.stdout)["benchmarks"] if b.get("aggregate_name") == "median"]
assert len(medians) == 12, medians
for b in medians:  # no unit given: the largest in which the median is >= 1
    assert 1 <= b["real_time"] < 1000 or (b["time_unit"] == "ns" and b["real_time"] < 1), b

# 3. The filter selects what is measured.
p = run("--benchmark_filter=all_reduce.*in_place:true", f"--json={tmp / 'f.json'}",
        "--benchmark_report_aggregates_only=true", "--benchmark_format=json")
measured = json.loads((tmp / "f.json").read_text())["results"]
assert measured and all(m["name"] == "all_reduce" and m["params"]["in_place"] for m in measured), measured
gb = json.loads(p.stdout)["benchmarks"]
assert gb and all(b["run_type"] == "aggregate" for b in gb), gb
assert {b["aggregate_name"] for b in gb} == {"mean", "median", "stddev", "cv"}

# 4. The list measures nothing.
p = run("--benchmark_list_tests=true", f"--json={tmp / 'l.json'}")
names = p.stdout.split()
assert len(names) == 3 * 4 and all(n.startswith("layerbench-coll/") and n.endswith("/manual_time") for n in names), names
assert not (tmp / "l.json").exists() and "time(us)" not in p.stderr, p.stderr

# 2. compare.py: it imports scipy and numpy; the distro's interpreter has them when the packages are in.
if not compare or not Path(compare).is_file():
    print("SKIP: compare.py (Debian package libbenchmark-tools) not found")
    sys.exit(SKIP)
python = next((py for py in (sys.executable, "/usr/bin/python3")
               if Path(py).exists() and subprocess.run([py, "-c", "import scipy, numpy"],
                                                       capture_output=True).returncode == 0), None)
if python is None:
    print("SKIP: compare.py needs scipy and numpy (python3-scipy, python3-numpy)")
    sys.exit(SKIP)
c = subprocess.run([python, compare, "--no-color", "benchmarks", str(tmp / "a.json"), str(tmp / "b.json")],
                   capture_output=True, text=True, timeout=120)
assert c.returncode == 0, c.stdout[-2000:] + c.stderr[-2000:]
lines = c.stdout.splitlines()
header = next(i for i, line in enumerate(lines) if line.startswith("Benchmark"))
assert lines[header].split()[-6:-4] == ["Time", "Old"] or "Time Old" in lines[header], lines[header]
rows = 0
for line in lines[header + 2:]:
    cells = line.split()
    if len(cells) < 7 or not cells[0].startswith("layerbench-coll/"):
        continue
    if cells[0].endswith(("_stddev", "_cv", "_pvalue")):
        continue  # a spread may round to 0; cv is a fraction; the U test has no times
    # compare.py prints whole units (us here): a fast sample of a loaded run can print 0, so the
    # check is that each row carries both times, not how large they came out.
    time_old, time_new = float(cells[3]), float(cells[4])
    assert time_old >= 0 and time_new >= 0, line
    rows += 1
assert rows == 12 * (9 + 2), (rows, c.stdout[-3000:])  # 12 benchmarks x (9 samples + mean + median)
print("PASS")
