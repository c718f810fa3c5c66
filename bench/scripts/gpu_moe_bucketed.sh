#!/usr/bin/env bash
# GPU check of the bucketed expert GEMM: the MoE GPU tests (oracle at bf16 tolerance, reuse) and
# the SP2 profile at the released geometry, both with --expert-gemm bucketed.
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
lb_build layerbench-moe test_moe_mpi || exit 1
MPI=(mpirun -np 2 --bind-to none "${MPIRUN_ENV[@]}")
timeout 90 "${MPI[@]}" "$B/tests/moe/test_moe_mpi" --gpu --expert-gemm=bucketed > "$OUT/gpu-tests.log" 2>&1; echo "gpu tests rc=$?"
grep -E "PASSED|FAILED|SKIPPED \]" "$OUT/gpu-tests.log" | sort | uniq -c
timeout 120 "${MPI[@]}" "$B/bench/moe/layerbench-moe" --layout sp --expert-gemm bucketed --iterations 20 --warmup 5 \
  --json "$OUT/sp2.json" --markdown "$OUT/sp2.md" > "$OUT/sp2.txt" 2>&1; echo "sp2 rc=$?"
grep -E "local_expert_compute|dense_gemm|whole_layer|checks|expert load" "$OUT/sp2.txt"
