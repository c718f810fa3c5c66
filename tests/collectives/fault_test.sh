#!/usr/bin/env bash
# A fault on one rank must end every rank with a non-zero exit, never a hang. Real time only as a
# watchdog: the job ends in about a second; 120 s holds on a loaded machine, a hang never ends.
# usage: fault_test.sh MPIEXEC COLL_BINARY KIND   (KIND: wrong | throw | usage | cudaflag)
set -u
mpiexec=$1 bin=$2 kind=$3
case $kind in
  wrong) args=(--backend host --ops all_gather -b 1K -e 4K --iterations 2 --warmup 1 --inject-fault 1:wrong) ;;
  throw) args=(--backend host --ops all_to_all -b 1K -e 4K --iterations 2 --warmup 1 --inject-fault 1:throw) ;;
  usage) args=(--backend host --iterations -3) ;;
  cudaflag) args=(--backend host --nvlink-centric-sched --ops all_reduce -b 8 -e 8) ;;
  *) echo "unknown kind $kind"; exit 2 ;;
esac
start=$(date +%s)
out=$(timeout 180 "$mpiexec" -np 4 --oversubscribe "$bin" "${args[@]}" 2>&1)
rc=$?
elapsed=$(( $(date +%s) - start ))
echo "$out" | tail -5
echo "exit code $rc after ${elapsed}s"
[ "$rc" -ne 0 ] || { echo "FAIL: expected a non-zero exit"; exit 1; }
[ "$rc" -ne 124 ] || { echo "FAIL: the job hung"; exit 1; }
[ "$elapsed" -le 120 ] || { echo "FAIL: took ${elapsed}s"; exit 1; }
case $kind in
  wrong) echo "$out" | grep -q "wrong" || { echo "FAIL: no data-check message"; exit 1; } ;;
  throw) echo "$out" | grep -q "injected fault" || { echo "FAIL: no fault message"; exit 1; } ;;
  usage) [ "$rc" -eq 2 ] && echo "$out" | grep -q -- "--iterations -3: must be a whole number" || { echo "FAIL: want exit 2 + message"; exit 1; } ;;
  cudaflag) [ "$rc" -eq 2 ] && echo "$out" | grep -q -- "only the CUDA backend uses" || { echo "FAIL: want exit 2 + message"; exit 1; } ;;
esac
echo PASS
