#!/usr/bin/env bash
# The user-facing scripts without a GPU: every GPU script stops at once with a message (no
# CUDA build starts), and the README command extractor finds the README's commands and tells
# GPU-only ones apart.   usage: scripts_test.sh SOURCE_DIR
set -u
src=$1
fail=0
# A machine without a GPU, whatever this one has: an nvidia-smi that lists none.
fake=$(mktemp -d)
printf '#!/bin/sh\nexit 9\n' > "$fake/nvidia-smi"
chmod +x "$fake/nvidia-smi"
for script in "$src"/bench/scripts/gpu_*.sh "$src"/bench/attn/run_h200x2.sh; do
  [ "$(basename "$script")" = gpu_env.sh ] && continue
  work=$(mktemp -d)
  start=$(date +%s)
  # "At once" is read from what the script did (no build folder made, the message), not from a
  # clock; the timeout is only a watchdog for a hang (rc 124).
  out=$(cd "$work" && PATH="$fake:$PATH" OUT="$work/out" BUILD_DIR="$work/build" timeout 120 bash "$script" "$work/out" 2>&1)
  rc=$?
  took=$(( $(date +%s) - start ))
  if [ "$rc" -eq 0 ] || ! grep -q "no NVIDIA GPU is visible" <<< "$out" || [ -e "$work/build" ]; then
    echo "FAIL: $(basename "$script") without a GPU: rc $rc after ${took}s: ${out: -300}"
    fail=1
  fi
  rm -rf "$work"
done
rm -rf "$fake"

# The README and every page of docs/ (the default files), GPU blocks marked.
list=$("$src/bench/scripts/readme_commands.sh" --list)
for want in '== README.md' '== docs/moe.md' 'bench/scripts/quickstart.sh' 'cmake --workflow --preset ci' \
            '[needs a GPU] mpirun -np 8 -x NCCL_NVLS_ENABLE layerbench-moe --model deepseek-v3' \
            'layerbench-gate --pairs pr.jsonl --threshold 10% --alpha 0.001' 'cpack --preset package' \
            '[needs a GPU] srun --mpi=pmix layerbench-coll'; do
  grep -qF -- "$want" <<< "$list" || { echo "FAIL: readme_commands --list lacks '$want'"; fail=1; }
done
# Continuation lines are joined into one command; a yaml block is not a command.
grep -q -- '--moe-heads 4 --experts 8 --topk 2' <<< "$list" || { echo "FAIL: continuation lines not joined"; fail=1; }
grep -q -- 'perf-gate:' <<< "$list" && { echo "FAIL: a yaml block listed as commands"; fail=1; }
# One file given: only its blocks.
one=$("$src/bench/scripts/readme_commands.sh" --list "$src/docs/gate.md")
grep -qF 'layerbench-gate --pairs tests/reports/data/study.csv' <<< "$one" && ! grep -qF quickstart <<< "$one" \
  || { echo "FAIL: readme_commands --list FILE"; fail=1; }
# The MoE entry point: its parts listed without a GPU (every gpu_moe_PART.sh one of them), an
# unknown part refused.
parts=$(bash "$src/bench/scripts/gpu_moe.sh" list)
for f in "$src"/bench/scripts/gpu_moe_*.sh; do
  p=$(basename "$f" .sh); p=${p#gpu_moe_}; p=${p//_/-}
  grep -q "^$p " <<< "$parts" || { echo "FAIL: gpu_moe.sh does not list its part $p"; fail=1; }
done
for p in $(grep -v "^ " <<< "$parts" | awk '{print $1}'); do
  [ -f "$src/bench/scripts/gpu_moe_${p//-/_}.sh" ] || { echo "FAIL: gpu_moe.sh part $p has no script"; fail=1; }
done
# A binary pack of prebuild.sh (here a stand-in): lb_build links the pack's files into $B instead of
# building when the pack's commit is the tree's; a target the pack lacks, or another commit, builds.
t=$(mktemp -d)
mkdir -p "$t/src" "$t/prebuilt" "$t/pack/bench/moe" "$t/pack/lib"
echo 0123456789ab > "$t/src/.git-sha"
printf '#!/bin/sh\necho packed binary\n' > "$t/pack/bench/moe/layerbench-moe"
chmod +x "$t/pack/bench/moe/layerbench-moe"
printf 'commit 0123456789ab\nbuilt in a test\nfile layerbench-moe bench/moe/layerbench-moe\nfile layerbench-ab bench/moe/layerbench-ab\n' \
  > "$t/pack/PREBUILT"
# A binary that needs a library nowhere to be found: its pack is not used.
if command -v cc >/dev/null; then
  printf 'int lb_gone(void) { return 0; }\n' > "$t/gone.c"
  printf 'int lb_gone(void);\nint main(void) { return lb_gone(); }\n' > "$t/main.c"
  cc -shared -fPIC -o "$t/liblbgone.so" "$t/gone.c" && cc -o "$t/pack/bench/moe/layerbench-ab" "$t/main.c" -L"$t" -llbgone \
    && rm "$t/liblbgone.so" || { echo "FAIL: could not build the stand-in binary"; fail=1; }
fi
tar -C "$t/pack" -cJf "$t/prebuilt/0123456789ab.tar.xz" .
packed() {
  (cd "$t/src" && LAYERBENCH_SKIP_GPU_CHECK=1 LB_PREBUILT_ROOT="$t/root" OUT="$t/out" BUILD_DIR="$t/b" \
     bash -c "source '$src/bench/scripts/gpu_env.sh' >/dev/null; $1" 2>&1)
}
out=$(packed 'lb_build layerbench-moe && "$B/bench/moe/layerbench-moe"; lb_prebuilt layerbench-coll || echo fallback')
for want in "lb_build: prebuilt binaries of 0123456789ab (built in a test)" "packed binary" \
            "prebuilt 0123456789ab has no layerbench-coll: building" fallback; do
  grep -qF "$want" <<< "$out" || { echo "FAIL: prebuilt pack: '$want' not in: $out"; fail=1; }
done
if command -v cc >/dev/null; then
  out=$(packed 'lb_prebuilt layerbench-moe layerbench-ab || echo "not used"')
  grep -qF "prebuilt layerbench-ab: liblbgone.so not found here: building" <<< "$out" && grep -qx "not used" <<< "$out" \
    || { echo "FAIL: a pack whose library does not resolve was used: $out"; fail=1; }
fi
echo fedcba987654 > "$t/src/.git-sha"
out=$(packed 'lb_prebuilt layerbench-moe || echo "not this commit"')
grep -qx "not this commit" <<< "$out" || { echo "FAIL: a pack of another commit was used: $out"; fail=1; }
rm -rf "$t"
[ "$fail" -eq 0 ] && echo PASS
exit "$fail"
