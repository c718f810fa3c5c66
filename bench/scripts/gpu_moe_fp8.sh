#!/usr/bin/env bash
# One GPU, one call: the FP8 (e4m3) grouped expert GEMMs, rowwise and block-scaled (DeepSeek-V3's
# 1x128 / 128x128 recipe), at every preset's shape.
#   1. build the FP8 tests, layerbench-moe-kernels and liblayerbench_fp8_experts (lb_build, or the
#      pack of bench/scripts/prebuild.sh);
#   2. the host FP8 tests (format, recipes, oracle) and the GPU test of the kernels at edge shapes
#      against the CPU oracle on the dequantized operands; the QGMMA (FP8 wgmma) count of the
#      Hopper kernels' SASS;
#   3. layerbench-moe-kernels --models M --precision fp8-block (BLOCK=0 skips it): the
#      block-scaled GEMMs, the act quantization separate and fused into gate/up, checked, then
#      timed; it writes the router counts at TOKENS;
#   4. bench/moe/torch_fp8.py (below);
#   5. the same study with --precision fp8-rowwise (the oracle checks, then gate/up, down, the
#      fused-quantization path and BF16 beside them timed); with BLOCK=0 it runs before 4 and
#      writes the counts;
#   bench/moe/torch_fp8.py on the same shapes and counts: ours (rowwise) and
#      torch._scaled_grouped_mm interleaved in PAIRS ABBA pairs per GEMM, torch._scaled_mm 8192^3
#      as the ceiling; with BLOCK=1 (default) also --block: each block-scaled GEMM paired with the
#      dense ceiling.
# Everything goes under a scratch folder packed into $OUT/moe-fp8.tgz after every stage; the
# tables are copied to $OUT.
# Each study stage runs under STUDY_LIMIT seconds (default 240).
# usage: [TOKENS=8192] [ITERATIONS=20] [PAIRS=30] [BLOCK=1] [STUDY_LIMIT=240]
#        [MODELS=deepseek-v3,...] [VARIANTS=,unpaired] [BLOCK_VARIANTS=,unpaired] bench/scripts/gpu_moe_fp8.sh
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
RESULT=$OUT
OUT=$(mktemp -d /tmp/moe-fp8.XXXXXX)
TOKENS=${TOKENS:-8192}
ITERATIONS=${ITERATIONS:-20}
PAIRS=${PAIRS:-30}
BLOCK=${BLOCK:-1}
VARIANTS=${VARIANTS-}   # the rowwise launch variants paired with torch (torch_fp8.py --variants), e.g. ",unpaired"
BLOCK_VARIANTS=${BLOCK_VARIANTS-}  # the block-scaled launch variants paired with the dense ceiling, e.g. ",unpaired"
MODELS=${MODELS:-deepseek-v3,qwen3-30b-a3b,mixtral-8x7b,gpt-oss-120b,glm-4.5-air}
T_START=$(date +%s)
pack() {
  tar -czf "$RESULT/moe-fp8.tgz.part" -C "$OUT" . && mv "$RESULT/moe-fp8.tgz.part" "$RESULT/moe-fp8.tgz"
  for f in ours-fp8.md ours-fp8-block.md torch-fp8.md torch-fp8.json ctest.log; do [ -f "$OUT/$f" ] && cp "$OUT/$f" "$RESULT/"; done
  return 0
}
trap pack EXIT
since() { echo "+$(( $(date +%s) - T_START )) s"; }
{ date -u; echo "commit $(cat .git-sha 2>/dev/null || git rev-parse HEAD 2>/dev/null)";
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; } > "$OUT/machine.txt" 2>&1

lb_build test_fp8_host test_fp8_grouped_gpu layerbench-moe-kernels layerbench_fp8_experts || { cp "$RESULT"/build.log "$OUT"/ 2>/dev/null; exit 1; }
SM90_LIB=$(find "$B" -name 'liblb_moe_sm90.a' | head -1)
[ -n "$SM90_LIB" ] || SM90_LIB=$(readlink -f "$B/tools/layerbench-moe-kernels")  # a prebuilt pack has no static libraries
echo "build done at $(since)"; pack
CUOBJDUMP=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
echo "QGMMA instructions in $(basename "$SM90_LIB"): $("$CUOBJDUMP" --dump-sass "$SM90_LIB" 2>/dev/null | grep -c QGMMA)" \
  | tee -a "$OUT/machine.txt"

