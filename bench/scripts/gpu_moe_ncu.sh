#!/usr/bin/env bash
# One GPU, one call: Nsight Compute's sections for our grouped expert kernels (the tile lists, the
# gate/up and the down GEMM of the default launch variant) and for torch._grouped_mm's gate/up and
# down, at one preset's shape and row counts, to see where each kernel's time goes (tensor pipe,
# L2 and DRAM throughput, warp stalls). Clocks are left alone (--clock-control none): the GPU runs
# at its power cap as in the timed runs, but each kernel is replayed alone.
#   ours:  layerbench-moe-kernels --models MODEL, its check run (first launches of each kernel);
#   torch: bench/moe/torch_std.py on the row counts ours wrote, its first three grouped GEMMs
#          (gate/up as its layout probe, then gate/up and down of its first timed launch).
# Reports (text) and the row counts go to $OUT/profile, packed into $OUT/moe-profile.tgz.
# usage: [MODEL=glm-4.5-air] [TOKENS=8192] bench/scripts/gpu_moe_ncu.sh
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
MODEL=${MODEL:-glm-4.5-air}
TOKENS=${TOKENS:-8192}
P=$OUT/profile
mkdir -p "$P/shapes"
trap 'tar -czf "$OUT/moe-profile.tgz" -C "$OUT" profile' EXIT
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SECTIONS=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
          --section WarpStateStats --section LaunchStats --section Occupancy)
lb_build layerbench-moe-kernels || exit 1
K=$(find "$B" -name layerbench-moe-kernels -type f | head -1)
ours=("$NCU" --clock-control none --kernel-name-base demangled --kernel-name 'regex:tiles_kernel|grouped_kernel'
      --launch-count 3 "${SECTIONS[@]}" "$K" --models "$MODEL" --std-tokens "$TOKENS" --iterations 1 --warmup 0
      --counts-dir "$P/shapes")
echo "${ours[*]}" > "$P/ours.cmd"
timeout 240 "${ours[@]}" > "$P/ours-ncu.txt" 2>&1
echo "ours: rc=$?"
torch=("$NCU" --clock-control none --kernel-name-base demangled --kernel-name 'regex:GroupProblemShape'
       --launch-count 3 "${SECTIONS[@]}" python3 bench/moe/torch_std.py --dir "$P/shapes" --models "$MODEL"
       --tokens "$TOKENS" --iterations 1 --warmup 0 --json "$P/torch-std.json")
echo "${torch[*]}" > "$P/torch.cmd"
timeout 240 "${torch[@]}" > "$P/torch-ncu.txt" 2>&1
echo "torch: rc=$?"
for f in ours torch; do
  echo "== $f"
  grep -E '^\s+[a-zA-Z_:<>]*(tiles_kernel|grouped_kernel|cutlass|device_kernel)|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Executed Ipc Active|SM Busy|Registers Per|Grid Size|No Eligible|Issued Warp' "$P/$f-ncu.txt" \
    | cut -c1-160 | head -80
done
