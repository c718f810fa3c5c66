"""Exit codes and messages of layerbench-report: 0 with report.md/report.html/CSVs written; 2 on bad input.

usage: cli_check.py LAYERBENCH_REPORT DATA_DIR WORK_DIR
"""
import os
import shutil
import subprocess
import sys


def run(args):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def main():
    exe, data, work = sys.argv[1:4]
    work = os.path.join(work, "cli_check")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    out = os.path.join(work, "ok")
    # Real outputs (lb.fixture.outputs): a study, a sweep, a profile and the sweep's GB JSON.
    rc, stdout, _ = run([exe, os.path.join(data, "study.jsonl"), os.path.join(data, "coll.json"),
                         os.path.join(data, "moe.json"), os.path.join(data, "coll_gb.json"),
                         os.path.join(data, "moe.csv"), os.path.join(data, "attn.csv"), "-o", out,
                         "--resamples", "2000"])
    expect(rc == 0, f"good input: rc {rc}")
    for name in ("report.md", "report.html"):
        expect(os.path.exists(os.path.join(out, name)), f"{name} missing")
    csvs = sorted(f for f in os.listdir(out) if f.endswith(".csv"))
    md = open(os.path.join(out, "report.md"), encoding="utf-8").read() if rc == 0 else ""
    expect("## Results (CSV) — moe" in md and "## Results (CSV) — attn" in md, "the binaries' CSVs rendered")
    expect("## Google Benchmark results" in md, "the GB JSON rendered")
    for name in ("study-pairs.csv", "coll-results.csv", "moe-results.csv", "moe-pairs.csv"):
        expect(name in csvs, f"{name} missing from {csvs}")

    truncated = os.path.join(work, "cut.json")
    with open(os.path.join(data, "coll.json")) as f:
        text = f.read()
    with open(truncated, "w") as f:
        f.write(text[: len(text) // 2])
    rc, _, err = run([exe, truncated, "-o", os.path.join(work, "bad")])
    expect(rc == 2 and "truncated" in err and "cut.json" in err, f"truncated JSON: rc {rc}, stderr {err!r}")
    rc, _, err = run([exe, os.path.join(work, "missing.json"), "-o", os.path.join(work, "bad")])
    expect(rc == 2 and "cannot open" in err, f"missing file: rc {rc}, stderr {err!r}")
    rc, _, _ = run([exe, "-o", os.path.join(work, "bad")])
    expect(rc == 2, f"no inputs: rc {rc}")

    for f in failures:
        print("FAIL:", f)
    print("PASS" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
