#!/usr/bin/env python3
"""Runs one layerbench-moe profile and prints the medians an A/B study reads.

usage: moe_medians.py JSON_PATH COMPONENT[,COMPONENT...] -- BINARY ARGS...
The binary is run with `--json JSON_PATH` appended; its exit status is passed on. On success one
line `NAME_ms=MEDIAN` per component is printed (the median of the run's iterations, rank-max), for
`layerbench-ab run --metric 'NAME(ms)=regex:NAME_ms=([0-9.eE+-]+)'`.
"""
import json
import subprocess
import sys


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.exit("usage: moe_medians.py JSON_PATH COMPONENT[,COMPONENT...] -- BINARY ARGS...")
    path, names, cmd = sys.argv[1], sys.argv[2].split(","), sys.argv[4:]
    rc = subprocess.call(cmd + ["--json", path])
    if rc != 0:
        sys.exit(rc)
    doc = json.load(open(path))
    medians = {r["name"]: r["median_ms"] for r in doc["results"]}
    for name in names:
        if name not in medians:
            sys.exit(f"moe_medians.py: no component '{name}' in {path}")
        print(f"{name}_ms={medians[name]!r}")


if __name__ == "__main__":
    main()
