#!/usr/bin/env bash
# One GPU: the NVTX range names of the MAGI-2 layer profile and of one standard-block preset,
# counted by the injection library liblayerbench_nvtx_names (NVTX_INJECTION64_PATH), for machines
# without Nsight Systems. Tables nvtx-names-<tag>.md in $OUT, packed into one tarball.
# usage: [PRESET=qwen3-30b-a3b] bench/scripts/gpu_nvtx_names.sh   (from a snapshot, with OUT=$OUT)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
PRESET=${PRESET:-qwen3-30b-a3b}
pack() { tar -czf "$OUT/../names.tgz" -C "$OUT" . && rm -rf "${OUT:?}"/* && mv "$OUT/../names.tgz" "$OUT/"; }
trap pack EXIT
{ date -u; echo "commit $(cat .git-sha 2>/dev/null || git rev-parse HEAD 2>/dev/null)";
  nvidia-smi --query-gpu=name,driver_version --format=csv; } > "$OUT/machine.txt" 2>&1
lb_build layerbench-moe layerbench_nvtx_names || exit 1
MOE="$B/bench/moe/layerbench-moe"
named() {  # tag, command...: the command with --nvtx on under the injection library
  local tag=$1; shift
  echo "$* --nvtx on" > "$OUT/$tag.cmd"
  NVTX_INJECTION64_PATH="$B/tools/liblayerbench_nvtx_names.so" LAYERBENCH_NVTX_NAMES="$OUT/nvtx-names-$tag.md" \
    timeout 200 "$@" --nvtx on > "$OUT/$tag.txt" 2> "$OUT/$tag.err"
  echo "$tag rc=$?"; cat "$OUT/nvtx-names-$tag.md"
}
named magi2 "$MOE" --backend cuda --tokens 15000 --iterations 5 --warmup 2 --layers 4 --graph --json "$OUT/magi2.json"
named "$PRESET" "$MOE" --backend cuda --model "$PRESET" --tokens 8192 --iterations 5 --warmup 2 --json "$OUT/$PRESET.json"
