#!/usr/bin/env python3
"""CTest fixture: real outputs of the binaries (host backend, small geometries) for the report,
gate and Google Benchmark tests. usage: make_outputs.py OUT_DIR MPIEXEC MOE ATTN COLL AB

Writes into OUT_DIR: moe.json moe.csv moe.md moe_gb.json moe-trace.json (--trace), attn.json attn.csv attn.md,
coll.json coll.csv coll_gb.json and coll_b*.* (a second sweep), study.jsonl with ab.json, ab-runs.csv and
ab.md (layerbench-ab run of
two commands whose metric is drawn at random, the candidate ~0.6% lower).
"""
import os
import subprocess
import sys


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240, **kw)
    if r.returncode != 0:
        print(r.stdout)
        sys.exit(f"fixture command failed with exit {r.returncode}: {' '.join(cmd)}")
    return r.stdout


def main():
    out, mpiexec, moe, attn, coll, ab = sys.argv[1:7]
    os.makedirs(out, exist_ok=True)
    mpi = [mpiexec, "-np", "2", "--oversubscribe"]
    p = lambda name: os.path.join(out, name)
    run(mpi + [moe, "--backend", "host", "--hidden", "64", "--moe-heads", "4", "--experts", "4", "--topk", "2",
               "--intermediate", "16", "--tokens", "16", "--iterations", "5", "--warmup", "1", "--layers", "3",
               "--ab", "metadata", "--pairs", "8", "--json", p("moe.json"), "--csv", p("moe.csv"), "--trace", p("moe-trace.json"),
               "--markdown", p("moe.md"), "--benchmark_format=json", "--benchmark_out=" + p("moe_gb.json")])
    run(mpi + [attn, "--backend", "host", "--dtype", "fp32", "--head-dim", "16", "--warmup", "1", "--iterations", "3",
               "--heads", "7", "--seqs", "64,66", "--text-tokens", "3", "--topologies", "usp2+uaa,cp2",
               "--json", p("attn.json"), "--csv", p("attn.csv"), "--markdown", p("attn.md")])
    for name in ("coll", "coll_b"):
        run(mpi + [coll, "--backend", "host", "-b", "8", "-e", "64K", "-f", "4", "--iterations", "10", "--warmup", "1",
                   "--json", p(name + ".json"), "--csv", p(name + ".csv"), "--benchmark_format=json",
                   "--benchmark_out=" + p(name + "_gb.json")])
    study = p("study.jsonl")
    if os.path.exists(study):
        os.remove(study)
    # Two commands whose metric is drawn per run: the candidate ~0.6% lower with ~0.3% noise.
    arm = ("python3 -c \"import random; print('time_ms=%.5f' % ({} * (1 + 0.003 * random.gauss(0, 1))))\"")
    run([ab, "run", "--base", arm.format(100.0), "--candidate", arm.format(99.4),
         "--metric", "time_ms=regex:time_ms=([0-9.]+)", "--pairs", "24", "--warmup", "0", "--study", study,
         "--json", p("ab.json"), "--csv", p("ab-runs.csv"), "--markdown", p("ab.md")])
    print("fixture outputs written to", out)


if __name__ == "__main__":
    main()
