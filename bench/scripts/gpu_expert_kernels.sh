#!/usr/bin/env bash
# Kernel study of the fused expert gate/up + SwiGLU7 path on one GPU: the kernels against the
# CPU (test_expert_gemm_gpu), layerbench-moe-kernels at the SP2 per-rank load, an Nsight Compute
# reading of the Hopper kernels (NCU=1), then the expert path in the profile per mode (one rank
# carrying an SP2 rank's 540k assignments).
# usage: bench/scripts/gpu_expert_kernels.sh [MODE...]   (default: auto bucketed, the profile's paths;
# the mma.sync and Hopper down kernels are timed by layerbench-moe-kernels)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
MODES=("$@"); [ ${#MODES[@]} -gt 0 ] || MODES=(auto bucketed)
lb_build layerbench-moe layerbench-moe-kernels test_expert_gemm_gpu || exit 1
timeout 120 "$B/tests/moe/test_expert_gemm_gpu" > "$OUT/expert-gemm-kernels.log" 2>&1
echo "fused kernels vs cpu rc=$?"; grep -E "max_abs_err|got|OK|FAILED|SKIPPED" "$OUT/expert-gemm-kernels.log"
timeout 120 "$B/tools/layerbench-moe-kernels" 2>&1 | tee "$OUT/kernels.md"
if [ "${NCU:-1}" = 1 ] && command -v ncu > /dev/null; then
  timeout 180 ncu --clock-control none -k regex:"gate_up_swiglu_sm90|down_sm90" -s 3 -c 2 --set full -o "$OUT/wgmma" \
    "$B/tools/layerbench-moe-kernels" --iterations 2 --warmup 1 > "$OUT/ncu-wgmma-run.txt" 2>&1
  echo "ncu rc=$?"
  ncu -i "$OUT/wgmma.ncu-rep" --page details > "$OUT/ncu-wgmma-details.txt" 2>&1
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Hit|Executed Ipc A|Registers Per|Achieved Occ|Stall|DRAM Throughput|L1/TEX Hit|Tensor" \
    "$OUT/ncu-wgmma-details.txt" | head -40
fi
for m in "${MODES[@]}"; do
  timeout 150 "$B/bench/moe/layerbench-moe" --backend cuda --layout sp --expert-gemm "$m" --iterations 20 --warmup 5 \
    --json "$OUT/np1-$m.json" > "$OUT/np1-$m.txt" 2>&1; echo "np1 $m rc=$?"
  grep -E "local_expert_compute|dense|expert_reference|error" "$OUT/np1-$m.txt" | cut -c1-400
done
