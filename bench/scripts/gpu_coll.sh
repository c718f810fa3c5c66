#!/usr/bin/env bash
# GPU proof for the foundation and layerbench-coll: builds layerbench with CUDA, runs the GPU
# tests, then layerbench-coll and nccl-tests side by side on NPROC GPUs in the same call.
# nccl-tests is NOT part of this repository: put its source in .peers/nccl-tests (git-ignored).
# usage: bench/scripts/gpu_coll.sh [NPROC]   (writes logs and JSON under $OUT)
set -uo pipefail
NP=${1:-2}
source "$(dirname "$0")/gpu_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv > "$OUT/gpus.txt" 2>&1
lb_build layerbench-coll lb.test.collectives.mpi || exit 1
( cd .peers/nccl-tests && make -j"$(nproc)" MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi NCCL_HOME=/usr \
    CUDA_HOME=/usr/local/cuda NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > "$OUT/nccl-tests-build.log" 2>&1 ) \
  || { tail -20 "$OUT/nccl-tests-build.log"; echo "nccl-tests build failed"; }
NT=.peers/nccl-tests/build

# QUICK=1 skips the GPU tests and the second sweep (the nccl-tests comparison only).
QUICK=${QUICK:-0}
echo "== GPU tests"
[ "$QUICK" = 1 ] || ctest --test-dir "$B" -L gpu --output-on-failure 2>&1 | tail -15 | tee "$OUT/ctest-gpu.txt"

echo "== layerbench-coll vs nccl-tests, $NP ranks"
LB="mpirun -np $NP ${MPIRUN_ENV[*]} $B/bench/coll/layerbench-coll --backend cuda"
$LB --ops all_gather,all_to_all,all_reduce -b 8 -e 512M -f 2 --warmup 5 --iterations 20 \
    --link-gbps 450 --json "$OUT/coll.json" > "$OUT/coll.txt" 2>&1; echo "layerbench-coll rc=$?"
# Small messages, long runs (1000 timed iterations), three variants: cudaMalloc buffers, NCCL-allocated
# buffers (ncclMemAlloc, as nccl-tests >= 2.19 uses) and, on top, the communicator config
# nccl-tests uses on NCCL >= 2.28 (nvlinkCentricSched).
SMALL=(--ops all_gather,all_to_all,all_reduce --dtype fp32 -b 8 -e 64K -f 4 --warmup 100 --iterations 1000)
$LB "${SMALL[@]}" --json "$OUT/coll-small-a_default.json" > "$OUT/coll-small-default.txt" 2>&1; echo "small default rc=$?"
$LB "${SMALL[@]}" --comm-alloc --json "$OUT/coll-small-b_commalloc.json" > "$OUT/coll-small-commalloc.txt" 2>&1; echo "small comm-alloc rc=$?"
$LB "${SMALL[@]}" --comm-alloc --nvlink-centric-sched --json "$OUT/coll-small-c_centric.json" \
    > "$OUT/coll-small-centric.txt" 2>&1; echo "small centric rc=$?"
[ "$QUICK" = 1 ] || $LB --ops scalar_exchange,all_to_allv,reduce_scatter,broadcast,sendrecv -b 1K -e 64M -f 8 --imbalance 2 \
    --iterations 50 --json "$OUT/coll-other.json" > "$OUT/coll-other.txt" 2>&1; echo "other ops rc=$?"
for op in all_gather alltoall all_reduce; do
  mpirun -np "$NP" "${MPIRUN_ENV[@]}" $NT/${op}_perf -b 8 -e 512M -f 2 -g 1 -n 20 -w 5 -c 1 \
    > "$OUT/nccl-tests-$op.txt" 2>&1; echo "nccl-tests $op rc=$?"
  mpirun -np "$NP" "${MPIRUN_ENV[@]}" $NT/${op}_perf -b 8 -e 64K -f 4 -g 1 -n 1000 -w 100 -c 1 \
    > "$OUT/nccl-tests-small-$op.txt" 2>&1; echo "nccl-tests small $op rc=$?"
done
python3 "$(dirname "$0")/compare_nccl_tests.py" "$OUT" | tee "$OUT/compare.md"
[ "$QUICK" = 1 ] || grep -E "scalar_exchange" "$OUT/coll-other.txt"
