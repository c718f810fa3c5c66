#!/usr/bin/env bash
# One GPU, one call: the standard block's fast paths at every preset's shape.
#   1. build the GPU tests and layerbench-moe-kernels (lb_build, Release, CUDA on);
#   2. the GPU tests of the new kernels: the warp router of every family against the host
#      definition, the expert MLPs (every path: per-expert / 4-stream / grouped / padded cuBLAS and
#      the grouped wgmma kernels, also replayed from a CUDA graph on new device counts) at edge
#      shapes (1 row, empty experts, K off every tile, N off 256, 1100 groups), the whole standard
#      block on one GPU against the CPU oracle; with SANITIZE=1 the wgmma tests again under
#      compute-sanitizer memcheck; the HGMMA count of the Hopper kernels' SASS;
#   3. layerbench-moe-kernels --models (router + every expert path per preset at TOKENS, EP1, the
#      wgmma stages alone too), which writes the expert-path table, the row counts and the model
#      descriptions;
#   4. torch (bench/moe/torch_std.py) on the same shapes and row counts, then the side-by-side;
#      with INTERLEAVED=1 also ours through liblayerbench_std_experts in torch's process: checked
#      against torch first, then ours (the table's automatic path and wgmma) and torch._grouped_mm
#      GEMMs only timed in PAIRS ABBA pairs, the median of the pair ratios with its 95% interval
#      (interleaved.md, also copied to $OUT).
# Everything is written under a scratch folder and packed into $OUT/moe-fast.tgz after every stage
# (a run cut short still returns what it had); the two tables are also copied to $OUT.
# usage: [TOKENS=8192] [ITERATIONS=20] [MODELS=deepseek-v3,...] [SANITIZE=1]
#        [INTERLEAVED=1 [PAIRS=30] [OURS_PATHS=automatic,wgmma,wgmma:in-place,...] [OURS_TABLE=none]]
#        bench/scripts/gpu_moe_fast.sh
# (OURS_PATHS: our paths timed against torch, each in its own ABBA pairs; "wgmma:<modifiers>" is
# a launch variant of the grouped kernels, tools/std_experts_capi.h; OURS_TABLE=none times
# `automatic` without the study's table, i.e. the device's default path)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
RESULT=$OUT
OUT=$(mktemp -d /tmp/moe-fast.XXXXXX)
TOKENS=${TOKENS:-8192}
ITERATIONS=${ITERATIONS:-20}
MODELS=${MODELS:-deepseek-v3,qwen3-30b-a3b,mixtral-8x7b,gpt-oss-120b,glm-4.5-air}
INTERLEAVED=${INTERLEAVED:-0}
PAIRS=${PAIRS:-30}
OURS_PATHS=${OURS_PATHS:-automatic,wgmma}
OURS_TABLE=${OURS_TABLE:-study}
T_START=$(date +%s)
pack() {
  tar -czf "$RESULT/moe-fast.tgz.part" -C "$OUT" . && mv "$RESULT/moe-fast.tgz.part" "$RESULT/moe-fast.tgz"
  for f in ours.md side-by-side.md interleaved.md; do [ -f "$OUT/$f" ] && cp "$OUT/$f" "$RESULT/"; done
  return 0
}
trap pack EXIT
since() { echo "+$(( $(date +%s) - T_START )) s"; }
{ date -u; echo "commit $(cat .git-sha 2>/dev/null || git rev-parse HEAD 2>/dev/null)";
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; } > "$OUT/machine.txt" 2>&1

TARGETS=(test_std_kernels_gpu test_moe_std_mpi layerbench-moe-kernels)
GPU_TESTS="test_std_kernels_gpu|moe_std_gpu"
[ "$INTERLEAVED" = 1 ] && TARGETS+=(layerbench_std_experts test_std_experts_capi) && GPU_TESTS+="|test_std_experts_capi"
lb_build "${TARGETS[@]}" || exit 1
echo "build done at $(since)"; pack
SM90_LIB=$(find "$B" -name 'liblb_moe_sm90.a' | head -1)
{ echo "HGMMA instructions in $(basename "$SM90_LIB"): $("$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)" --dump-sass "$SM90_LIB" 2>/dev/null | grep -c HGMMA)"; } \
  >> "$OUT/machine.txt"

(cd "$B" && timeout 90 ctest -j3 -R "$GPU_TESTS" --output-on-failure) > "$OUT/ctest-gpu.log" 2>&1
echo "ctest rc=$? at $(since)"; pack; grep -E "tests passed|Failed|Skipped|\*\*\*" "$OUT/ctest-gpu.log" | tail -8
if [ "${SANITIZE:-0}" = 1 ]; then
  T=$(find "$B" -name test_std_kernels_gpu -type f | head -1)
  timeout 120 "$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)" --tool memcheck "$T" --gtest_filter='*Wgmma*' > "$OUT/sanitizer.log" 2>&1
  echo "compute-sanitizer rc=$? at $(since)"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/sanitizer.log" | tail -4
fi

K="$B/tools/layerbench-moe-kernels"
mkdir -p "$OUT/shapes"
OURS_CMD=("$K" --models "$MODELS" --std-tokens "$TOKENS" --iterations "$ITERATIONS" --warmup 5
          --expert-table "$OUT/std-expert-paths.tsv" --counts-dir "$OUT/shapes")
echo "${OURS_CMD[*]}" > "$OUT/ours.cmd"
timeout 150 "${OURS_CMD[@]}" > "$OUT/ours.md" 2> "$OUT/ours.err"
echo "layerbench-moe-kernels rc=$? at $(since)"; pack; grep -E "check|choice|error" "$OUT/ours.md" "$OUT/ours.err" | cut -c1-200

TORCH_CMD=(python3 bench/moe/torch_std.py --dir "$OUT/shapes" --models "$MODELS" --tokens "$TOKENS"
           --iterations "$ITERATIONS" --warmup 5 --json "$OUT/torch-std.json" --ours "$OUT/ours.md")
TORCH_LIMIT=150
if [ "$INTERLEAVED" = 1 ]; then
  TORCH_CMD+=(--ours-lib "$B/tools/liblayerbench_std_experts.so" --ours-paths "$OURS_PATHS" --pairs "$PAIRS")
  [ "$OURS_TABLE" = none ] || TORCH_CMD+=(--ours-table "$OUT/std-expert-paths.tsv")
  TORCH_LIMIT=$(( 150 + 90 * $(tr ',' '\n' <<< "$OURS_PATHS" | wc -l) ))
fi
echo "${TORCH_CMD[*]}" > "$OUT/torch.cmd"
PYTHONUNBUFFERED=1 timeout "$TORCH_LIMIT" "${TORCH_CMD[@]}" > "$OUT/side-by-side.md" 2> "$OUT/torch.err"
echo "torch rc=$? at $(since)"
[ "$INTERLEAVED" = 1 ] && sed -n '/^## ours and torch._grouped_mm interleaved/,$p' "$OUT/side-by-side.md" > "$OUT/interleaved.md"
cat "$OUT/ours.md"; sed -n '/^| model | routing/,/^## ours and torch/p' "$OUT/side-by-side.md"; tail -3 "$OUT/torch.err"
[ "$INTERLEAVED" = 1 ] && cat "$OUT/interleaved.md"
echo "total $(since)"
