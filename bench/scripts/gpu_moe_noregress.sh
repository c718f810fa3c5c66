#!/usr/bin/env bash
# One GPU: is MAGI-2 unchanged or faster at this commit than at an older one?
#   1. builds layerbench-moe from BASE_SRC (an exported older commit, its .git-sha beside it) and
#      layerbench-moe + layerbench-ab from this tree, side by side (lb_build, Release, CUDA on);
#   2. an interleaved A/B (layerbench-ab run, alternate order AB BA ..., PAIRS pairs after one
#      warm-up round) of the 15000-token MAGI-2 profile: base = the older binary, candidate = this
#      one; each run is checked by the binary itself (CPU oracle, graph replay) before it times,
#      and moe_medians.py turns its JSON into the metrics whole_layer, routing and
#      local_expert_compute (median over the run's iterations, ms).
# The study journal (study.jsonl) is analysed afterwards with layerbench-ab analyze / layerbench-gate
# (a regression beyond 1% of any of the three fails). Every run's JSON is kept.
# Everything is packed into $OUT/moe-noregress.tgz (after every stage: a run cut short returns what it had).
# usage: OUT=$OUT BASE_SRC=../../.dev-base/src [PAIRS=10] [ITERATIONS=20] [LIMIT_S=540] [PROFILE_EXTRA=...] bash bench/scripts/gpu_moe_noregress.sh
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
RESULT=$OUT
OUT=$(mktemp -d /tmp/moe-noregress.XXXXXX)
PAIRS=${PAIRS:-10}
ITERATIONS=${ITERATIONS:-20}
BASE_SRC=$(cd "${BASE_SRC:?BASE_SRC: an exported older source tree}" && pwd)
T_START=$(date +%s)
pack() {
  tar -czf "$RESULT/moe-noregress.tgz.part" -C "$OUT" . && mv "$RESULT/moe-noregress.tgz.part" "$RESULT/moe-noregress.tgz"
  return 0
}
trap pack EXIT
since() { echo "+$(( $(date +%s) - T_START )) s"; }
{ date -u; echo "candidate commit $(cat .git-sha 2>/dev/null || git rev-parse HEAD 2>/dev/null)";
  echo "base commit $(cat "$BASE_SRC/.git-sha" 2>/dev/null || echo unknown)";
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; } > "$OUT/machine.txt" 2>&1

mkdir -p "$OUT/build-base" "$OUT/build-new" "$OUT/runs"
BASE_B=${B}-base
(cd "$BASE_SRC" && OUT="$OUT/build-base" B="$BASE_B" lb_build layerbench-moe) & pid_base=$!
(OUT="$OUT/build-new" lb_build layerbench-moe layerbench-ab) & pid_new=$!
wait $pid_base; rc_base=$?; wait $pid_new; rc_new=$?
echo "builds: base rc=$rc_base, candidate rc=$rc_new at $(since)"
[ "$rc_base" = 0 ] && [ "$rc_new" = 0 ] || exit 1
pack

# PROFILE_EXTRA: flags added to both arms (e.g. --dense-gemm-size 256: the components that declare
# FLOPs are timed in pairs with the dense reference GEMM since the power-cap work; a small reference
# leaves them timed nearly alone, as the older commit times them).
PROFILE="--backend cuda --layout sp --tokens 15000 --iterations $ITERATIONS --warmup 5 ${PROFILE_EXTRA:-}"
MED="python3 $PWD/bench/scripts/moe_medians.py"
COMPONENTS=whole_layer,routing,local_expert_compute
# Each run writes its own JSON (the pair index from the journal's length is not known to the arm;
# a counter file gives every run its own name).
echo 0 > "$OUT/runs/counter"
arm() {  # NAME BINARY
  echo "n=\$(( \$(cat $OUT/runs/counter) + 1 )); echo \$n > $OUT/runs/counter; $MED $OUT/runs/$1-\$n.json $COMPONENTS -- $2 $PROFILE"
}
METRICS=()
for c in ${COMPONENTS//,/ }; do METRICS+=(--metric "$c(ms)=regex:${c}_ms=([0-9.eE+-]+)"); done
AB=(run --base "$(arm base "$BASE_B/bench/moe/layerbench-moe")" --candidate "$(arm new "$B/bench/moe/layerbench-moe")"
    --name base --name candidate --pairs "$PAIRS" --warmup 1 --order alternate "${METRICS[@]}"
    --timeout 120 --study "$OUT/study.jsonl")
printf '%q ' "$B/bench/ab/layerbench-ab" "${AB[@]}" > "$OUT/ab.cmd"; echo >> "$OUT/ab.cmd"
# The study stops (journal kept, pairs so far analysable) when LIMIT_S seconds of the call are spent.
LEFT=$(( ${LIMIT_S:-540} - $(date +%s) + T_START ))
timeout -s INT "$LEFT" "$B/bench/ab/layerbench-ab" "${AB[@]}" > "$OUT/ab.md" 2> "$OUT/ab.err"
echo "A/B rc=$? at $(since)"; tail -30 "$OUT/ab.md"; tail -5 "$OUT/ab.err"
