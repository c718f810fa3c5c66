#!/usr/bin/env bash
# One GPU, one call: Nsight Compute's sections for our grouped expert kernels (the tile lists, the
# gate/up and the down GEMM of the default launch variant) and for torch._grouped_mm's gate/up and
# down, at one preset's shape and row counts, to see where each kernel's time goes (tensor pipe,
# L2 and DRAM throughput, warp stalls). Clocks are left alone (--clock-control none): the GPU runs
# at its power cap as in the timed runs, but each kernel is replayed alone.
#   ours:  layerbench-moe-kernels --models MODEL, its check run (first launches of each kernel);
#   torch: bench/moe/torch_std.py on the row counts ours wrote, its first three grouped GEMMs
#          (gate/up as its layout probe, then gate/up and down of its first timed launch).
# PRECISION=fp8-block|fp8-rowwise profiles the FP8 grouped kernels instead (the act quantization,
# gate/up and down of layerbench-moe-kernels --precision P) and, as the peer, the dense FP8
# ceiling the FP8 acceptance is measured against (torch._scaled_mm rowwise 8192^3, cuBLASLt).
# Reports (text) and the row counts go to $OUT/profile, packed into $OUT/moe-profile.tgz.
# usage: [MODEL=glm-4.5-air] [TOKENS=8192] [PRECISION=bf16] bench/scripts/gpu_moe_ncu.sh
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
MODEL=${MODEL:-glm-4.5-air}
TOKENS=${TOKENS:-8192}
PRECISION=${PRECISION:-bf16}
P=$OUT/profile
mkdir -p "$P/shapes"
trap 'tar -czf "$OUT/moe-profile.tgz" -C "$OUT" profile' EXIT
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SECTIONS=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
          --section WarpStateStats --section LaunchStats --section Occupancy)
lb_build layerbench-moe-kernels || exit 1
K=$(find "$B" -name layerbench-moe-kernels -type f | head -1)
if [ "$PRECISION" = bf16 ]; then
  ours=("$NCU" --clock-control none --kernel-name-base demangled --kernel-name 'regex:tiles_kernel|grouped_kernel'
        --launch-count 3 "${SECTIONS[@]}" "$K" --models "$MODEL" --std-tokens "$TOKENS" --iterations 1 --warmup 0
        --counts-dir "$P/shapes")
else  # the check run's first launches: the lists, the act quantization, gate/up (both epilogues), down
  ours=("$NCU" --clock-control none --kernel-name-base demangled
        --kernel-name 'regex:tiles_kernel|fp8_kernel|block_kernel|quantize_1x128'
        --launch-count 8 "${SECTIONS[@]}" "$K" --models "$MODEL" --precision "$PRECISION" --std-tokens "$TOKENS"
        --iterations 1 --warmup 0 --counts-dir "$P/shapes")
fi
echo "${ours[*]}" > "$P/ours.cmd"
timeout 240 "${ours[@]}" > "$P/ours-ncu.txt" 2>&1
echo "ours: rc=$?"
if [ "$PRECISION" = bf16 ]; then
  torch=("$NCU" --clock-control none --kernel-name-base demangled --kernel-name 'regex:GroupProblemShape'
         --launch-count 3 "${SECTIONS[@]}" python3 bench/moe/torch_std.py --dir "$P/shapes" --models "$MODEL"
         --tokens "$TOKENS" --iterations 1 --warmup 0 --json "$P/torch-std.json")
else  # the dense FP8 ceiling: its second launch (the first may pick the algorithm)
  torch=("$NCU" --clock-control none --kernel-name-base demangled --kernel-name 'regex:gemm|Gemm|cutlass'
         --launch-skip 1 --launch-count 1 "${SECTIONS[@]}" python3 -c "
import sys; sys.path.insert(0, 'bench/moe')
import torch_fp8
print(torch_fp8.dense_ceiling(1, 2))")
fi
echo "${torch[*]}" > "$P/torch.cmd"
timeout 240 "${torch[@]}" > "$P/torch-ncu.txt" 2>&1
echo "torch: rc=$?"
for f in ours torch; do
  echo "== $f"
  grep -E '^\s+[a-zA-Z_:<>]*(tiles_kernel|grouped_kernel|fp8_kernel|block_kernel|quantize_1x128|cutlass|device_kernel|sm90_xmma|nvjet)|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Executed Ipc Active|SM Busy|Registers Per|Grid Size|No Eligible|Issued Warp' "$P/$f-ncu.txt" \
    | cut -c1-160 | head -80
done
