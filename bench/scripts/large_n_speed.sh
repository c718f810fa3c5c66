#!/usr/bin/env bash
# Speed of the paired analysis at large n: `layerbench-ab analyze` and `layerbench-gate --pairs`
# on N pairs (default 10^6), as a CSV and as a layerbench-ab study JSONL. Prints one markdown
# table of wall-clock seconds (the figure; not a timed test), then what each tool says changes at
# large n: above stats::kBootstrapMaxPairs pairs both use normal-limit intervals instead of the
# bootstrap (stats/bootstrap.hpp).
# usage: bench/scripts/large_n_speed.sh [BUILD_DIR] [N]
set -euo pipefail
build=${1:-build/host}
n=${2:-1000000}
ab=$build/bench/ab/layerbench-ab
gate=$build/bench/gate/layerbench-gate
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$work" "$n" <<'PY'
import json, random, sys
work, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(20261201)
with open(f"{work}/pairs.csv", "w") as csv, open(f"{work}/study.jsonl", "w") as jl:
    csv.write("base,candidate\n")
    jl.write(json.dumps({"type": "study", "version": 1, "base": "a", "candidate": "b", "pairs": n,
                         "warmup": 0, "order": "alternate", "metric": "wall", "timeout": 0, "retries": 0,
                         "seed": 0, "prepare": "", "check_output": ""}) + "\n")
    for i in range(n):
        drift = 0.01 * rng.gauss(0, 1)
        b = 1.0 + drift + 0.02 * rng.gauss(0, 1)
        c = 0.99 + drift + 0.02 * rng.gauss(0, 1)
        csv.write(f"{b:.6f},{c:.6f}\n")
        first, second = (("base", b), ("candidate", c)) if i % 2 == 0 else (("candidate", c), ("base", b))
        for pos, (arm, v) in enumerate((first, second)):
            jl.write(json.dumps({"type": "run", "pair": i, "attempt": 0, "arm": arm, "position": pos,
                                 "start": 0, "metric": round(v, 6), "wall": round(v, 6), "user": 0, "exit": 0,
                                 "status": "ok", "stdout_tail": ""}, separators=(",", ":")) + "\n")
PY

cores=$(nproc)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "| command | input | pairs | wall s | exit |"
echo "|---|---|---:|---:|---:|"
for input in pairs.csv study.jsonl; do
  for tool in analyze gate; do
    if [ $tool = analyze ]; then cmd=("$ab" analyze "$work/$input"); name="layerbench-ab analyze"
    else cmd=("$gate" --pairs "$work/$input" --threshold 0.5%); name="layerbench-gate --pairs"; fi
    start=$(date +%s%N)
    rc=0
    "${cmd[@]}" > "$work/out.txt" 2>&1 || rc=$?
    end=$(date +%s%N)
    ms=$(( (end - start) / 1000000 ))
    printf '| %s | %s | %d | %d.%01d | %d |\n' "$name" "$input" "$n" $((ms / 1000)) $(((ms % 1000) / 100)) "$rc"
    [ $rc -le 1 ] || { cat "$work/out.txt" >&2; exit 1; }
  done
done
echo
# What changes at large n, as the tools print it (the switch point comes from stats::kBootstrapMaxPairs).
"$ab" analyze "$work/study.jsonl" | grep -m1 -o 'With [0-9]* pairs (more than [0-9]*) the intervals are normal-limit ones[^.]*' | sed 's/^/ab analyze: /' || true
"$gate" --pairs "$work/study.jsonl" --threshold 0.5% | grep -m1 '^Rule' | sed 's/^/gate --pairs: /' || true
echo "Load average (1, 5, 15 min) before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg)."
echo "Machine: $cores cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), commit $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)."
