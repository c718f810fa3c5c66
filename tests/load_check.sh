#!/usr/bin/env bash
# The load check: the ci preset's tests (`ctest --preset ci`, as `cmake --workflow --preset ci`
# runs them) N times in a row while a background CPU load keeps every core busy. A suite whose
# verdicts never read a timing passes every run. Per run it prints `N passed, N failed`, the
# failed tests and the slowest ones; the whole ctest output of each run is kept in the out folder.
#
# usage: tests/load_check.sh [-n RUNS] [-w WORKERS] [-s SLOWEST] [-o OUT_DIR] [-- CTEST_ARGS...]
#   -n RUNS      runs of the suite (default 3)
#   -w WORKERS   CPU load workers (default: the number of cores, `nproc`)
#   -s SLOWEST   slowest tests listed per run (default 15)
#   -o OUT_DIR   where run-K.log and summary.txt go (default build/ci/load-check)
#   CTEST_ARGS   passed on to ctest, e.g. -R 'lb.test.bench.ab' to check a few tests
# Needs the ci build (cmake --preset ci && cmake --build build/ci). The load is Debian's
# `stress-ng --cpu WORKERS` where it is installed, else WORKERS shell busy loops.
# Exit status: 0 when every run passed, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3
workers=$(nproc)
slowest=15
out=build/ci/load-check
while getopts "n:w:s:o:h" opt; do
  case $opt in
    n) runs=$OPTARG ;;
    w) workers=$OPTARG ;;
    s) slowest=$OPTARG ;;
    o) out=$OPTARG ;;
    h) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
for v in "$runs" "$workers" "$slowest"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "load_check: -n, -w and -s take a whole number >= 1 (got '$v')" >&2; exit 2; }
done
[ -f build/ci/CTestTestfile.cmake ] || {
  echo "load_check: no ci build in build/ci; run: cmake --preset ci && cmake --build build/ci" >&2; exit 2; }
mkdir -p "$out"

load_pids=()
stop_load() {
  for pid in "${load_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${load_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  load_pids=()
}
trap stop_load EXIT
trap 'exit 130' INT TERM
if command -v stress-ng >/dev/null; then
  stress-ng --cpu "$workers" --quiet &
  load_pids+=($!)
  load="stress-ng --cpu $workers"
else
  for _ in $(seq "$workers"); do
    bash -c 'while :; do :; done' &
    load_pids+=($!)
  done
  load="$workers shell busy loops"
fi

summary="$out/summary.txt"
{
  echo "load check: $runs runs of ctest --preset ci $* under $load"
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); host: $(nproc) cores; commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
} | tee "$summary"

all_passed=1
for r in $(seq "$runs"); do
  log="$out/run-$r.log"
  start=$(date +%s)
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  set +e
  ctest --preset ci "$@" >"$log" 2>&1
  rc=$?
  set -e
  took=$(( $(date +%s) - start ))
  # CTest's result lines: "  12/565 Test  #34: name ....   Passed    3.21 sec" (also Failed, ***Timeout,
  # ***Exception, Not Run; skipped tests read "Skipped" or "***Skipped").
  passed=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* +Passed +[0-9.]+ sec' "$log" || true)
  failed=$(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$log" | grep -vcE ' Passed +[0-9.]+ sec|Skipped|Not Run.*Disabled' || true)
  skipped=$(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$log" | grep -cE 'Skipped' || true)
  [ "$rc" -eq 0 ] && [ "$failed" -eq 0 ] || all_passed=0
  {
    echo
    echo "run $r: $passed passed, $failed failed ($skipped skipped; ctest exit $rc; ${took} s wall; load average before: $load_before)"
    if [ "$failed" -gt 0 ]; then
      echo "  failed:"
      grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$log" | grep -vE ' Passed +[0-9.]+ sec|Skipped|Not Run.*Disabled' |
        sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: /    /; s/ \.{2,}/ /'
    fi
    echo "  slowest:"
    grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* [0-9.]+ sec' "$log" |
      sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec.*/\2 \1/' | sort -rn | head -n "$slowest" |
      awk '{ printf "    %8.1f s  %s\n", $1, $2 }'
  } | tee -a "$summary"
done
stop_load
echo | tee -a "$summary"
if [ "$all_passed" -eq 1 ]; then
  echo "load check: all $runs runs passed" | tee -a "$summary"
else
  echo "load check: FAILED (see $out/run-*.log)" | tee -a "$summary"
  exit 1
fi
