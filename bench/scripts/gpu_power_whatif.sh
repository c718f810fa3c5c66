#!/usr/bin/env bash
# One GPU, the power-capped H200: compute priced by replication, idle by delay, both checked.
#   - build layerbench-moe and the MoE layer tests; on the cuda layer (test_moe_mpi --gpu, one
#     rank): component copies idempotent, a component left out of a same-input stack leaving the
#     stack's data bit for bit unchanged (and changing it in a chained stack), the CPU comparison;
#   - process 1, at 15000 tokens (one rank's work of the SP layer), an 8-layer stack whose layers
#     all take the same input (--stack-input same, the default): replication what-ifs of routing,
#     shared_branch, local_expert_compute, split_linear and merge_linear, each against a
#     `--ab drop:` removal A/B of PAIRS interleaved pairs; the sequence-size exchange by idle
#     injection against `--ab metadata`; the reference ratios from pairs timed in the same
#     iterations, `--repeat 3`; NVML energy throughout; the expert tiles of every stack layer;
#   - process 2, the same what-ifs and removal A/Bs (PAIRS_CHAINED pairs) in a chained stack
#     (--stack-input chained: each layer from the previous one's output), the stack the earlier
#     runs timed, where a component left out changes what the later layers route;
#   - process 3, the profile alone (`--repeat 2`) and the same-input what-ifs again: the expert
#     "% of dense" and the replication predictions across processes (run-to-run spread).
# Everything is written to a work folder and comes back as $OUT/power-whatif.tgz plus the console
# summary $OUT/summary.txt (the device returns few files).
# Every timed stack of the what-if rounds and the A/B pairs follows one of its own variant
# (--prime-stacks 1, the default: the power-capped GPU carries its clocks from stack to stack).
# QUICK=1: process 1's what-ifs and removal A/Bs with `--repeat REPEAT` (2) reference-ratio runs
# only (no tests, metadata A/B or other processes): the acceptance's comparison in about three
# minutes after the build. CONTROL=1 (with QUICK) adds a process with --prime-stacks 0 for routing
# alone (the old pairing: the rounds' removal step and slope against the A/B, same minutes).
# METADATA=1: the layer tests on the cuda layer, then the sequence-size exchange by idle injection
# against `--ab metadata` alone (primed neighbours), in about a minute after the build.
# usage: [PAIRS=121] [PAIRS_CHAINED=51] [LAYERS=8] [WHATIF_S=20] [QUICK=1 [REPEAT=2] [CONTROL=1]]
#        [METADATA=1]
#        bench/scripts/gpu_power_whatif.sh
# Run from a snapshot (bench/scripts/snapshot.sh, then in .devbuild/src).
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
PAIRS=${PAIRS:-121}
PAIRS_CHAINED=${PAIRS_CHAINED:-51}
LAYERS=${LAYERS:-8}
T_START=$(date +%s)
FINAL=$OUT
OUT=${WORK_DIR:-/tmp/power-whatif}
rm -rf "$OUT" && mkdir -p "$OUT"
exec > >(tee "$OUT/summary.txt") 2>&1
stamp() { echo "$1 at +$(( $(date +%s) - T_START )) s" | tee -a "$OUT/timeline.txt"; }
pack() {
  sleep 1  # let tee write the last lines
  tar -czf "$FINAL/power-whatif.tgz" -C "$OUT" . && cp "$OUT/summary.txt" "$FINAL/"
}
trap pack EXIT
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; } > "$OUT/machine.txt" 2>&1

