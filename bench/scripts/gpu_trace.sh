#!/usr/bin/env bash
# One GPU: --trace of the MAGI-2 layer profile and of one standard-block preset (qwen3-30b-a3b),
# each checked by tests/harness/trace_check.py; Nsight Systems over the preset's run with its
# NVTX summary (the component names); the cost of NVTX ranges and of tracing measured by
# layerbench-ab in interleaved runs (off / --nvtx on / --nvtx on --trace of every iteration),
# the metric each run's whole_layer median; layerbench-report over a trace and its results.
# Everything lands in $OUT, packed into one tarball.
# usage: [PAIRS=8] [PRESET=qwen3-30b-a3b] bench/scripts/gpu_trace.sh   (from a snapshot, with OUT=$OUT)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
PAIRS=${PAIRS:-20}
DEADLINE=${DEADLINE:-480}  # seconds after the start by which the interleaved study stops (its pairs so far are analysed)
PRESET=${PRESET:-qwen3-30b-a3b}
T_START=$(date +%s)
# One tarball comes back (the device tool returns a few files): everything else leaves $OUT.
pack() { tar -czf "$OUT/../trace.tgz" -C "$OUT" --exclude='*.nsys-rep' --exclude='*.sqlite' . && rm -rf "${OUT:?}"/* \
           && mv "$OUT/../trace.tgz" "$OUT/"; }
trap pack EXIT
{ date -u; echo "commit $(cat .git-sha 2>/dev/null || git rev-parse HEAD 2>/dev/null)";
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; } > "$OUT/machine.txt" 2>&1

lb_build layerbench-moe layerbench-ab layerbench-report || exit 1
echo "build done at +$(( $(date +%s) - T_START )) s"
MOE="$B/bench/moe/layerbench-moe"
since() { echo "+$(( $(date +%s) - T_START )) s"; }

# 1. Traces: the MAGI-2 layer (one rank's expert work at 15000 tokens, as gpu_profiles_1gpu.sh)
#    and the standard block of the preset.
MAGI=("$MOE" --backend cuda --tokens 15000 --iterations 30 --warmup 5 --layers 4 --graph)
STD=("$MOE" --backend cuda --model "$PRESET" --tokens 8192 --warmup 5)
run_traced() {  # tag, command...
  local tag=$1; shift
  local cmd=("$@" --trace "$OUT/$tag-trace.json" --json "$OUT/$tag.json" --markdown "$OUT/$tag.md")
  echo "${cmd[*]}" > "$OUT/$tag.cmd"
  timeout 240 "${cmd[@]}" > "$OUT/$tag.txt" 2> "$OUT/$tag.err"
  echo "$tag rc=$? at $(since)"
  # Device and host clocks meet in host-clock components: nesting holds to the alignment's error.
  local tol
  tol=$(python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['otherData']; print(m['device_origin_error_us'] + 1.0)" "$OUT/$tag-trace.json" 2>/dev/null || echo 1)
  python3 tests/harness/trace_check.py "$OUT/$tag-trace.json" --ranks 1 --expect-collectives --tolerance-us "$tol" \
    --results "$OUT/$tag.json" \
    > "$OUT/$tag-trace-check.txt" 2>&1
  echo "$tag trace check rc=$? (tolerance $tol us)"; tail -1 "$OUT/$tag-trace-check.txt"
}
run_traced magi2 "${MAGI[@]}"
run_traced "$PRESET" "${STD[@]}" --iterations 30
"$B/bench/report/layerbench-report" "$OUT/$PRESET.json" "$OUT/$PRESET-trace.json" "$OUT/magi2-trace.json" \
  -o "$OUT/report" > "$OUT/report.log" 2>&1
echo "report rc=$?"

# 2. Nsight Systems over the preset's run: the NVTX ranges are the component names.
# nsys: on PATH, in the toolkit's bundled Nsight Systems, or a standalone install.
if command -v nsys > /dev/null; then NSYS=$(command -v nsys)
else NSYS=$(ls -d /usr/local/cuda*/bin/nsys /usr/local/cuda*/nsight-systems*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys \
              /opt/nvidia/nsight-systems/*/bin/nsys /usr/lib/nsight-systems/bin/nsys 2>/dev/null | head -1); fi
if [ -n "${NSYS:-}" ]; then
  mkdir -p "$OUT/nsys"
  "$NSYS" --version > "$OUT/nsys/version.txt" 2>&1
  timeout 200 "$NSYS" profile --trace=cuda,nvtx --sample=none --cpuctxsw=none --force-overwrite=true \
    -o "$OUT/nsys/$PRESET" "${STD[@]}" --iterations 10 --json "$OUT/nsys/$PRESET.json" > "$OUT/nsys/profile.log" 2>&1
  echo "nsys profile rc=$? at $(since)"
  for report in nvtx_sum nvtxsum; do
    "$NSYS" stats --report "$report" --format csv --output "$OUT/nsys/$PRESET" "$OUT/nsys/$PRESET.nsys-rep" \
      > "$OUT/nsys/stats-$report.log" 2>&1 && break
  done
  ls "$OUT/nsys"; cat "$OUT/nsys/"*nvtx*.csv 2>/dev/null | head -30
else
  { echo "nsys: not found on this machine (PATH, /usr/local/cuda*, /opt/nvidia)"; ls -d /usr/local/cuda* /opt/nvidia* 2>&1;
    find / -xdev -maxdepth 6 -name 'nsys*' -not -path '/proc/*' 2>/dev/null | head; } | tee "$OUT/nsys-missing.txt"
  # The NVTX names without nsys: the injection library counts each name's pushes and pops.
  if lb_build layerbench_nvtx_names; then
    NVTX_INJECTION64_PATH="$B/tools/liblayerbench_nvtx_names.so" LAYERBENCH_NVTX_NAMES="$OUT/nvtx-names-$PRESET.md" \
      timeout 200 "${STD[@]}" --iterations 10 --nvtx on --json "$OUT/nvtx-names-$PRESET.json" > "$OUT/nvtx-names.log" 2>&1
    echo "nvtx names rc=$?"; cat "$OUT/nvtx-names-$PRESET.md"
  fi
fi

# 3. What NVTX and tracing cost: interleaved runs (layerbench-ab, order alternating between pairs)
#    of the MAGI-2 layer at one layer, telemetry off (short runs); metrics each run's whole_layer
#    median (CUDA events) and moe_per_layer_exchange's (host clock: host-side costs show there).
#    Arms: --nvtx off, --nvtx on, --nvtx on with every timed iteration traced.
OVB=("$MOE" --backend cuda --tokens 15000 --iterations 30 --warmup 5 --layers 1 --telemetry off --skip-check
     --json "$OUT/overhead-run.json")
"${OVB[@]}" --nvtx off > "$OUT/overhead-pilot.txt" 2>&1
idx() { python3 -c "import json,sys; print([r['name'] for r in json.load(open(sys.argv[1]))['results']].index(sys.argv[2]))" "$OUT/overhead-run.json" "$1"; }
IDX=$(idx whole_layer); IDX2=$(idx moe_per_layer_exchange)
echo "${OVB[*]}" > "$OUT/overhead.cmd"
LEFT=$(( DEADLINE - ($(date +%s) - T_START) )); [ "$LEFT" -lt 60 ] && LEFT=60
echo "overhead study: up to $PAIRS pairs, stops after $LEFT s"
timeout "$LEFT" "$B/bench/ab/layerbench-ab" run --pairs "$PAIRS" -N \
  --base "${OVB[*]} --nvtx off" \
  --candidate "${OVB[*]} --nvtx on" \
  --candidate "${OVB[*]} --nvtx on --trace $OUT/overhead-trace.json --trace-iterations 30" \
  --name nvtx-off --name nvtx-on --name nvtx-on+trace-all \
  --metric "whole_layer(ms)=file:$OUT/overhead-run.json:json:results.$IDX.median_ms" \
  --metric "moe_per_layer_exchange(ms)=file:$OUT/overhead-run.json:json:results.$IDX2.median_ms" \
  --study "$OUT/overhead.jsonl" --json "$OUT/overhead-ab.json" --markdown "$OUT/overhead-ab.md" \
  > "$OUT/overhead-ab.txt" 2>&1
echo "overhead study rc=$? at $(since)"
# The pairs completed (all of them, or those before the deadline), analysed once more on their own.
"$B/bench/ab/layerbench-ab" analyze "$OUT/overhead.jsonl" --json "$OUT/overhead-analysis.json" \
  --markdown "$OUT/overhead-analysis.md" > "$OUT/overhead-analysis.txt" 2>&1
echo "overhead analysis rc=$?"
head -60 "$OUT/overhead-analysis.md" 2>/dev/null
echo "total $(since)"
