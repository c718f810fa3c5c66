#!/usr/bin/env python3
"""Per-kernel time summary of an `ncu --csv --metrics gpu__time_duration.sum` log.

usage: ncu_summary.py LOG.csv [TOP]
Prints, per kernel name, the launch count, mean and total duration (us), sorted by total.
"""
import csv
import sys
from collections import defaultdict


def main() -> int:
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    with open(path, newline="") as f:
        lines = [ln for ln in f if ln.startswith('"')]  # drop ncu's own log lines
    rows = csv.DictReader(lines)
    total = defaultdict(float)
    count = defaultdict(int)
    for r in rows:
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = r.get("Metric Unit", "ns")
        v = float(r["Metric Value"].replace(",", ""))
        scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}.get(unit, 1e-3)
        name = r["Kernel Name"][:90]
        total[name] += v * scale
        count[name] += 1
    print(f"| kernel | launches | mean (us) | total (us) |\n|---|---:|---:|---:|")
    for name in sorted(total, key=total.get, reverse=True)[:top]:
        print(f"| `{name}` | {count[name]} | {total[name] / count[name]:.1f} | {total[name]:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
