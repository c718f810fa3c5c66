#!/usr/bin/env bash
# One GPU: sequence-parallel attention topologies. In one call:
#   1. build layerbench-attn and the attention GPU tests; run them (cuDNN GQA / strided requests /
#      LSE stats / LSE merge against the host kernels);
#   2. the advisor's prediction for usp1 against a usp1 forward measured in the same call;
#   3. for HunyuanVideo (1280x720, 129 frames), Wan2.1-14B (1280x720, 81 frames) and FLUX.1-dev
#      (1024x1024) x workloads {front (the preset), rear, masked (2 prompts of unequal length),
#      packed (3 requests), GQA}: `layerbench-attn --advise --gpus 8` times SP rank 0's local
#      attention of every valid 8-GPU topology on this GPU and predicts each forward from the
#      committed 2xH200 collective sweep (through bus bandwidth for larger groups);
#      torch_local.py runs torch on the same work: the same calls as our plan made the way torch's
#      context-parallel ring attention makes them (cuDNN SDPA with LSE per call, torch's ring
#      merge; the verdict's peer) and one cuDNN call over every key the rank meets (ideal);
#      compare_local.py sets them side by side (ratio torch / ours).
# The front advice of HunyuanVideo and Wan2.1-14B is the 8-GPU example (a prediction).
# Cases stop being started after BUDGET_S seconds so the results always come back.
# usage (from a snapshot): OUT=$OUT bash bench/scripts/gpu_attn_topologies.sh [ITERATIONS=4] [BUDGET_S=300] [TORCH_S=120]
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
ITERATIONS=${ITERATIONS:-4}
BUDGET_S=${BUDGET_S:-300}
T_START=$(date +%s)
elapsed() { echo $(( $(date +%s) - T_START )); }
# Everything is written under $OUT/work and comes back as one tarball.
FINAL=$OUT
OUT=$FINAL/work
mkdir -p "$OUT"
pack() { tar -czf "$FINAL/attn-topologies.tgz" -C "$OUT" . && rm -rf "$OUT"; }
trap pack EXIT
{ date -u; echo "commit $(cat .git-sha 2>/dev/null || git rev-parse HEAD 2>/dev/null)";
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; } > "$OUT/machine.txt" 2>&1

lb_build layerbench-attn lb.test.attention.cudnn || exit 1
echo "build done at +$(elapsed) s"
(cd "$B" && timeout 120 ctest -R "lb.test.attention.cudnn" --output-on-failure) > "$OUT/ctest-gpu.log" 2>&1
echo "attention GPU tests rc=$? at +$(elapsed) s"; grep -E "tests passed|Failed|max_abs_err|OK|FAILED" "$OUT/ctest-gpu.log" | tail -12

ATTN="$B/bench/attn/layerbench-attn"
# One rank on the GPU, checked against the fp64 host oracle before timing (exit 1 on a mismatch):
# the LSE-merged path (front joint tokens with a key mask per request), packed requests (one call
# per request), the rear layout with a cached K/V prefix, GQA.
for wl in "--batch 2 --text-tokens 64 --joint-lengths 20,64" "--requests 3" "--joint rear --text-tokens 64 --cached-kv 32" \
          "--kv-heads 2 --text-tokens 64"; do
  # shellcheck disable=SC2086
  "$ATTN" --backend cuda --heads 8 --head-dim 128 --seqs 4096 --topologies usp1 --warmup 1 --iterations 3 $wl \
    >> "$OUT/gpu-check.md" 2>> "$OUT/gpu-check.err"
  echo "one-rank GPU check ($wl): rc=$?"
done
grep -h "max_abs_err" "$OUT/gpu-check.err" | cut -c1-160
# usp1: the advisor's prediction (local work timed here, no collectives) against a forward measured here.
U1=(--heads 24 --head-dim 128 --seqs 32768 --text-tokens 256 --topologies usp1 --warmup 3 --iterations ${U1_ITERATIONS:-10})
echo "$ATTN --backend cuda --advise --gpus 1 ${U1[*]}" > "$OUT/usp1.cmd"
echo "$ATTN --backend cuda ${U1[*]}" >> "$OUT/usp1.cmd"
"$ATTN" --backend cuda --advise --gpus 1 "${U1[@]}" --json "$OUT/usp1-advise.json" > "$OUT/usp1-advise.md" 2>&1
"$ATTN" --backend cuda "${U1[@]}" --json "$OUT/usp1-measured.json" > "$OUT/usp1-measured.md" 2>&1
python3 - "$OUT/usp1-advise.json" "$OUT/usp1-measured.json" > "$OUT/usp1_check.md" <<'PY'
import json, statistics, sys
adv = json.load(open(sys.argv[1]))["advice"][0]
meas = [m for m in json.load(open(sys.argv[2]))["results"] if m["name"] == "total"][0]
t = statistics.median(meas["samples_ms"])
inside = adv["lo_ms"] <= t <= adv["hi_ms"]
print(f"usp1 (H=24, D=128, S=32768, Lt=256): predicted {adv['predicted_ms']:.3f} ms [{adv['lo_ms']:.3f}, "
      f"{adv['hi_ms']:.3f}] (half-width {50 * (adv['hi_ms'] - adv['lo_ms']) / adv['predicted_ms']:.1f}%), "
      f"measured total {t:.3f} ms: {'inside' if inside else 'OUTSIDE'} the interval")