MOE=("$B/bench/moe/layerbench-moe" --backend cuda --tokens 15000 --layers "$LAYERS" --telemetry gpu)
COMPS=routing,shared_branch,local_expert_compute,split_linear,merge_linear
DROPS=()
for c in ${COMPS//,/ }; do DROPS+=(--ab "drop:$c"); done
report() {  # the what-if table, the tiles by layer and every prediction check of one process
  sed -n '/### What-if/,/^- replicate/p' "$1"
  grep -E "^- expert tiles|^Stopped after" "$1"
  grep -E "measured - predicted \(|^### (Removal|Metadata)" "$1"
}
WHATIF_S=${WHATIF_S:-20}
if [ "${QUICK:-0}" = 1 ]; then
  lb_build layerbench-moe || exit 1
  stamp "build done"
  timeout "${QUICK_TIMEOUT:-300}" "${MOE[@]}" --iterations 10 --warmup 3 --repeat "${REPEAT:-2}" --what-if "$COMPS" \
    --what-if-rounds 8 --what-if-seconds "$WHATIF_S" "${DROPS[@]}" --pairs "$PAIRS" \
    --json "$OUT/power-whatif.json" --markdown "$OUT/power-whatif.md" > "$OUT/power-whatif.txt" 2> "$OUT/power-whatif.err"
  echo "what-if + removal A/Bs (same input, primed neighbours) rc=$?"
  stamp "what-if + removal A/Bs done"
  report "$OUT/power-whatif.txt"
  sed -n '/### Reference ratios/,/^$/p' "$OUT/power-whatif.txt" | head -12
  grep -E "^- local_expert_compute:" "$OUT/power-whatif.txt"
  if [ "${CONTROL:-0}" = 1 ]; then
    timeout 90 "${MOE[@]}" --prime-stacks 0 --iterations 5 --warmup 2 --what-if routing --what-if-rounds 8 \
      --what-if-seconds 10 --ab drop:routing --pairs 61 --json "$OUT/unprimed.json" --markdown "$OUT/unprimed.md" \
      > "$OUT/unprimed.txt" 2> "$OUT/unprimed.err"
    echo "control: routing with --prime-stacks 0 rc=$?"
    stamp "control (unprimed) done"
    report "$OUT/unprimed.txt"
  fi
  exit 0
fi
lb_build layerbench-moe test_moe_mpi || exit 1
stamp "build done"
gpu_layer_tests() {
  mpirun -n 1 "${MPIRUN_ENV[@]}" "$B/tests/moe/test_moe_mpi" --gpu --gtest_filter='MoeDistributed.ComponentCopiesAreIdempotent:MoeDistributed.DroppedComponentLeavesTheSameInputStackDataUnchanged:MoeDistributed.GpuLayerMatchesTheCpuImplementation' \
    > "$OUT/test-copies-gpu.log" 2>&1
  echo "component copies / drops on the cuda layer rc=$?"; grep -E "^\[  (PASSED|FAILED) |OK \]|FAILED \]" "$OUT/test-copies-gpu.log"
  stamp "gpu tests done"
}
if [ "${METADATA:-0}" = 1 ]; then
  gpu_layer_tests
  timeout 200 "${MOE[@]}" --iterations 10 --warmup 3 --what-if seq_size_exchange --what-if-levels 0,100,200,400 \
    --what-if-rounds 8 --what-if-seconds 20 --ab metadata --pairs "$PAIRS" \
    --json "$OUT/metadata.json" --markdown "$OUT/metadata.md" > "$OUT/metadata.txt" 2> "$OUT/metadata.err"
  echo "exchange what-if + metadata A/B (primed neighbours) rc=$?"
  stamp "metadata done"
  report "$OUT/metadata.txt"
  exit 0
fi

gpu_layer_tests

timeout 260 "${MOE[@]}" --iterations 20 --warmup 5 --what-if "$COMPS,seq_size_exchange" \
  --what-if-levels 0,100,200,400 --what-if-rounds 8 --what-if-seconds 20 --ab metadata "${DROPS[@]}" --pairs "$PAIRS" \
  --repeat 3 --json "$OUT/power-whatif.json" --markdown "$OUT/power-whatif.md" > "$OUT/power-whatif.txt" 2> "$OUT/power-whatif.err"
echo "what-if + A/Bs (same input) rc=$?"
stamp "what-if + A/Bs (same input) done"
report "$OUT/power-whatif.txt"
sed -n '/### Reference ratios/,/^$/p' "$OUT/power-whatif.txt" | head -12

# The chained stack (the earlier runs' stack): the same what-ifs and removals.
timeout 150 "${MOE[@]}" --stack-input chained --iterations 10 --warmup 3 --what-if "$COMPS" --what-if-rounds 8 \
  --what-if-seconds 20 "${DROPS[@]}" --pairs "$PAIRS_CHAINED" --json "$OUT/chained.json" --markdown "$OUT/chained.md" \
  > "$OUT/chained.txt" 2> "$OUT/chained.err"
echo "what-if + A/Bs (chained) rc=$?"
stamp "what-if + A/Bs (chained) done"
report "$OUT/chained.txt"

# A third process: the profile and the same-input what-ifs again (spread across processes).
timeout 90 "${MOE[@]}" --iterations 20 --warmup 5 --repeat 2 --what-if "$COMPS" --what-if-rounds 8 --what-if-seconds 20 \
  --json "$OUT/profile-2.json" --markdown "$OUT/profile-2.md" > "$OUT/profile-2.txt" 2> "$OUT/profile-2.err"
echo "second profile rc=$?"
stamp "second profile done"
sed -n '/### What-if/,/^- replicate/p' "$OUT/profile-2.txt"
sed -n '/### Reference ratios/,/^$/p' "$OUT/profile-2.txt" | head -12
grep -E "^- local_expert_compute:" "$OUT/power-whatif.txt" "$OUT/profile-2.txt"
