#!/usr/bin/env bash
# One GPU: the one-rank MoE profile (the released geometry with one SP2 rank's expert work,
# --tokens 15000) and the one-rank attention profile (14 heads x 128, 16K/32K/64K, usp1), each
# with JSON + markdown, then layerbench-report over both, so the figures after a change of
# layout or renderer can be held against the committed runs (results/README.md). Everything
# lands in $OUT and is packed into one tarball.
# Build: the ci preset's settings (warnings as errors) in Release with the CUDA paths, sm_90.
# usage: [ITERATIONS=30] bench/scripts/gpu_profiles_1gpu.sh   (from a snapshot: bench/scripts/snapshot.sh,
#        then in .devbuild/src with OUT=$OUT)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
ITERATIONS=${ITERATIONS:-30}
T_START=$(date +%s)
pack() { tar -czf "$OUT/../profiles-1gpu.tgz" -C "$OUT" . && mv "$OUT/../profiles-1gpu.tgz" "$OUT/"; }
trap pack EXIT
{ date -u; echo "commit $(cat .git-sha 2>/dev/null || git rev-parse HEAD 2>/dev/null)";
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; } > "$OUT/machine.txt" 2>&1

cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAYERBENCH_WERROR=ON -DLAYERBENCH_ENABLE_TESTING=ON \
  -DLAYERBENCH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/configure.log" 2>&1 || { tail -40 "$OUT/configure.log"; exit 1; }
cmake --build "$B" -j"$(nproc)" --target layerbench-moe layerbench-attn layerbench-report > "$OUT/build.log" 2>&1 \
  || { grep -B2 -A10 -m5 error "$OUT/build.log"; exit 1; }
echo "build done at +$(( $(date +%s) - T_START )) s"

MOE_CMD=("$B/bench/moe/layerbench-moe" --backend cuda --tokens 15000 --iterations "$ITERATIONS" --warmup 5
         --json "$OUT/moe-np1.json" --markdown "$OUT/moe-np1.md")
echo "${MOE_CMD[*]}" > "$OUT/moe-np1.cmd"
timeout 300 "${MOE_CMD[@]}" > "$OUT/moe-np1.txt" 2> "$OUT/moe-np1.err"
echo "moe np1 rc=$? at +$(( $(date +%s) - T_START )) s"
grep -E "whole_layer|local_expert_compute|dense_gemm|warning|checks" "$OUT/moe-np1.txt" | cut -c1-300

ATTN_CMD=("$B/bench/attn/layerbench-attn" --backend cuda --heads 14 --head-dim 128 --seqs 16384,32768,65536
          --topologies usp1 --iterations "$ITERATIONS" --warmup 5 --json "$OUT/attn-np1.json" --markdown "$OUT/attn-np1.md")
echo "${ATTN_CMD[*]}" > "$OUT/attn-np1.cmd"
timeout 300 "${ATTN_CMD[@]}" > "$OUT/attn-np1.txt" 2> "$OUT/attn-np1.err"
echo "attn np1 rc=$? at +$(( $(date +%s) - T_START )) s"
grep -E "usp1|warning|max_abs_err" "$OUT/attn-np1.txt" | cut -c1-300

"$B/bench/report/layerbench-report" "$OUT/moe-np1.json" "$OUT/attn-np1.json" -o "$OUT/report" > "$OUT/report.log" 2>&1
echo "report rc=$?"
echo "total +$(( $(date +%s) - T_START )) s"
