#!/usr/bin/env bash
# Every model, every feature, on one GPU: the standard expert-parallel block of DeepSeek-V3,
# Qwen3-30B-A3B and gpt-oss-120b at EP 1 (one layer's experts on one GPU), and the MAGI-2 layer,
# each profiled by the one driver with a stack, the CUDA graph, replication what-ifs of its
# components and the removal A/Bs checked against them, PROCESSES times (the removals' coverage
# over processes). PART picks what one call runs (a call has 10 minutes):
#   PART=standard  build + the standard block's GPU test + the three presets
#   PART=magi2     (same warm machine: the build is kept) the MAGI-2 layer
# Then bench/scripts/moe_removals.py tabulates how many removals landed inside their prediction.
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
PART=${PART:-standard}
PROCESSES=${PROCESSES:-2}
LAYERS=${LAYERS:-4}
PAIRS=${PAIRS:-61}
WHATIF_S=${WHATIF_S:-8}
MODELS=${MODELS:-deepseek-v3 qwen3-30b-a3b gpt-oss-120b}
TOKENS=${TOKENS:-4096}
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv; } > "$OUT/machine-$PART.txt" 2>&1
lb_build layerbench-moe test_moe_std_mpi || exit 1
MOE=("$B/bench/moe/layerbench-moe" --backend cuda --telemetry gpu --layers "$LAYERS" --what-if-rounds 8
     --what-if-seconds "$WHATIF_S" --pairs "$PAIRS")
run() {  # NAME P ARGS...: one process of one configuration
  local name=$1 p=$2; shift 2
  timeout 280 mpirun -np 1 "${MPIRUN_ENV[@]}" "${MOE[@]}" "$@" --json "$OUT/$name-p$p.json" \
    --markdown "$OUT/$name-p$p.md" > "$OUT/$name-p$p.txt" 2> "$OUT/$name-p$p.err"
  echo "$name process $p rc=$? ($(date -u +%T))"
}
if [ "$PART" = standard ]; then
  timeout 200 mpirun -np 1 "${MPIRUN_ENV[@]}" "$B/tests/moe/test_moe_std_mpi" --gpu > "$OUT/std-gpu-test.txt" 2>&1
  echo "standard block GPU test rc=$?"; tail -3 "$OUT/std-gpu-test.txt"
  COMPS=router,ep_dispatch,expert_compute
  for p in $(seq 1 "$PROCESSES"); do
    for m in $MODELS; do
      run "$m" "$p" --model "$m" --tokens "$TOKENS" --graph --what-if "$COMPS" \
        --ab drop:router --ab drop:ep_dispatch --ab drop:expert_compute
    done
  done
else
  COMPS=routing,shared_branch,local_expert_compute,split_linear,merge_linear
  DROPS=()
  for c in ${COMPS//,/ }; do DROPS+=(--ab "drop:$c"); done
  for p in $(seq 1 "$PROCESSES"); do run magi2 "$p" --tokens 15000 --graph --what-if "$COMPS" "${DROPS[@]}"; done
fi
python3 "$(dirname "$0")/moe_removals.py" "$OUT"/*-p*.json | tee "$OUT/removals-$PART.md"
