#!/usr/bin/env bash
# GPU study of the expert path: the MoE GPU tests with each expert GEMM mode (oracle at bf16
# tolerance, metadata reuse), the SP2 profile at the released geometry per mode, and a per-kernel
# time breakdown of one rank's expert path under Nsight Compute (one rank carries the same
# 540k routed assignments as an SP2 rank: 7500 tokens x 12 heads x top-6).
# usage: [NP=2] [TEST_MODES="auto fused fused-down fused-mma bucketed"] bench/scripts/gpu_moe_experts.sh [MODE...]
# (MODE: the profile's expert paths, default auto bucketed; TEST_MODES: every path of the GPU layer
# tests; NP=1 runs the profile as one rank with the same per-rank expert work)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
MODES=("$@"); [ ${#MODES[@]} -gt 0 ] || MODES=(auto bucketed)
read -r -a TMODES <<< "${TEST_MODES:-auto fused fused-down fused-mma bucketed}"
lb_build layerbench-moe test_moe_mpi test_expert_gemm_gpu || exit 1
timeout 120 "$B/tests/moe/test_expert_gemm_gpu" > "$OUT/expert-gemm-kernels.log" 2>&1
echo "fused kernels vs cpu rc=$?"; grep -E "max_abs_err|got|OK|FAILED|SKIPPED" "$OUT/expert-gemm-kernels.log"
MPI=(mpirun -np "${NP:-2}" --bind-to none "${MPIRUN_ENV[@]}")
for m in "${TMODES[@]}"; do
  timeout 120 "${MPI[@]}" "$B/tests/moe/test_moe_mpi" --gpu --expert-gemm="$m" > "$OUT/gpu-tests-$m.log" 2>&1
  echo "gpu tests $m rc=$?"; grep -E "PASSED|FAILED" "$OUT/gpu-tests-$m.log" | sort | uniq -c
done
for m in "${MODES[@]}"; do
  timeout 150 "${MPI[@]}" "$B/bench/moe/layerbench-moe" --layout sp --expert-gemm "$m" --iterations 20 --warmup 5 \
    --json "$OUT/sp2-$m.json" > "$OUT/sp2-$m.txt" 2>&1; echo "sp2 $m rc=$?"
  grep -E "local_expert_compute|routing|dense|whole_layer|expert load|experts:" "$OUT/sp2-$m.txt"
done
if command -v ncu > /dev/null && [ "${NCU:-1}" = 1 ]; then
  for m in "${MODES[@]}"; do
    timeout 240 ncu --clock-control none --metrics gpu__time_duration.sum --csv --log-file "$OUT/ncu-$m.csv" \
      "$B/bench/moe/layerbench-moe" --backend cuda --layout sp --expert-gemm "$m" --iterations 2 --warmup 1 \
      --skip-check --dense-gemm-size 512 > "$OUT/ncu-run-$m.txt" 2>&1; echo "ncu $m rc=$?"
    python3 "$(dirname "$0")/ncu_summary.py" "$OUT/ncu-$m.csv" 25 | tee "$OUT/ncu-$m.md"
  done
fi
