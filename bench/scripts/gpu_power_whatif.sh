#!/usr/bin/env bash
# One GPU, the power-capped H200: compute priced by replication, idle by delay, both checked.
#   - build layerbench-moe and the MoE layer tests; the idempotence of component copies on the cuda
#     layer (test_moe_mpi --gpu, one rank);
#   - at 15000 tokens (one rank's work of the SP layer), an 8-layer stack: replication what-ifs of
#     routing, shared_branch, local_expert_compute, split_linear and merge_linear, each against a
#     `--ab drop:` removal A/B of PAIRS interleaved pairs; the sequence-size exchange by idle
#     injection against `--ab metadata`; the reference ratios from pairs timed in the same
#     iterations, `--repeat 3`; NVML energy throughout;
#   - a second process minutes later with the profile alone (`--repeat 2`): the expert "% of dense"
#     across processes.
# Everything is written to a work folder and comes back as $OUT/power-whatif.tgz plus the console
# summary $OUT/summary.txt (the device returns few files). usage: [PAIRS=51] [LAYERS=8] bench/scripts/gpu_power_whatif.sh
# Run from a snapshot (bench/scripts/snapshot.sh, then in .devbuild/src).
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
PAIRS=${PAIRS:-51}
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

lb_build layerbench-moe test_moe_mpi || exit 1
stamp "build done"

mpirun -n 1 "${MPIRUN_ENV[@]}" "$B/tests/moe/test_moe_mpi" --gpu --gtest_filter='MoeDistributed.ComponentCopiesAreIdempotent:MoeDistributed.GpuLayerMatchesTheCpuImplementation' \
  > "$OUT/test-copies-gpu.log" 2>&1
echo "component copies on the cuda layer rc=$?"; grep -E "^\[  (PASSED|FAILED) |OK \]|FAILED \]" "$OUT/test-copies-gpu.log"
stamp "gpu tests done"

MOE=("$B/bench/moe/layerbench-moe" --backend cuda --tokens 15000 --layers "$LAYERS" --telemetry gpu)
COMPS=routing,shared_branch,local_expert_compute,split_linear,merge_linear
DROPS=()
for c in ${COMPS//,/ }; do DROPS+=(--ab "drop:$c"); done
timeout 200 "${MOE[@]}" --iterations 20 --warmup 5 --what-if "$COMPS,seq_size_exchange" \
  --what-if-levels 0,100,200,400 --what-if-rounds 8 --what-if-seconds 20 --ab metadata "${DROPS[@]}" --pairs "$PAIRS" \
  --repeat 3 --json "$OUT/power-whatif.json" --markdown "$OUT/power-whatif.md" > "$OUT/power-whatif.txt" 2> "$OUT/power-whatif.err"
echo "what-if + A/Bs rc=$?"
stamp "what-if + A/Bs done"
sed -n '/### What-if/,/^- replicate/p' "$OUT/power-whatif.txt"
sed -n '/### Reference ratios/,/^$/p' "$OUT/power-whatif.txt" | head -12
grep -E "measured - predicted|^### (Removal|Metadata)" "$OUT/power-whatif.txt"

# A second process: the profile alone, for the reference ratio across processes.
timeout 60 "${MOE[@]}" --iterations 20 --warmup 5 --repeat 2 --json "$OUT/profile-2.json" \
  --markdown "$OUT/profile-2.md" > "$OUT/profile-2.txt" 2> "$OUT/profile-2.err"
echo "second profile rc=$?"
stamp "second profile done"
sed -n '/### Reference ratios/,/^$/p' "$OUT/profile-2.txt" | head -12
grep -E "^- local_expert_compute:" "$OUT/power-whatif.txt" "$OUT/profile-2.txt"
