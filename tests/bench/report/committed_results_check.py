#!/usr/bin/env python3
"""Every committed result file under results/ goes through layerbench-report: it renders (exit 0)
or, for another tool's JSON (torch's side-by-side figures), is skipped with its reason (exit 2,
"skipped: ..." on stderr). No rendered figure reads 0.000: a zero prints as 0 and a non-zero value
keeps a significant digit. usage: committed_results_check.py REPORT RESULTS_DIR WORK_DIR"""
import os
import re
import subprocess
import sys

ZERO = re.compile(r"(?<![\w.])[-+]?0\.0+(?![\d])")


def main():
    exe, results, work = sys.argv[1:4]
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(results) for f in fs
                   if f.endswith((".json", ".jsonl")))
    bad = []
    for i, path in enumerate(files):
        out = os.path.join(work, "committed", str(i))
        r = subprocess.run([exe, path, "--output-dir", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=120)
        if r.returncode == 2 and "skipped:" in r.stderr:
            continue
        if r.returncode != 0:
            bad.append(f"{path}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
            continue
        md = open(os.path.join(out, "report.md"), encoding="utf-8").read()
        zeros = [m.group(0) for m in ZERO.finditer(md)]
        if zeros:
            line = next(l for l in md.splitlines() if ZERO.search(l))
            bad.append(f"{path}: {len(zeros)} figure(s) print as 0.000, e.g. {line[:160]!r}")
    print(f"{len(files)} committed result files, {len(bad)} bad")
    for b in bad:
        print("  " + b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
