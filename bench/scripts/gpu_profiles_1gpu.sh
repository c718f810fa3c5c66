#!/usr/bin/env bash
# One GPU: the one-rank MoE profile (the released geometry with one SP2 rank's expert work,
# --tokens 15000) and the one-rank attention profile (14 heads x 128, 16K/32K/64K, usp1), each
# with JSON + markdown, then layerbench-report over both, so the figures after a change of
# layout or renderer can be held against the committed runs (results/README.md). Everything
# lands in $OUT and is packed into one tarball.
# Build: lb_build (gpu_env.sh), Release with the CUDA paths; TESTS=1 builds everything and runs
# ctest -L gpu -E np2 first.
# usage: [ITERATIONS=30] [TESTS=1] [TOKENS="15000 7500"] bench/scripts/gpu_profiles_1gpu.sh   (from a snapshot: bench/scripts/snapshot.sh,
#        then in .devbuild/src with OUT=$OUT)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
ITERATIONS=${ITERATIONS:-30}
T_START=$(date +%s)
pack() { tar -czf "$OUT/../profiles-1gpu.tgz" -C "$OUT" . && mv "$OUT/../profiles-1gpu.tgz" "$OUT/"; }
trap pack EXIT
{ date -u; echo "commit $(cat .git-sha 2>/dev/null || git rev-parse HEAD 2>/dev/null)";
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; } > "$OUT/machine.txt" 2>&1

if [ "${TESTS:-0}" = 1 ]; then lb_build || exit 1; else lb_build layerbench-moe layerbench-attn layerbench-report || exit 1; fi
echo "build done at +$(( $(date +%s) - T_START )) s"

if [ "${TESTS:-0}" = 1 ]; then
  (cd "$B" && timeout 300 ctest -L gpu -E np2 --output-on-failure) > "$OUT/ctest-gpu.log" 2>&1
  echo "ctest -L gpu -E np2 rc=$? at +$(( $(date +%s) - T_START )) s"; grep -E "tests passed|Failed|Skipped" "$OUT/ctest-gpu.log" | tail -12
fi

for T in ${TOKENS:-15000}; do
  tag=moe-np1$([ "$T" = 15000 ] || echo "-t$T")
  MOE_CMD=("$B/bench/moe/layerbench-moe" --backend cuda --tokens "$T" --iterations "$ITERATIONS" --warmup 5 --graph --layers 4
           --json "$OUT/$tag.json" --markdown "$OUT/$tag.md")
  echo "${MOE_CMD[*]}" > "$OUT/$tag.cmd"
  timeout 300 "${MOE_CMD[@]}" > "$OUT/$tag.txt" 2> "$OUT/$tag.err"
  echo "moe --tokens $T rc=$? at +$(( $(date +%s) - T_START )) s"
  grep -E "whole_layer|local_expert_compute|dense_gemm|Warning|checks" "$OUT/$tag.txt" | cut -c1-300
done

ATTN_CMD=("$B/bench/attn/layerbench-attn" --backend cuda --heads 14 --head-dim 128 --seqs 16384,32768,65536
          --topologies usp1 --iterations "$ITERATIONS" --warmup 5 --json "$OUT/attn-np1.json" --markdown "$OUT/attn-np1.md")
echo "${ATTN_CMD[*]}" > "$OUT/attn-np1.cmd"
timeout 300 "${ATTN_CMD[@]}" > "$OUT/attn-np1.txt" 2> "$OUT/attn-np1.err"
echo "attn np1 rc=$? at +$(( $(date +%s) - T_START )) s"
grep -E "usp1|warning|max_abs_err" "$OUT/attn-np1.txt" | cut -c1-300

"$B/bench/report/layerbench-report" "$OUT/moe-np1.json" "$OUT/attn-np1.json" -o "$OUT/report" > "$OUT/report.log" 2>&1
echo "report rc=$?"
echo "total +$(( $(date +%s) - T_START )) s"
