#!/usr/bin/env bash
# Every model, every feature, on one GPU: the standard expert-parallel block of DeepSeek-V3,
# Qwen3-30B-A3B and gpt-oss-120b at EP 1 (one layer's experts on one GPU), and the MAGI-2 layer,
# each profiled by the one driver with a stack, the CUDA graph, replication what-ifs of its
# components and the removal A/Bs checked against them, PROCESSES times (the removals' coverage
# over processes). At EP 1 the standard block runs its device path (no exchange, no host
# synchronisation), so its table has no ep_* rows and the graph holds the whole layer.
# PART picks what one call runs (a call has 10 minutes):
#   PART=standard  build + the GPU tests of the standard block, its FP8 dispatch kernels, the FP8
#                  grouped kernels and the cuBLASLt FP8 GEMM (the FP8 dense reference) + a short profile + DeepSeek-V3 with FP8 experts (both recipes) +
#                  the three presets
#   PART=magi2     build + the MAGI-2 layer
#   PART=all       both, one process of each family in turn (FIRST numbers the first process)
# The what-ifs stop at PRECISION (relative half-width of the slope's interval, no absolute floor) or
# WHATIF_S seconds of stacks per component. Then bench/scripts/moe_removals.py tabulates how many
# removals landed inside their prediction. Everything comes back as $OUT/families-$PART.tgz.
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
PART=${PART:-standard}
PROCESSES=${PROCESSES:-2}
LAYERS=${LAYERS:-4}
PAIRS=${PAIRS:-61}
WHATIF_S=${WHATIF_S:-20}
# MODEL[:TOKENS] (TOKENS when none): the token count at which a router's removal stands out of
# its stack's spread. Qwen3-30B-A3B's router is 25 us a layer at 4096 tokens against deltas of sd
# 0.2 ms per 4-layer stack, 70 us at 16384 against sd 0.06 ms; gpt-oss-120b's is 20-40 us at 4096
# against sd 0.09-0.25 ms and 60-90 us at 16384 against sd 0.3-0.6 ms (its 26 ms stacks are noisier),
# so it stays at 4096, as DeepSeek-V3 (65 us; results/moe/2026-12-07-h100-f, -h).
MODELS=${MODELS:-deepseek-v3 qwen3-30b-a3b:16384 gpt-oss-120b}
TOKENS=${TOKENS:-4096}
PRECISION=${PRECISION:-0.10}
# The standard block's copy counts: a router is 0.2-2% of its stack, so the counts are spread
# (its slope's interval shrinks with their spread); MAGI-2 keeps the default 0,1,2,3.
COPIES=${COPIES:-0,1,4,8}
FIRST=${FIRST:-1}   # the first process's number (a second call on the same card continues the count)
MAGI2_COMPS=routing,shared_branch,local_expert_compute,split_linear,merge_linear
MAGI2_DROPS=()
for c in ${MAGI2_COMPS//,/ }; do MAGI2_DROPS+=(--ab "drop:$c"); done
RESULT=$OUT
OUT=$(mktemp -d /tmp/families.XXXXXX)
pack() { tar -czf "$RESULT/families-$PART.tgz" -C "$OUT" . ; }
trap pack EXIT
{ date -u; echo "commit $(cat .git-sha 2>/dev/null)"; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv; } > "$OUT/machine-$PART.txt" 2>&1
T0=$(date +%s)
LIMIT_S=${LIMIT_S:-540}
left() { echo $(( LIMIT_S - ($(date +%s) - T0) )); }
lb_build layerbench-moe test_moe_std_mpi test_std_kernels_gpu test_fp8_grouped_gpu test_fp8_lt_gpu || exit 1
echo "build done at +$(( $(date +%s) - T0 )) s"
ROUNDS=${ROUNDS:-8}
run() {  # NAME P ARGS...: one process of one configuration (PAIRS, ROUNDS, WHATIF_S as set now)
  local name=$1 p=$2; shift 2
  local MOE=("$B/bench/moe/layerbench-moe" --backend cuda --telemetry gpu --layers "$LAYERS" --what-if-rounds "$ROUNDS"
             --what-if-seconds "$WHATIF_S" --what-if-precision "$PRECISION" --what-if-floor-ms 0 --pairs "$PAIRS")
  local cap=$(( $(left) - 10 )); [ "$cap" -gt 280 ] && cap=280
  timeout "$cap" mpirun -np 1 "${MPIRUN_ENV[@]}" "${MOE[@]}" "$@" --json "$OUT/$name-p$p.json" \
    --markdown "$OUT/$name-p$p.md" > "$OUT/$name-p$p.txt" 2> "$OUT/$name-p$p.err"
  local rc=$?
  echo "$name process $p rc=$rc ($(date -u +%T))"
  [ "$rc" = 0 ] || tail -n 5 "$OUT/$name-p$p.err"
}
case $PART in standard|magi2|all) ;; *) echo "PART must be standard, magi2 or all" >&2; exit 2 ;; esac
if [ "$PART" != magi2 ]; then
  timeout 120 mpirun -np 1 "${MPIRUN_ENV[@]}" "$B/tests/moe/test_moe_std_mpi" --gpu > "$OUT/std-gpu-test.txt" 2>&1
  echo "standard block GPU test rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED TEST" "$OUT/std-gpu-test.txt" | head
  for t in test_std_kernels_gpu test_fp8_grouped_gpu test_fp8_lt_gpu; do
    timeout 90 "$B/tests/moe/$t" > "$OUT/$t.txt" 2>&1
    echo "$t rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED TEST" "$OUT/$t.txt" | head
  done
  # A short profile first (one preset, graph, a 2-layer stack): a path that fails here would fail
  # every long run after it, so the call stops and returns what it has.
  PAIRS=5 ROUNDS=2 WHATIF_S=2 run smoke 0 --model qwen3-30b-a3b --tokens 1024 --graph --iterations 5 \
    --what-if router --what-if-copies "$COPIES" --ab drop:router
  if ! grep -q '"whole_layer' "$OUT/smoke-p0.json" 2>/dev/null; then
    echo "smoke profile failed:"; tail -n 20 "$OUT/smoke-p0.err" "$OUT/smoke-p0.txt"; exit 1
  fi
  # FP8 experts (issue 47) at DeepSeek-V3's shape, both recipes, checked against the oracle and
  # captured in a graph (FP8=0 skips): the layer as deployed beside the BF16 runs below.
  if [ "${FP8:-1}" = 1 ]; then
    for r in fp8-block fp8-rowwise; do
      timeout 120 mpirun -np 1 "${MPIRUN_ENV[@]}" "$B/bench/moe/layerbench-moe" --backend cuda --model deepseek-v3 \
        --tokens "$TOKENS" --precision "$r" --graph --iterations 20 --json "$OUT/fp8-$r.json" --markdown "$OUT/fp8-$r.md" \
        > "$OUT/fp8-$r.txt" 2> "$OUT/fp8-$r.err"
      echo "deepseek-v3 $r rc=$?"; grep -E "whole_layer|expert_compute|checks:" "$OUT/fp8-$r.txt" | head -4
    done
  fi
