#!/usr/bin/env python3
"""layerbench-coll streams: the table's first row is on the output stream while the sweep is
still running, and an interrupted sweep (SIGINT to mpirun) leaves valid JSON and CSV holding
the sizes it finished, marked incomplete.

usage: streaming_test.py MPIEXEC LAYERBENCH_COLL
"""
import csv
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

mpiexec, binary = sys.argv[1], sys.argv[2]
tmp = tempfile.mkdtemp()
out_json, out_csv = os.path.join(tmp, "sweep.json"), os.path.join(tmp, "sweep.csv")
# Sizes up to 256 MiB with many iterations: tens of seconds on two cores, far longer than the
# first rows take.
cmd = [mpiexec, "-np", "2", "--oversubscribe", binary, "--backend", "host", "--ops", "all_gather", "-b", "8",
       "-e", "256M", "-f", "2", "--warmup", "1", "--iterations", "100", "--json", out_json, "--csv", out_csv]
env = dict(os.environ, LAYERBENCH_PROGRESS="off")
proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
row = re.compile(r"^\s+all_gather\s+(\d+)\s+bf16\s+\|")
rows = []
start = time.monotonic()
for line in proc.stdout:
    if row.match(line):
        rows.append(line)
        if len(rows) == 1:
            first_at = time.monotonic() - start
            assert proc.poll() is None, "the first row came only after the sweep ended"
        if len(rows) == 3:
            break
assert len(rows) == 3, f"only {len(rows)} rows before the output closed: {proc.stderr.read()[-2000:]}"
assert proc.poll() is None, "the sweep ended before the test could interrupt it"

# The files follow the rows: wait until they hold the third step, then interrupt.
deadline = time.monotonic() + 120  # a watchdog: the files follow the rows within a step
while time.monotonic() < deadline:
    try:
        if json.load(open(out_json))["progress"]["steps_done"] >= 3:
            break
    except (OSError, ValueError, KeyError):
        pass
    time.sleep(0.1)
proc.send_signal(signal.SIGINT)
try:
    proc.communicate(timeout=120)  # a watchdog: the stop takes about a second, a hang forever
except subprocess.TimeoutExpired:
    proc.kill()
    raise AssertionError("mpirun did not stop within 120 s of SIGINT")

doc = json.load(open(out_json))  # valid JSON, whatever moment the signal hit
assert doc["schema"] == "layerbench/2" and doc["complete"] is False, doc.get("complete")
done = doc["progress"]["steps_done"]
assert 3 <= done < doc["progress"]["steps_total"], doc["progress"]
sizes = sorted({r["params"]["bytes"] for r in doc["results"]})
assert len(doc["results"]) == 2 * done and sizes[:3] == [8, 16, 32], sizes  # out-of-place + in-place per size
for r in doc["results"]:
    assert len(r["samples_ms"]) == 100 and r["metrics"]["wrong"] == 0, r["params"]
# The CSV is written just before the JSON: the signal may fall between them, so it holds the
# JSON's sizes and at most one more.
rows_csv = list(csv.DictReader(open(out_csv)))
assert len(rows_csv) in (len(doc["results"]), len(doc["results"]) + 2), (len(rows_csv), len(doc["results"]))
print(f"PASS: first row after {first_at:.2f}s; interrupted after {done} of {doc['progress']['steps_total']} sizes")
