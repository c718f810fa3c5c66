#!/usr/bin/env bash
# One GPU, one run: layerbench's expert kernels and router beside torch at the same shapes
# (torch._grouped_mm gate/up and down at 768 experts x 352 and x 703 rows; the router at
# 15000 tokens x 12 and x 6 heads, eager and compiled), then a side-by-side table.
# usage: bench/scripts/gpu_moe_vs_torch.sh   (NO_COMPILE=1 skips torch.compile)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
lb_build layerbench-moe-kernels || exit 1
K="$B/tools/layerbench-moe-kernels"
timeout 90 "$K" --experts 768 --mean-rows 352 --router-tokens 15000 --router-heads 12,6 2>&1 | tee "$OUT/ours-352.md"
timeout 60 "$K" --experts 768 --mean-rows 703 2>&1 | tee "$OUT/ours-703.md"
extra=(); [ "${NO_COMPILE:-0}" = 1 ] && extra=(--no-compile)
PYTHONUNBUFFERED=1 timeout 300 python3 bench/moe/torch_moe.py --experts 768 --mean-rows 352,703 \
  --router-tokens 15000 --router-heads 12,6 --json "$OUT/torch-moe.json" "${extra[@]}" \
  --ours "$OUT/ours-352.md" "$OUT/ours-703.md" 2>&1 | tee "$OUT/side-by-side.md"
