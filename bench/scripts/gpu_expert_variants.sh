#!/usr/bin/env bash
# One GPU: the Hopper expert kernels' variants (layerbench-moe-kernels --variants, each checked
# against the default kernel before timing) at 768 experts x 352 / 703 / 176 rows, then Nsight
# Compute's speed-of-light, memory and compute sections of the default gate/up and down kernels at
# 352 rows (clocks and caches left alone). Builds layerbench-moe-kernels only.
# usage: bench/scripts/gpu_expert_variants.sh   (BUILD_DIR reuses a build; NCU=0 skips ncu)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
lb_build layerbench-moe-kernels || exit 1
K="$B/tools/layerbench-moe-kernels"
for rows in 352 703 176; do
  timeout 120 "$K" --experts 768 --mean-rows "$rows" --variants > "$OUT/variants-$rows.md" 2>&1
  echo "== variants at $rows rows rc=$?"
  grep -E "^\| (wgmma|down|gate/up)|error" "$OUT/variants-$rows.md"
done
if [ "${NCU:-1}" = 1 ] && command -v ncu > /dev/null; then
  for k in gate_up_swiglu_sm90 down_sm90; do
    timeout 120 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
      --section ComputeWorkloadAnalysis -k regex:"$k" -c 1 "$K" --experts 768 --mean-rows 352 --iterations 1 \
      --warmup 0 > "$OUT/ncu-$k.txt" 2>&1
    echo "ncu $k rc=$?"
    grep -E "Duration|Throughput|Hit Rate|Pipe|Busy|Issue" "$OUT/ncu-$k.txt" | head -24
  done
fi
