#!/usr/bin/env bash
# One GPU: layerbench-attn's topology ratios from forwards timed round-robin in the same
# iterations. One GPU holds one rank, so the check is a null comparison: usp1 and usp1+uaa do the
# same work at one rank (no padding at U = 1), so their paired ratio must read 1 with an interval
# as narrow as the per-iteration noise; beside it, the ratio of the two totals timed apart (each
# case's own `total`, minutes apart under the power cap), as the comparison was made before.
# --repeat 3: each run's ratio and the run-to-run spread. Built (layerbench-attn), then HunyuanVideo-
# shaped heads at 16K and 32K tokens; everything comes back as $OUT/attn-interleaved.tgz.
# usage (from a snapshot): OUT=$OUT bash bench/scripts/gpu_attn_interleaved.sh [ITERATIONS=30]
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
ITERATIONS=${ITERATIONS:-30}
FINAL=$OUT
OUT=$FINAL/attn-work
mkdir -p "$OUT"
pack() { tar -czf "$FINAL/attn-interleaved.tgz" -C "$OUT" . && rm -rf "$OUT"; }
trap pack EXIT
{ date -u; echo "commit $(cat .git-sha 2>/dev/null || git rev-parse HEAD 2>/dev/null)";
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; } > "$OUT/machine.txt" 2>&1
lb_build layerbench-attn || exit 1
ATTN=("$B/bench/attn/layerbench-attn" --backend cuda --heads 24 --head-dim 128 --seqs 16384,32768 --text-tokens 256
      --topologies usp1,usp1+uaa --warmup 5 --iterations "$ITERATIONS" --repeat 3)
echo "${ATTN[*]}" > "$OUT/command.txt"
timeout 120 "${ATTN[@]}" --json "$OUT/interleaved.json" --markdown "$OUT/interleaved.md" > "$OUT/interleaved.txt" 2>&1
echo "layerbench-attn round-robin rc=$?"
grep -E "^\| (topology|usp1)" "$OUT/interleaved.md"
# The ratio the comparison used to print: the two cases' totals, each timed on its own.
python3 - "$OUT/interleaved.json" <<'PY' | tee "$OUT/apart.txt"
import json, statistics, sys
doc = json.load(open(sys.argv[1]))
tot = {m["group"]: m["samples_ms"] for m in doc["results"] if m["name"] == "total"}
for c in doc["topologies"]:
    if c["topology"] != "usp1+uaa":
        continue
    s = c["seq"]
    apart = statistics.median(tot[f"usp1+uaa/S={s}"]) / statistics.median(tot[f"usp1/S={s}"])
    v = c.get("total_vs_first") or {}
    reps = [r.get("value") for r in v.get("repeats", [])]
    print(f"S={s}: usp1+uaa / usp1 timed apart (ratio of medians) {apart:.4f}; interleaved {v.get('value')} "
          f"{v.get('ci')}, runs {reps}, spread {v.get('spread')}")
PY
