#!/usr/bin/env bash
# Builds layerbench-moe and its tests on the GPU machine, runs the GPU correctness tests, then
# the profiles. Usage: [EXPERT_GEMM=auto] [COMPARE="bucketed ..."] bench/scripts/gpu_moe_profile.sh OUT_DIR [quick|final]
# (EXPERT_GEMM and COMPARE name layerbench-moe expert paths: auto, bucketed)
set -u
source "$(dirname "$0")/require_gpu.sh"
OUT=${1:?out dir}; MODE=${2:-quick}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
B=${BUILD_DIR:-/tmp/lb-build}
LOG=$OUT/log.txt
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAYERBENCH_ENABLE_TESTING=ON -DLAYERBENCH_CUDA=ON > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
cmake --build $B -j32 --target layerbench-moe test_moe_mpi >> $OUT/build.txt 2>&1 || { grep -E "error" $OUT/build.txt | head -30; exit 1; }
MPI="mpirun -np 2 --bind-to none -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv >> $LOG 2>&1
echo "== gpu tests" >> $LOG
timeout 120 $MPI $B/tests/moe/test_moe_mpi --gpu >> $LOG 2>&1; echo "tests rc=$?" >> $LOG
if [ "$MODE" = quick ]; then
  echo "== sp2" >> $LOG
  timeout 100 $MPI $B/bench/moe/layerbench-moe --layout sp --iterations 10 --warmup 3 --json $OUT/sp2.json >> $LOG 2>&1; echo "rc=$?" >> $LOG
  echo "== tp2" >> $LOG
  timeout 80 $MPI $B/bench/moe/layerbench-moe --layout tp --iterations 10 --warmup 3 --json $OUT/tp2.json >> $LOG 2>&1; echo "rc=$?" >> $LOG
else
  G=${EXPERT_GEMM:-auto}
  echo "== sp2 final" >> $LOG
  timeout 150 $MPI $B/bench/moe/layerbench-moe --layout sp --expert-gemm $G --iterations 30 --warmup 5 --ab metadata --pairs 31 --layers 36 --json $OUT/sp2.json --markdown $OUT/sp2.md >> $LOG 2>&1; echo "rc=$?" >> $LOG
  echo "== tp2 final" >> $LOG
  timeout 100 $MPI $B/bench/moe/layerbench-moe --layout tp --expert-gemm $G --iterations 30 --warmup 5 --json $OUT/tp2.json --markdown $OUT/tp2.md >> $LOG 2>&1; echo "rc=$?" >> $LOG
  for m in ${COMPARE:-}; do  # other expert paths in the same session, for comparison
    echo "== sp2 $m" >> $LOG
    timeout 100 $MPI $B/bench/moe/layerbench-moe --layout sp --expert-gemm $m --iterations 20 --warmup 5 --json $OUT/sp2_$m.json >> $LOG 2>&1; echo "rc=$?" >> $LOG
  done
fi
tail -c 9000 $LOG
