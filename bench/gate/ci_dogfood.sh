#!/usr/bin/env bash
# Dogfood the performance gate in CI on this very build: unchanged code against itself (A/A).
#
# usage: bench/gate/ci_dogfood.sh BUILD_DIR [OUT_DIR]
# Exit: 0 pass; 1 the paired A/A gate called a regression; 2 bad input, a tool that did not run, or
# no benchmark binary built.
#
# Only the interleaved design decides. Two separate launches on a shared 2-core CI box differ by what
# the machine was doing, not by code: a clean-clone CI run measured the candidate launch of a 1 KiB
# 2-rank all_gather at +93% to +145% over the baseline launch (Mann-Whitney p ~ 1e-17, because the
# shift between the two processes is real), so an unpaired verdict there would fail CI for nothing
# the change did, at any threshold that still means something. That is what the paired design is for.
#
#  1. Unpaired (informational): two launches, `layerbench-gate --baseline --candidate`. It checks
#     the pipeline on real output (result JSON -> matching -> tests -> verdict -> markdown): exit 0
#     or 1 are both a working gate; anything else fails the job. The verdict is printed, not gated.
#  2. Paired (decides): interleaved A/A pairs from `layerbench-ab run` (the order alternates pair by
#     pair, so drift hits both arms alike), gated with `layerbench-gate --pairs --alpha 0.001`.
#     A regression needs the one-sided exact signed-rank p < 0.001 and the bootstrap bound beyond the
#     threshold. With 10 pairs the smallest one-sided p is 1/1024 < 0.001: the gate can only call a
#     regression when all 10 pairs put the candidate behind. Under A/A, with the two runs of a pair
#     exchangeable, that happens with probability at most 1/1024 whatever the machine is doing,
#     before the threshold test cuts it further; a real 2x slowdown of the host path still puts all
#     10 pairs behind and fails the job.
set -euo pipefail

build=${1:?usage: ci_dogfood.sh BUILD_DIR [OUT_DIR]}
out=${2:-$build/gate-dogfood}
gate="$build/bench/gate/layerbench-gate"
coll="$build/bench/coll/layerbench-coll"
ab="$build/bench/ab/layerbench-ab"
pairs=${LB_DOGFOOD_PAIRS:-10}
mkdir -p "$out"
for tool in "$gate" "$coll" "$ab"; do
  [[ -x $tool ]] || { echo "ci_dogfood: $tool not built" >&2; exit 2; }
done
# Open MPI refuses to run as root unless told; CI containers often are root.
if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
mpi="${MPIEXEC:-mpirun} -np 2 --oversubscribe"

# 1. Unpaired, informational.
for arm in baseline candidate; do
  $mpi "$coll" --backend host --ops all_gather -b 1K -e 64K -f 4 --iterations 30 --json "$out/$arm.json" \
    > "$out/$arm.txt"
done
set +e
"$gate" --baseline "$out/baseline.json" --candidate "$out/candidate.json" --threshold 50% \
  --markdown "$out/gate.md" > "$out/gate.txt"
rc=$?
set -e
cat "$out/gate.txt"
if [[ $rc -ne 0 && $rc -ne 1 ]]; then
  echo "ci_dogfood: the unpaired gate exited $rc (neither a pass nor a verdict)" >&2
  exit 2
fi
[[ -s $out/gate.md ]] || { echo "ci_dogfood: the unpaired gate wrote no markdown" >&2; exit 2; }
echo "ci_dogfood: unpaired gate exit $rc (informational: two launches on a shared box; markdown in $out/gate.md)"

# 2. Paired, decides.
cmd="$mpi $coll --backend host --ops all_gather -b 64K -e 64K --iterations 30"
rm -f "$out/study.jsonl"
"$ab" run --base "$cmd" --candidate "$cmd" --pairs "$pairs" \
  --metric 'regex:all_gather +65536 +bf16 +\| +([0-9.]+)' --out "$out/study.jsonl" > "$out/study.txt"
set +e
"$gate" --pairs "$out/study.jsonl" --threshold "${LB_DOGFOOD_PAIRED_THRESHOLD:-10%}" --alpha 0.001 \
  --markdown "$out/gate-paired.md"
rc=$?
set -e
echo "ci_dogfood: paired A/A gate exit $rc ($pairs interleaved pairs, alpha 0.001); markdown in $out/gate-paired.md"
exit $rc
