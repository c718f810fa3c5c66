#!/usr/bin/env bash
# One GPU: the MoE layer toward its limit in one call. Builds, runs every one-GPU test
# (ctest -L gpu -E np2), the side-by-side with torch (gpu_moe_vs_torch.sh), then one-rank
# profiles at 15000 and 7500 tokens (12 heads: 352 / 176 rows per expert) per expert path with
# the layer and the stack also replayed as CUDA graphs; prints the figures the issue tracks.
# NCU=1 adds a per-kernel time listing (Nsight Compute, clocks and caches left alone) of the
# first layer forward at 15000 tokens with the first mode.
# usage: bench/scripts/gpu_moe_limit.sh [MODE...]   (default: auto fused)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
MODES=("$@"); [ ${#MODES[@]} -gt 0 ] || MODES=(auto fused)
lb_build || exit 1
(cd "$B" && timeout 240 ctest -L gpu -E np2 --timeout 90 --output-on-failure > "$OUT/ctest-gpu.log" 2>&1)
echo "ctest -L gpu -E np2 rc=$?"
grep -E "tests passed|tests failed|Failed|\*\*\*" "$OUT/ctest-gpu.log" | head -20
"$B/tests/moe/test_router_gpu" 2>&1 | grep -E "^router T"
# The device-side schedule's kernels must pass their tests before a profile runs them.
if ! grep -qE "test_expert_schedule_gpu \.+ +Passed" "$OUT/ctest-gpu.log"; then
  echo "device-side schedule tests failed: profiling the host-planned path only"; MODES=(fused)
fi
BUILD_DIR="$B" bash "$(dirname "$0")/gpu_moe_vs_torch.sh" > "$OUT/vs-torch.log" 2>&1; echo "vs torch rc=$?"
sed -n '/| shape |/,$p' "$OUT/side-by-side.md"
if [ "${NCU:-0}" = 1 ] && command -v ncu > /dev/null; then
  timeout 120 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum -c 40 \
    -k regex:"fused_route|Radix|histogram|Scan|build_tiles|invert_perm|gate_up|down_sm90|combine|transpose|rms_norm|gemm|nvjet|cutlass|swiglu|add_kernel|gather" \
    "$B/bench/moe/layerbench-moe" --backend cuda --layout sp --tokens 15000 --expert-gemm "${MODES[0]}" --iterations 1 \
    --warmup 0 --skip-check > "$OUT/ncu-layer.txt" 2>&1
  echo "ncu rc=$?"
  python3 - "$OUT/ncu-layer.txt" <<'PY'
import re, sys
name = None
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"  (\S.*?) \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)", line)
    if m:
        name = m.group(1)
    m = re.search(r"gpu__time_duration.sum\s+(\S+)\s+([\d.,]+)", line)
    if m and name:
        print(f"  {float(m.group(2).replace(',', '')):10.1f} {m.group(1):4s} {name[:110]}")
        name = None
PY
fi
for tokens in 15000 7500; do
  for m in "${MODES[@]}"; do
    tag="t$tokens-$m"
    timeout 120 "$B/bench/moe/layerbench-moe" --backend cuda --layout sp --tokens "$tokens" --expert-gemm "$m" \
      --iterations 20 --warmup 5 --layers 4 --graph --json "$OUT/$tag.json" > "$OUT/$tag.txt" 2>&1
    echo "== $tag rc=$?"
    python3 - "$OUT/$tag.json" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print("  no json:", e); sys.exit(0)
med = {r["name"]: r["median_ms"] for r in j["results"] if "median_ms" in r}
for n in ("routing", "local_expert_compute", "dense_gemm_reference", "whole_layer", "whole_layer_graph",
          "stack_reused_split_sizes", "stack_reused_split_sizes_graph"):
    if n in med: print(f"  {n:32s} {med[n]:.4f} ms")
print("  checks:", json.dumps(j.get("checks", {}))[:600])
print("  ops:", j.get("config", {}).get("ops", ""))
PY
  done
done