fi
# One process of every family in turn, PROCESSES times (a call cut short by LIMIT_S keeps whole
# processes of both families; the removal table merges the JSONs of several calls).
for p in $(seq "$FIRST" $(( FIRST + PROCESSES - 1 ))); do
  if [ "$PART" != magi2 ]; then
    for mt in $MODELS; do
      m=${mt%%:*}; tok=$TOKENS; [ "$mt" = "$m" ] || tok=${mt#*:}
      [ "$(left)" -gt 60 ] || { echo "$m process $p: skipped (LIMIT_S)"; continue; }
      run "$m" "$p" --model "$m" --tokens "$tok" --graph --what-if router,dispatch_permute,expert_compute \
        --what-if-copies "$COPIES" --ab drop:router --ab drop:dispatch_permute --ab drop:expert_compute
    done
  fi
  if [ "$PART" != standard ]; then
    [ "$(left)" -gt 60 ] || { echo "magi2 process $p: skipped (LIMIT_S)"; continue; }
    run magi2 "$p" --tokens 15000 --graph --what-if "$MAGI2_COMPS" "${MAGI2_DROPS[@]}"
  fi
done
python3 "$(dirname "$0")/moe_removals.py" $(ls "$OUT"/*-p*.json | grep -v smoke) | tee "$OUT/removals-$PART.md"
