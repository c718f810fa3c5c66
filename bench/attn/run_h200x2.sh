#!/usr/bin/env bash
# The committed GPU measurement of layerbench-attn on 2 x H200 (nvidia-h200-x2): build, GPU
# tests, small-shape correctness (joint tokens, uneven lengths, both cuDNN graph forms), the
# timed topologies at H = 14 and 7, D = 128, S = 16K/32K/64K, and torch's cuDNN SDPA at the
# same per-rank shapes with the same warm-up and iterations. Writes into $1 (default $OUT).
set -uo pipefail
source "$(dirname "$0")/../scripts/require_gpu.sh"
out=${1:-$OUT}
build=${BUILD_DIR:-/tmp/lb-attn-build}
warmup=${WARMUP:-5}
iters=${ITERS:-30}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi="mpirun -np 2 -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS"
bin=$build/bench/attn/layerbench-attn
log=$out/log.txt
{
  echo "date: $(date -u +%FT%TZ)  commit: ${LB_COMMIT:-$(git rev-parse HEAD 2>/dev/null)}"
  nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAYERBENCH_ENABLE_TESTING=ON \
    -DLAYERBENCH_CUDA=ON > "$out/configure.txt" 2>&1 || { tail -30 "$out/configure.txt"; exit 1; }
  cmake --build "$build" -j32 --target layerbench-attn lb.test.attention lb.test.attention.cudnn 2>&1 | tail -15
  [ -x "$bin" ] || exit 1
  "$build/tests/attention/lb.test.attention.cudnn" 2>&1 | tail -15
  "$build/tests/attention/lb.test.attention" 2>&1 | tail -3
  echo "== correctness, small shapes (cuda backend)"
  $mpi "$bin" --backend cuda --heads 7 --head-dim 128 --seqs 1024,1030 --text-tokens 77 \
    --topologies usp2+uaa,cp2 --warmup 1 --iterations 3 > /dev/null || echo "SMALL CHECK FAILED"
  $mpi "$bin" --backend cuda --heads 14 --head-dim 128 --seqs 2048 --text-tokens 64 --sdpa composite \
    --topologies usp2,cp2 --warmup 1 --iterations 3 > /dev/null || echo "COMPOSITE CHECK FAILED"
  echo "== timed topologies"
  $mpi "$bin" --backend cuda --heads 14 --head-dim 128 --seqs 16384,32768,65536 \
    --topologies usp2,usp2+uaa,cp2 --warmup "$warmup" --iterations "$iters" --verify-budget 3e8 \
    --json "$out/attn_h14.json" --markdown "$out/attn_h14.md" > /dev/null
  $mpi "$bin" --backend cuda --heads 7 --head-dim 128 --seqs 16384,32768,65536 \
    --topologies usp2+uaa,cp2 --warmup "$warmup" --iterations "$iters" --verify-budget 3e8 \
    --json "$out/attn_h7.json" --markdown "$out/attn_h7.md" > /dev/null
  cat "$out/attn_h14.md" "$out/attn_h7.md"
  echo "== torch cuDNN SDPA, same per-rank shapes"
  shapes=""
  for s in 16384 32768 65536; do shapes+="7:$s:$s,14:$((s / 2)):$s,4:$s:$s,7:$((s / 2)):$s,"; done
  python3 bench/attn/torch_sdpa.py --shapes "${shapes%,}" --warmup "$warmup" --iterations "$iters" \
    --json "$out/torch_sdpa.json"
  python3 bench/attn/compare.py "$out/torch_sdpa.json" "$out/attn_h14.json" "$out/attn_h7.json" \
    | tee "$out/compare.md"
  nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv
} 2>&1 | tee "$log"
