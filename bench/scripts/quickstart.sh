#!/usr/bin/env bash
# The main job in one command. In a source tree: install missing packages (when root),
# configure, build, and run. Installed (as layerbench-quickstart beside the binaries): run the
# installed binaries. On every local GPU through NCCL when there is one (the released MAGI-2
# geometry); otherwise on the CPU through MPI, with as many ranks as there are cores (2 to 4),
# at a small geometry that finishes in well under a minute. Prints the profile table.
# usage: bench/scripts/quickstart.sh [extra layerbench-moe flags]
# LAYERBENCH_QUICKSTART_PRESET=NAME builds that CMake preset instead (CI: `package`, which
# bench/scripts/package_check.sh has just built, so the quickstart does not build the tree again).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ngpu=0
command -v nvidia-smi >/dev/null && ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ -f "$here/../../CMakeLists.txt" ]; then
  cd "$here/../.."
  bench/scripts/deps.sh
  # Without a GPU the CUDA build would only cost time: the host preset builds no CUDA code.
  preset=host
  [ "$ngpu" -gt 0 ] && preset=default
  preset=${LAYERBENCH_QUICKSTART_PRESET:-$preset}
  echo "== building the '$preset' preset ($ngpu GPU(s) visible)"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" --target layerbench-moe layerbench-coll
  moe=build/$preset/bench/moe/layerbench-moe
  coll=build/$preset/bench/coll/layerbench-coll
  out=results/local
else
  moe=$here/layerbench-moe
  coll=$here/layerbench-coll
  out=layerbench-results
fi
# Binaries built without CUDA (the host preset, the Debian package) run on the CPU even where a
# GPU is visible.
case "$("$moe" --version 2>/dev/null || true)" in *"CUDA none"*) ngpu=0 ;; esac
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
mkdir -p "$out"
if [ "$ngpu" -gt 0 ]; then
  echo "== layerbench-moe on $ngpu GPU(s), released geometry, SP$ngpu"
  mpirun -np "$ngpu" -x NCCL_NVLS_ENABLE "$moe" --backend cuda \
    --json "$out/moe.json" --markdown "$out/moe.md" "$@"
else
  cores=$(nproc 2>/dev/null || echo 2)
  np=$(( cores < 2 ? 2 : (cores > 4 ? 4 : cores) ))
  [ "$np" -gt "$cores" ] && echo "warning: $np ranks on $cores core(s): host timings include time-slicing" >&2
  echo "== layerbench-moe on $np CPU ranks (host backend), small geometry"
  mpirun -np "$np" --oversubscribe "$moe" --backend host --hidden 256 --moe-heads 4 \
    --experts 8 --topk 2 --intermediate 64 --tokens 64 --iterations 10 --warmup 2 \
    --json "$out/moe.json" --markdown "$out/moe.md" "$@"
fi
echo "results: $out/"