# The test binaries themselves (not ctest: a prebuilt pack has no CTest files).
{ timeout 60 "$B/tests/moe/test_fp8_host" && timeout 120 "$B/tests/moe/test_fp8_grouped_gpu"; } > "$OUT/ctest.log" 2>&1
RC=$?
echo "FP8 tests rc=$RC at $(since)"; pack; grep -E "tests passed|PASSED|FAILED|Failed|Skipped|fp8 rowwise h|fp8 block h|\*\*\*" "$OUT/ctest.log" | tail -30
[ "$RC" = 124 ] && { echo "the tests ran past their limit (a hang?): the study is not run"; exit 1; }

K="$B/tools/layerbench-moe-kernels"
mkdir -p "$OUT/shapes"
block_study() {  # writes the counts too
  BLOCK_CMD=("$K" --models "$MODELS" --precision fp8-block --std-tokens "$TOKENS" --iterations "$ITERATIONS" --warmup 5
             --counts-dir "$OUT/shapes")
  echo "${BLOCK_CMD[*]}" > "$OUT/ours-block.cmd"
  timeout "${STUDY_LIMIT:-240}" "${BLOCK_CMD[@]}" > "$OUT/ours-fp8-block.md" 2> "$OUT/ours-fp8-block.err"
  echo "layerbench-moe-kernels --precision fp8-block rc=$? at $(since)"; pack
}
rowwise_study() {
  OURS_CMD=("$K" --models "$MODELS" --precision fp8-rowwise --std-tokens "$TOKENS" --iterations "$ITERATIONS"
            --warmup 5 --counts-dir "$OUT/shapes")
  echo "${OURS_CMD[*]}" > "$OUT/ours.cmd"
  timeout "${STUDY_LIMIT:-240}" "${OURS_CMD[@]}" > "$OUT/ours-fp8.md" 2> "$OUT/ours-fp8.err"
  echo "layerbench-moe-kernels --precision fp8-rowwise rc=$? at $(since)"; pack
}
torch_peer() {
  local extra=()
  [ "$BLOCK" = 1 ] && extra=(--block --block-variants "$BLOCK_VARIANTS")
  LIB=$(readlink -f "$B/tools/liblayerbench_fp8_experts.so")
  TORCH_CMD=(python3 bench/moe/torch_fp8.py --dir "$OUT/shapes" --models "$MODELS" --ours-lib "$LIB"
             --pairs "$PAIRS" --warmup 5 --json "$OUT/torch-fp8.json" --variants "$VARIANTS" "${extra[@]}")
  echo "${TORCH_CMD[*]}" > "$OUT/torch.cmd"
  PYTHONUNBUFFERED=1 timeout "${STUDY_LIMIT:-240}" "${TORCH_CMD[@]}" > "$OUT/torch-fp8.md" 2> "$OUT/torch.err"
  echo "torch rc=$? at $(since)"; pack
}
# With BLOCK=1 the block study writes the counts and the torch peer runs before the rowwise study
# (what a short lease keeps); else the rowwise study writes them.
if [ "$BLOCK" = 1 ]; then
  block_study; torch_peer; rowwise_study
else
  rowwise_study; torch_peer
fi
[ -f "$OUT/ours-fp8-block.md" ] && { grep -v "^| .* | routing" "$OUT/ours-fp8-block.md" | cut -c1-400; tail -5 "$OUT/ours-fp8-block.err"; }
cat "$OUT/torch-fp8.md"; tail -5 "$OUT/torch.err"
grep -v "^| .* | routing" "$OUT/ours-fp8.md" | cut -c1-400; tail -5 "$OUT/ours-fp8.err"
echo "total $(since)"
