#!/usr/bin/env bash
# One GPU: the what-if (critical-path) profile, the metadata A/B checked against the what-if
# prediction, and GPU telemetry, at the released geometry with one rank's work (15000 tokens,
# 36-layer stack). Also: NVML telemetry tests on a real driver, `layerbench-ab run --telemetry
# gpu` on a GPU command, and the speed benchmark (a four-level what-if of one component, whole
# command timed; goal <= 3 minutes). Everything lands in $OUT and is packed into one tarball.
# usage: [LEVELS=0,100,200,400] [ROUNDS=8] [PAIRS=101] [SPEED=1] [BUDGET_S=540] bench/scripts/gpu_whatif_1gpu.sh
# (BUDGET_S: the seconds the whole script may take; the speed run is skipped when too few are left)
# Run from a snapshot (bench/scripts/snapshot.sh, then in .devbuild/src).
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
LEVELS=${LEVELS:-0,100,200,400}
ROUNDS=${ROUNDS:-8}
PAIRS=${PAIRS:-101}
BUDGET_S=${BUDGET_S:-540}
T_START=$(date +%s)
pack() {
  local tgz="${TMPDIR:-/tmp}/whatif-results.tgz"
  tar -czf "$tgz" -C "$OUT" --exclude whatif-results.tgz . && mv "$tgz" "$OUT/"
}
trap pack EXIT
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; } > "$OUT/machine.txt" 2>&1

lb_build layerbench-moe layerbench-ab lb.test.collectives.telemetry lb.test.bench.harness.whatif || exit 1
echo "build done at +$(( $(date +%s) - T_START )) s"

# NVML on a real driver (the default-library case runs instead of skipping), and the host what-if acceptance.
timeout 60 "$B/tests/collectives/lb.test.collectives.telemetry" > "$OUT/telemetry-test.log" 2>&1
echo "telemetry tests rc=$?"; grep -E "OK|SKIPPED|FAILED|PASSED" "$OUT/telemetry-test.log"
timeout 60 "$B/tests/harness/lb.test.harness.whatif" > "$OUT/whatif-test.log" 2>&1
echo "what-if host tests rc=$?"; grep -E "PASSED|FAILED" "$OUT/whatif-test.log"

MOE=("$B/bench/moe/layerbench-moe" --backend cuda --tokens 15000 --layers 36)
# The acceptance run: what-if of four components (the exchange at both edges: after its host read,
# and before it is issued), the metadata A/B against the exchange what-if, telemetry throughout.
# --framework-exchange-ms: torch.distributed's all_gather-into-a-list + .item() exchange measured on
# the 2xH200 machine (shared/DEVICE.md), for the profile's "not timed" lines.
timeout 300 "${MOE[@]}" --iterations 20 --warmup 5 --what-if seq_size_exchange,seq_size_exchange@begin,ep_dispatch,routing,shared_branch \
  --what-if-levels "$LEVELS" --what-if-rounds "$ROUNDS" --ab metadata --pairs "$PAIRS" --telemetry gpu \
  --framework-exchange-ms 0.214 --json "$OUT/moe-whatif.json" --markdown "$OUT/moe-whatif.md" \
  > "$OUT/moe-whatif.txt" 2> "$OUT/moe-whatif.err"
echo "what-if + A/B rc=$? at +$(( $(date +%s) - T_START )) s"
sed -n '/### What-if/,$p' "$OUT/moe-whatif.txt" | head -80

# layerbench-ab on a GPU command: per-run clocks, power, GPU memory (and peak RSS) in the JSONL.
timeout 60 "$B/bench/ab/layerbench-ab" run --pairs 3 --telemetry gpu --telemetry-period 10 --metric wall \
  --base "$B/bench/moe/layerbench-moe --backend cuda --tokens 4000 --iterations 5 --warmup 2 --skip-check --dense-gemm-size 1024 --telemetry off" \
  --candidate "$B/bench/moe/layerbench-moe --backend cuda --tokens 3000 --iterations 5 --warmup 2 --skip-check --dense-gemm-size 1024 --telemetry off" \
  --resamples 5000 --out "$OUT/ab-telemetry.jsonl" > "$OUT/ab-telemetry.txt" 2>&1
echo "layerbench-ab --telemetry gpu rc=$?"; sed -n '/GPU telemetry/,$p' "$OUT/ab-telemetry.txt"
head -c 1500 "$OUT/ab-telemetry.jsonl" | tail -c 900; echo

# Speed: a four-level what-if of one component at the released geometry, the whole command timed.
left=$(( BUDGET_S - ($(date +%s) - T_START) ))
if [ "${SPEED:-1}" = 1 ] && [ "$left" -gt 40 ]; then
  t0=$(date +%s.%N)
  timeout "$left" "${MOE[@]}" --iterations 10 --warmup 3 --what-if routing --what-if-levels "$LEVELS" \
    --what-if-rounds "$ROUNDS" --telemetry gpu --json "$OUT/speed.json" > "$OUT/speed.txt" 2>&1
  rc=$?; t1=$(date +%s.%N)
  echo "speed: four-level what-if of routing, whole command $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s (rc=$rc)" | tee "$OUT/speed-time.txt"
  grep -E "^\| routing \| device" "$OUT/speed.txt"
else
  echo "speed run skipped ($left s left)"
fi
