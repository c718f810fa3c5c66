#!/usr/bin/env bash
# The MoE GPU studies behind one entry point: bench/scripts/gpu_moe.sh PART [ARGS...] runs
# gpu_moe_PART.sh (their own names keep working: committed results cite them). Every part needs
# one GPU and a snapshot of the commit (bench/scripts/snapshot.sh); each writes under $OUT.
#   fast       the standard block's expert paths at every preset's shape, beside torch (the study
#              behind --expert-table and the default path)
#   models     every MoE preset at EP1, checked and profiled; MAGI-2's default profile
#   vs-torch   our expert kernels and router beside torch._grouped_mm at MAGI-2's shapes
#   ncu        Nsight Compute sections of our grouped kernels and torch's at one preset's shape
#   experts    MAGI-2's expert GEMM modes: GPU tests, SP2 profiles, per-kernel times
#   limit      MAGI-2 toward its limit: every one-GPU test, vs-torch, one-rank profiles per path
#   profile    build, GPU correctness tests, then the MAGI-2 profiles (OUT_DIR quick|final)
#   noregress  MAGI-2 at this commit against an older one, interleaved (BASE_SRC)
#   families   every family through the one driver: stacks, graph, what-ifs, removal A/Bs (PART)
#   fp8        the FP8 grouped kernels (rowwise, block-scaled) checked, then beside torch's FP8 GEMMs
# usage: bench/scripts/gpu_moe.sh PART [ARGS...]   (PART list: print the parts)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
parts=(fast models vs-torch ncu experts limit profile noregress families fp8)
part=${1:-}
if [[ -z $part || $part == list ]]; then
  sed -n '/^#   [a-z0-9-]* /p' "$0" | sed 's/^#   //'
  [[ -n $part ]] && exit 0
  echo "usage: bench/scripts/gpu_moe.sh PART [ARGS...]" >&2
  exit 2
fi
shift
source "$here/require_gpu.sh"  # without a GPU: stop here, whatever the part
for p in "${parts[@]}"; do
  [[ $p == "$part" ]] && exec bash "$here/gpu_moe_${part//-/_}.sh" "$@"
done
echo "gpu_moe.sh: unknown part '$part' (one of: ${parts[*]})" >&2
exit 2
