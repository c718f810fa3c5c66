#!/usr/bin/env bash
# One GPU: every MoE preset at EP 1 (all experts local) with 8192 tokens, each checked against
# the CPU oracle before timing, with the kernel path of every component in its header; the MoE
# GPU tests first (the standard block of every router family and the MAGI-2 layer against the
# CPU); then MAGI-2's default profile at 15000 tokens as in results/moe/2026-12-01-h200-j, with
# its whole_layer and local_expert_compute medians printed beside that run's. JSON + markdown
# per run under $OUT, packed into one tarball.
# usage: [ITERATIONS=10] [MODELS="deepseek-v3 ..."] OUT=... bench/scripts/gpu_moe_models.sh
#        (from a snapshot of the commit, e.g. bench/scripts/snapshot.sh, in its src directory)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
ITERATIONS=${ITERATIONS:-10}
MODELS=${MODELS:-"magi-2 deepseek-v3 qwen3-30b-a3b mixtral-8x7b gpt-oss-120b glm-4.5-air"}
T_START=$(date +%s)
# Only the tarball stays in $OUT: the device tool brings back a few files, not a directory.
pack() { tar -czf "$OUT/../moe-models.tgz" -C "$OUT" . && rm -rf "${OUT:?}"/* && mv "$OUT/../moe-models.tgz" "$OUT/"; }
trap pack EXIT
{ date -u; echo "commit $(cat .git-sha 2>/dev/null || git rev-parse HEAD 2>/dev/null)";
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; } > "$OUT/machine.txt" 2>&1

lb_build layerbench-moe test_moe_mpi test_moe_std_mpi test_expert_gemm_gpu test_router_gpu test_expert_schedule_gpu || exit 1
echo "build done at +$(( $(date +%s) - T_START )) s"
(cd "$B" && timeout 120 ctest -L gpu -R "moe|expert|router" -E np2 --output-on-failure) > "$OUT/ctest-gpu.log" 2>&1
echo "ctest -L gpu (moe, one GPU) rc=$? at +$(( $(date +%s) - T_START )) s"
grep -E "tests passed|Failed|\(Failed\)|Skipped" "$OUT/ctest-gpu.log" | tail -12

MOE="$B/bench/moe/layerbench-moe"
for f in tests/moe/data/hf/*.json; do  # the config reader on every fixture (no measurement)
  "$MOE" --backend cuda --hf-config "$f" --describe > "$OUT/describe-$(basename "$f")" 2>> "$OUT/describe.err" \
    || echo "describe $f failed"
done
for M in $MODELS; do
  CMD=("$MOE" --backend cuda --model "$M" --tokens 8192 --iterations "$ITERATIONS" --warmup 3
       --json "$OUT/$M-t8192.json" --markdown "$OUT/$M-t8192.md")
  echo "${CMD[*]}" > "$OUT/$M-t8192.cmd"
  timeout 90 "${CMD[@]}" > "$OUT/$M-t8192.txt" 2> "$OUT/$M-t8192.err"
  echo "$M rc=$? at +$(( $(date +%s) - T_START )) s"
  grep -E "^\| *(whole_layer|expert_compute|local_expert_compute|router|routing|ep_dispatch) |checks" "$OUT/$M-t8192.txt" | cut -c1-220
done

# MAGI-2's default profile as in results/moe/2026-12-01-h200-j (t15000-auto.json).
CMD=("$MOE" --backend cuda --layout sp --tokens 15000 --expert-gemm auto --iterations 20 --warmup 5 --layers 4 --graph
     --json "$OUT/magi2-t15000-auto.json" --markdown "$OUT/magi2-t15000-auto.md")
echo "${CMD[*]}" > "$OUT/magi2-t15000-auto.cmd"
timeout 120 "${CMD[@]}" > "$OUT/magi2-t15000-auto.txt" 2> "$OUT/magi2-t15000-auto.err"
echo "magi-2 t15000 rc=$? at +$(( $(date +%s) - T_START )) s"
python3 - "$OUT/magi2-t15000-auto.json" results/moe/2026-12-01-h200-j/t15000-auto.json <<'EOF' | tee "$OUT/magi2-vs-j.txt"
import json, statistics, sys
new, old = (json.load(open(p)) for p in sys.argv[1:3])
def med(doc, name):
    for r in doc["results"]:
        if r["name"] == name:
            return statistics.median(r["samples_ms"]), min(r["samples_ms"]), max(r["samples_ms"])
for name in ("whole_layer", "local_expert_compute", "routing", "shared_branch", "whole_layer_graph"):
    a, b = med(new, name), med(old, name)
    if a and b:
        print(f"{name}: now {a[0]:.4f} ms [{a[1]:.4f}, {a[2]:.4f}]  h200-j {b[0]:.4f} ms [{b[1]:.4f}, {b[2]:.4f}]  ratio {a[0]/b[0]:.4f}")
EOF
echo "total +$(( $(date +%s) - T_START )) s"
