# Sourced first by every GPU script: stop at once, with a message, where no GPU can be seen,
# instead of starting a CUDA build. LAYERBENCH_SKIP_GPU_CHECK=1 skips the check.
if [ "${LAYERBENCH_SKIP_GPU_CHECK:-0}" != 1 ] &&
   ! { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }; then
  echo "$(basename "$0"): no NVIDIA GPU is visible here (nvidia-smi -L lists none). This script builds and" \
       "times the CUDA backend; on a machine without a GPU run bench/scripts/quickstart.sh, or a binary" \
       "with --backend host." >&2
  exit 1
fi