PY
cat "$OUT/usp1_check.md"; echo "usp1 at +$(elapsed) s"

mkdir -p "$OUT/cases"
COLL=results/coll/2026-11-30-h200x2-c/coll.json
DONE=()
run_case() {  # name model resolution frames [workload flags...]
  local name=$1 model=$2 res=$3 frames=$4; shift 4
  if [ "$(elapsed)" -gt "$BUDGET_S" ]; then echo "$name: skipped (budget)"; return; fi
  local cmd=("$ATTN" --backend cuda --advise --gpus 8 --model "$model" --resolution "$res" --frames "$frames" "$@"
             --coll "$COLL" --coll-rescale --warmup 1 --iterations "$ITERATIONS" --json "$OUT/cases/$name.json")
  echo "${cmd[*]}" > "$OUT/cases/$name.cmd"
  timeout 120 "${cmd[@]}" > "$OUT/cases/$name.md" 2> "$OUT/cases/$name.err"
  echo "$name: rc=$? at +$(elapsed) s"
  DONE+=("$OUT/cases/$name.json")
}
# In order of priority (cases stop being started after BUDGET_S): FLUX.1-dev's small local kernels
# first (where per-call costs show), then the front (preset) advice of HunyuanVideo and Wan2.1-14B
# (the 8-GPU example), then their other workloads.
HY=(hunyuanvideo 1280x720 129) WAN=(wan2.1-14b 1280x720 81) FLUX=(flux.1-dev 1024x1024 1)
run_case flux-front "${FLUX[@]}"
run_case flux-masked "${FLUX[@]}" --batch 2 --joint-lengths 170,512
run_case flux-packed "${FLUX[@]}" --text-tokens 0 --requests 3
run_case flux-gqa "${FLUX[@]}" --kv-heads 8
run_case flux-rear "${FLUX[@]}" --joint rear
run_case hunyuan-front "${HY[@]}"
run_case wan14b-front "${WAN[@]}"
run_case hunyuan-masked "${HY[@]}" --batch 2 --text-tokens 256 --joint-lengths 85,256
run_case wan14b-masked "${WAN[@]}" --batch 2 --text-tokens 512 --joint-lengths 170,512
run_case hunyuan-packed "${HY[@]}" --text-tokens 0 --requests 3
run_case wan14b-packed "${WAN[@]}" --text-tokens 0 --requests 3
run_case hunyuan-gqa "${HY[@]}" --kv-heads 8
run_case wan14b-gqa "${WAN[@]}" --kv-heads 8
run_case hunyuan-rear "${HY[@]}" --joint rear
run_case wan14b-rear "${WAN[@]}" --text-tokens 512 --joint rear
# Diagnostic (not in the comparison): FLUX.1-dev front timed free-running (--align none: forwards
# back to back, so host launch cost hides behind the previous forward) beside the cold figures.
if [ "$(elapsed)" -le "$BUDGET_S" ]; then
  "$ATTN" --backend cuda --advise --gpus 8 --model flux.1-dev --resolution 1024x1024 --frames 1 --coll "$COLL" --coll-rescale \
    --warmup 1 --iterations "$ITERATIONS" --align none --json "$OUT/cases/flux-front-pipelined.diag.json" \
    > "$OUT/cases/flux-front-pipelined.diag.md" 2>&1
  echo "flux-front pipelined: rc=$?"
fi
timeout "${TORCH_S:-120}" \
  python3 bench/attn/torch_local.py --advise-json "${DONE[@]}" --warmup 1 --iterations "$ITERATIONS" \
  > "$OUT/torch_local.log" 2>&1
echo "torch rc=$? at +$(elapsed) s"
PAIRS=()
for f in "${DONE[@]}"; do n=$(basename "$f" .json); [ -f "${f%.json}.torch.json" ] && PAIRS+=("$n=$f:${f%.json}.torch.json"); done
python3 bench/attn/compare_local.py "${PAIRS[@]}" > "$OUT/local_vs_torch.md" 2>&1
grep -c "| NO |" "$OUT/local_vs_torch.md"; tail -6 "$OUT/local_vs_torch.md"
echo "total +$(elapsed) s"
