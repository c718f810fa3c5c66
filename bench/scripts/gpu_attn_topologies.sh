#!/usr/bin/env bash
# One GPU: sequence-parallel attention topologies (issue 30). In one call:
#   1. build layerbench-attn and the attention GPU tests; run them (cuDNN GQA/strided/LSE/merge);
#   2. for Wan2.1-14B (720x1280, 81 frames), HunyuanVideo (720x1280, 129 frames) and FLUX.1-dev
#      (1024x1024) x workloads {front, rear, masked (unequal prompts), packed (3 requests), GQA}:
#      layerbench-attn --advise --gpus 8 times SP rank 0's local attention of every valid
#      8-GPU topology on this GPU and predicts each forward from the committed 2xH200 collective
#      sweep (through bus bandwidth for 8 ranks); torch_local.py runs torch's cuDNN SDPA on the
#      same work (same masks / packing, varlen-style calls); compare_local.py sets them side by side;
#   3. the advisor's prediction for usp1 against a measured usp1 forward in the same call.
# The front-workload advice of Wan2.1-14B and HunyuanVideo is the 8-GPU example (a prediction).
# usage (from a snapshot): OUT=$OUT bash bench/scripts/gpu_attn_topologies.sh   [ITERATIONS=5]
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
ITERATIONS=${ITERATIONS:-5}
T_START=$(date +%s)
pack() { tar -czf "$OUT/../attn-topologies.tgz" -C "$OUT" . && mv "$OUT/../attn-topologies.tgz" "$OUT/"; }
trap pack EXIT
{ date -u; echo "commit $(cat .git-sha 2>/dev/null || git rev-parse HEAD 2>/dev/null)";
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; } > "$OUT/machine.txt" 2>&1

lb_build layerbench-attn lb.test.attention.cudnn || exit 1
echo "build done at +$(( $(date +%s) - T_START )) s"
(cd "$B" && timeout 120 ctest -R "lb.test.attention.cudnn" --output-on-failure) > "$OUT/ctest-gpu.log" 2>&1
echo "attention GPU tests rc=$? at +$(( $(date +%s) - T_START )) s"; grep -E "tests passed|Failed|max_abs_err" "$OUT/ctest-gpu.log" | tail -8

ATTN="$B/bench/attn/layerbench-attn"
COLL=results/coll/2026-11-30-h200x2-c/coll.json
PAIRS=()
run_case() {  # name model resolution frames [workload flags...]
  local name=$1 model=$2 res=$3 frames=$4; shift 4
  local cmd=("$ATTN" --backend cuda --advise --gpus 8 --model "$model" --resolution "$res" --frames "$frames" "$@"
             --coll "$COLL" --warmup 2 --iterations "$ITERATIONS" --json "$OUT/advise-$name.json" --markdown "$OUT/advise-$name.md")
  echo "${cmd[*]}" > "$OUT/advise-$name.cmd"
  timeout 200 "${cmd[@]}" > "$OUT/advise-$name.txt" 2> "$OUT/advise-$name.err"
  local rc=$?
  timeout 200 python3 bench/attn/torch_local.py --advise-json "$OUT/advise-$name.json" --warmup 2 \
    --iterations "$ITERATIONS" --json "$OUT/torch-$name.json" > "$OUT/torch-$name.txt" 2>&1
  echo "$name: advise rc=$rc torch rc=$? at +$(( $(date +%s) - T_START )) s"
  PAIRS+=("$name=$OUT/advise-$name.json:$OUT/torch-$name.json")
}
for spec in "wan14b wan2.1-14b 1280x720 81 512 8" "hunyuan hunyuanvideo 1280x720 129 256 8" "flux flux.1-dev 1024x1024 1 512 8"; do
  read -r tag model res frames text kvh <<< "$spec"
  run_case "$tag-front" "$model" "$res" "$frames"
  run_case "$tag-rear" "$model" "$res" "$frames" --text-tokens "$text" --joint rear
  run_case "$tag-masked" "$model" "$res" "$frames" --batch 2 --text-tokens "$text" --joint-lengths "$((text / 3)),$text"
  run_case "$tag-packed" "$model" "$res" "$frames" --text-tokens 0 --requests 3
  run_case "$tag-gqa" "$model" "$res" "$frames" --kv-heads "$kvh"
done
python3 bench/attn/compare_local.py "${PAIRS[@]}" > "$OUT/local_vs_torch.md" 2>&1
tail -3 "$OUT/local_vs_torch.md"

# usp1: the advisor's prediction (local work timed here, no collectives) against a forward measured here.
U1=(--heads 24 --head-dim 128 --seqs 32768 --text-tokens 256 --topologies usp1 --warmup 3 --iterations 20)
"$ATTN" --backend cuda --advise --gpus 1 "${U1[@]}" --json "$OUT/usp1-advise.json" --markdown "$OUT/usp1-advise.md" \
  > "$OUT/usp1-advise.txt" 2>&1
"$ATTN" --backend cuda "${U1[@]}" --json "$OUT/usp1-measured.json" --markdown "$OUT/usp1-measured.md" \
  > "$OUT/usp1-measured.txt" 2>&1
python3 - "$OUT/usp1-advise.json" "$OUT/usp1-measured.json" > "$OUT/usp1_check.md" <<'PY'
import json, statistics, sys
adv = json.load(open(sys.argv[1]))["advice"][0]
meas = [m for m in json.load(open(sys.argv[2]))["results"] if m["name"] == "total"][0]
t = statistics.median(meas["samples_ms"])
inside = adv["lo_ms"] <= t <= adv["hi_ms"]
print(f"usp1: predicted {adv['predicted_ms']:.3f} ms [{adv['lo_ms']:.3f}, {adv['hi_ms']:.3f}] "
      f"(half-width {50 * (adv['hi_ms'] - adv['lo_ms']) / adv['predicted_ms']:.1f}%), measured total {t:.3f} ms: "
      f"{'inside' if inside else 'OUTSIDE'}")
PY
cat "$OUT/usp1_check.md"
echo "total +$(( $(date +%s) - T_START )) s"
