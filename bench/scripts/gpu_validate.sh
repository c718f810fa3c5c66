#!/usr/bin/env bash
# GPU validation of a commit: the project's own CMake build with CUDA, every GPU-labelled test,
# and the fault tests on the cuda backend (one failing rank must end the job within seconds).
# usage: bench/scripts/gpu_validate.sh   (logs under $OUT)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
lb_build || exit 1
echo "== ctest -L gpu"
ctest --test-dir "$B" -L gpu -V > "$OUT/ctest-gpu-verbose.log" 2>&1; echo "ctest gpu rc=$?"
grep -E "^[0-9]+: \[  (PASSED|SKIPPED|FAILED) \]" "$OUT/ctest-gpu-verbose.log"; grep -E "tests passed|Test +#|Skipped|Failed" "$OUT/ctest-gpu-verbose.log" | tail -8 > "$OUT/ctest-gpu.log"
grep -E "tests passed|Test +#" "$OUT/ctest-gpu.log"
echo "== fault tests on the cuda backend (2 GPUs)"
for kind in throw wrong usage; do
  case $kind in
    throw) args=(--ops all_to_all -b 1K -e 4K --inject-fault 1:throw) ;;
    wrong) args=(--ops all_gather -b 1K -e 4K --inject-fault 1:wrong) ;;
    usage) args=(--iterations -3) ;;
  esac
  start=$(date +%s.%N)
  timeout 120 mpirun -np 2 "${MPIRUN_ENV[@]}" "$B/bench/coll/layerbench-coll" --backend cuda "${args[@]}" \
    > "$OUT/fault-$kind.log" 2>&1
  rc=$?
  printf '%s: exit %d after %.1f s; %s\n' "$kind" "$rc" "$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN{print a-b}')" \
    "$(grep -m1 -E 'fatal|wrong|must be' "$OUT/fault-$kind.log")"
done
