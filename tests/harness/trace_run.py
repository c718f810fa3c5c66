#!/usr/bin/env python3
"""--trace end to end on the host backend: layerbench-moe, -attn and -coll at NP ranks each write a
trace that trace_check.py accepts (every slice nested in its parent, per-track times monotone,
one track per rank and stream, slices = the samples of the run's --json); an unwritable --trace path is exit 2
on every rank before any timing.

usage: trace_run.py MPIEXEC NP MOE ATTN COLL WORK_DIR
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, expect=0):
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    if r.returncode != expect:
        print(r.stdout[-4000:])
        sys.exit(f"exit {r.returncode}, expected {expect}: {' '.join(cmd)}")
    return r.stdout


def main():
    mpiexec, np, moe, attn, coll, work = sys.argv[1:7]
    os.makedirs(work, exist_ok=True)
    mpi = [mpiexec, "-np", np, "--oversubscribe"]
    p = lambda name: os.path.join(work, f"{name}-np{np}.json")
    common = ["--backend", "host", "--warmup", "1", "--trace-iterations", "2"]
    cases = {
        "moe": [moe, "--hidden", "64", "--moe-heads", "4", "--experts", "4", "--topk", "2", "--intermediate", "16",
                "--tokens", "16", "--iterations", "3", "--layers", "2"],
        "std": [moe, "--model", "qwen3-30b-a3b", "--hidden", "64", "--experts", "8", "--topk", "2",
                "--moe-intermediate", "16", "--tokens", "16", "--iterations", "3"],
        "attn": [attn, "--dtype", "fp32", "--head-dim", "16", "--heads", "8", "--seqs", "64", "--iterations", "3",
                 "--topologies", "all"],
        "coll": [coll, "-b", "8", "-e", "1K", "-f", "4", "--iterations", "3"],
    }
    failed = 0
    for name, cmd in cases.items():
        trace = p(name)
        if os.path.exists(trace):
            os.remove(trace)
        run(mpi + cmd + common + ["--trace", trace, "--json", p(name + "-results")])
        check = [sys.executable, os.path.join(HERE, "trace_check.py"), trace, "--ranks", np, "--expect-collectives",
                 "--results", p(name + "-results")]
        if name != "coll":  # layerbench-coll runs free (--align none): no barrier before an iteration
            check.append("--expect-waits")
        print("+", " ".join(check), flush=True)
        failed += subprocess.run(check).returncode != 0

    # An unwritable trace path: exit 2 on every rank, one message, nothing timed or written.
    bad = os.path.join(work, "no-such-dir", "t.json")
    results = p("bad-results")
    if os.path.exists(results):
        os.remove(results)
    out = run(mpi + cases["coll"] + common + ["--trace", bad, "--json", results], expect=2)
    if "--trace" not in out or os.path.exists(results) or "all_gather" in out:
        print(out)
        print("FAIL: the unwritable --trace was not refused before any timing with a message naming --trace")
        failed += 1
    print("PASS" if failed == 0 else f"FAIL: {failed} checks")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
