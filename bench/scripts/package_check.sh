#!/usr/bin/env bash
# Builds the Debian package (the `package` preset: host backend, man pages), unpacks it into an
# empty prefix and runs the installed copy from there: layerbench-coll on the host backend,
# layerbench-ab --version, man layerbench-coll. Checks that developer binaries stay out of bin/.
# usage: bench/scripts/package_check.sh [PREFIX]   (default: a new temporary directory)
set -euo pipefail
cd "$(dirname "$0")/../.."
prefix=${1:-$(mktemp -d)}
cmake --preset package > /dev/null
cmake --build --preset package
cpack --preset package
deb=$(ls -t build/package/layerbench_*.deb | head -1)
echo "== $deb"
dpkg-deb --info "$deb" | sed -n '/Package:/,/Description:/p'
dpkg-deb --contents "$deb" | awk '{print $NF}' > "$prefix.contents"
dpkg -x "$deb" "$prefix"
bin=$prefix/usr/bin
for b in layerbench-coll layerbench-moe layerbench-attn layerbench-ab layerbench-gate layerbench-report layerbench-history \
         layerbench-quickstart; do
  [ -x "$bin/$b" ] || { echo "package_check: $b missing from usr/bin" >&2; exit 1; }
done
for b in layerbench-ab-bench layerbench-gate-sim layerbench-history-sim; do
  [ ! -e "$bin/$b" ] || { echo "package_check: developer binary $b is in usr/bin" >&2; exit 1; }
  [ -x "$prefix/usr/libexec/layerbench/$b" ] || { echo "package_check: $b missing from libexec" >&2; exit 1; }
done
[ -x "$prefix/usr/share/layerbench/scripts/gpu_coll.sh" ] || { echo "package_check: GPU scripts missing" >&2; exit 1; }
[ -f "$prefix/usr/lib/cmake/layerbench/layerbenchConfig.cmake" ] || [ -n "$(ls "$prefix"/usr/lib/*/cmake/layerbench/layerbenchConfig.cmake 2>/dev/null)" ] \
  || { echo "package_check: CMake package config missing" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "== installed layerbench-ab --version"
"$bin/layerbench-ab" --version
echo "== installed layerbench-coll --backend host"
"$bin/layerbench-coll" --backend host --ops all_reduce -b 1K -e 64K -f 8 --iterations 5 --warmup 1 \
  --json "$prefix/coll.json" | tee "$prefix/coll.txt"
grep -q "Avg bus bandwidth" "$prefix/coll.txt"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['complete'] and d['results']" "$prefix/coll.json"
echo "== man layerbench-coll (from the installed pages)"
MANPATH=$prefix/usr/share/man man layerbench-coll > "$prefix/man.txt"
grep -q -- "--iterations" "$prefix/man.txt" && head -12 "$prefix/man.txt"
echo "== installed layerbench-quickstart (no GPU: the host backend, the installed binaries)"
( cd "$prefix" && "$bin/layerbench-quickstart" > quickstart.txt 2>&1 ) || { tail -20 "$prefix/quickstart.txt"; exit 1; }
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['complete'] and d['results']" \
  "$prefix/layerbench-results/moe.json"
echo "== find_package(layerbench) from the prefix"
probe=$prefix/cmake-probe
mkdir -p "$probe"
cat > "$probe/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(probe NONE)
find_package(layerbench 0.1 REQUIRED)
get_target_property(coll layerbench::layerbench-coll LOCATION)
if(NOT EXISTS "${coll}")
  message(FATAL_ERROR "layerbench::layerbench-coll points at a missing ${coll}")
endif()
message(STATUS "layerbench::layerbench-coll = ${coll}")
CMAKE
cmake -S "$probe" -B "$probe/build" -DCMAKE_PREFIX_PATH="$prefix/usr" | grep "layerbench::"
echo "package_check: OK ($deb, unpacked into $prefix)"
