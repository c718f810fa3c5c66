#!/usr/bin/env bash
# The main job in one command: install missing packages (when root), configure, build, and run
# the default profile on whatever this machine has: every local GPU through NCCL when present,
# otherwise 4 MPI ranks on the CPU at a small geometry. Prints the profile table.
# usage: bench/scripts/quickstart.sh [extra layerbench-moe flags]
set -euo pipefail
cd "$(dirname "$0")/../.."
bench/scripts/deps.sh
preset=default
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" --target layerbench-moe layerbench-coll
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
bin=build/$preset/bench
ngpu=0
command -v nvidia-smi >/dev/null && ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
mkdir -p results/local
if [ -x "$bin/moe/layerbench-moe" ]; then
  if [ "$ngpu" -gt 0 ]; then
    echo "== layerbench-moe on $ngpu GPU(s), released geometry, SP$ngpu"
    mpirun -np "$ngpu" -x NCCL_NVLS_ENABLE "$bin/moe/layerbench-moe" --backend cuda \
      --json results/local/moe.json --markdown results/local/moe.md "$@"
  else
    echo "== layerbench-moe on 4 CPU ranks (host backend), small geometry"
    mpirun -np 4 --oversubscribe "$bin/moe/layerbench-moe" --backend host --hidden 256 --moe-heads 4 \
      --experts 8 --topk 2 --intermediate 64 --tokens 64 --iterations 10 --warmup 2 \
      --json results/local/moe.json --markdown results/local/moe.md "$@"
  fi
else
  np=$([ "$ngpu" -gt 0 ] && echo "$ngpu" || echo 4)
  mpirun -np "$np" --oversubscribe "$bin/coll/layerbench-coll" --ops all_gather,all_to_all -b 1K -e 16M -f 4 "$@"
fi
echo "results: results/local/"
