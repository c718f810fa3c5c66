#!/usr/bin/env bash
# One GPU: the MoE layout advisor's GPU checks and its scale predictions, in one call.
#   (c) EP1 at several token counts: the standard block's one-rank profile (measured) beside
#       layerbench-moe --advise --gpus 1 (predicted from the advisor's own calibration);
#   (b) the committed 2xH200 MAGI-2 runs (results/moe/2026-11-30-h200x2-c: sp2 at 7500 tokens per
#       rank, tp2 at 7500 replicated tokens) predicted from a one-GPU calibration here plus the
#       committed 2-GPU collective sweep (results/coll/2026-11-30-h200x2-c);
#   (d) DeepSeek-V3 and Qwen3-30B-A3B at 8192 tokens per GPU on 8, 16, 64 and 256 GPUs, 8 per node:
#       intra-node collectives from the 2-GPU sweep through its bus bandwidth, inter-node ones from
#       an ASSUMED link (INTER_GBPS per GPU, INTER_LAT_US).
# Everything lands in $OUT, packed into one tarball.
#   PARTS picks the parts (default "b c d"). In (c), REPEAT_C alternates profile and advice that many
#   times (the run-to-run spread beside each run's interval) and TABLES_C names the expert paths to
#   run: "auto" (no table: the device's default path, wgmma on sm_90) and any of the standard block's
#   paths (wgmma, grouped, padded, multi-stream) through a one-row --expert-table for the shape;
#   PRECISIONS_C the experts' precision (bf16, fp8-block, fp8-rowwise: --precision; tags of a non-bf16
#   precision carry it, e.g. c-ep1-auto-fp8-block-t1024-r1).
# usage: [ITERATIONS=20] [PARTS="b c d"] [TOKENS_C="1024 4096 16384"] [REPEAT_C=1] [TABLES_C=auto] [PRECISIONS_C=bf16]
#        [GPUS_D="8 16 64 256"] bench/scripts/gpu_advise.sh
#        (from a snapshot, in .devbuild/NN/src with OUT=$OUT)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
ITERATIONS=${ITERATIONS:-20}
INTER_GBPS=${INTER_GBPS:-50}
INTER_LAT_US=${INTER_LAT_US:-10}
COLL=results/coll/2026-11-30-h200x2-c/coll.json
T_START=$(date +%s)
pack() { tar -czf "$OUT/../advise.tgz" -C "$OUT" . && mv "$OUT/../advise.tgz" "$OUT/"; }
trap pack EXIT
{ date -u; echo "commit $(cat .git-sha 2>/dev/null || git rev-parse HEAD 2>/dev/null)";
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv; } > "$OUT/machine.txt" 2>&1
lb_build layerbench-moe || exit 1
echo "build done at +$(( $(date +%s) - T_START )) s"
MOE="$B/bench/moe/layerbench-moe"
run() {  # run TAG SECONDS CMD...: the command's text, output and exit code in $OUT
  local tag=$1 lim=$2; shift 2
  echo "$*" > "$OUT/$tag.cmd"
  timeout "$lim" "$@" > "$OUT/$tag.md" 2> "$OUT/$tag.err"
  echo "$tag rc=$? at +$(( $(date +%s) - T_START )) s"
}
T=(--backend cuda --iterations "$ITERATIONS" --warmup 5)
PARTS=" ${PARTS:-b c d} "

# (b) MAGI-2: sp2 at 7500 tokens per GPU; tp2 at 7500 replicated = 3750 per GPU of global work.
if [[ $PARTS == *" b "* ]]; then
run b-advise-t7500 120 "$MOE" "${T[@]}" --model magi-2 --tokens 7500 --advise --gpus 2 --coll "$COLL" --json "$OUT/b-advise-t7500.json"
run b-advise-t3750 120 "$MOE" "${T[@]}" --model magi-2 --tokens 3750 --advise --gpus 2 --coll "$COLL" --json "$OUT/b-advise-t3750.json"
fi

# (c) EP1, Qwen3-30B-A3B (128 experts, fits one GPU), measured and predicted, profile and advice
# alternating; file tags c-ep1-<table>-t<tokens>-r<rep> and c-advise-<table>-t<tokens>-r<rep>.
if [[ $PARTS == *" c "* ]]; then
for table in ${TABLES_C:-auto}; do
  targs=()
  if [[ $table != auto ]]; then
    mkdir -p "$OUT/tables"
    printf '# hidden\tinter\texperts\tpath\n2048\t768\t128\t%s\n' "$table" > "$OUT/tables/$table.tsv"
    targs=(--expert-table "$OUT/tables/$table.tsv")
  fi
  for prec in ${PRECISIONS_C:-bf16}; do
  p=$table; [[ $prec == bf16 ]] || p=$table-$prec
  for rep in $(seq 1 "${REPEAT_C:-1}"); do
    for tok in ${TOKENS_C:-1024 4096 16384}; do
      run c-ep1-$p-t$tok-r$rep 120 "$MOE" "${T[@]}" "${targs[@]}" --model qwen3-30b-a3b --precision "$prec" \
        --tokens "$tok" --json "$OUT/c-ep1-$p-t$tok-r$rep.json"
      run c-advise-$p-t$tok-r$rep 120 "$MOE" "${T[@]}" "${targs[@]}" --model qwen3-30b-a3b --precision "$prec" \
        --tokens "$tok" --advise --gpus 1 --json "$OUT/c-advise-$p-t$tok-r$rep.json"
    done
  done
  done
done
fi

# (d) the scale table (10 timed iterations per calibration component).
[[ $PARTS == *" d "* ]] && for model in deepseek-v3 qwen3-30b-a3b; do
  for g in ${GPUS_D:-8 16 64 256}; do
    run d-$model-g$g 60 "$MOE" --backend cuda --iterations 10 --warmup 2 --model "$model" --tokens 8192 --advise --gpus "$g" \
      --gpus-per-node 8 --coll "$COLL" --coll-rescale --inter-gbps "$INTER_GBPS" --inter-latency-us "$INTER_LAT_US" --json "$OUT/d-$model-g$g.json"
  done
done
echo "total +$(( $(date +%s) - T_START )) s"
