#!/usr/bin/env bash
# Builds the GPU scripts' binaries here (no GPU needed: nvcc, sm_90) so that a GPU call spends its
# minutes measuring, not compiling. For each REF (default HEAD) it configures exactly as
# gpu_env.sh's lb_build does on the GPU machine (Release, CUDA on, architecture 90), builds TARGETS
# and packs them, in the build tree's layout, into .devbuild/prebuilt/<commit>.tar.xz with the
# shared libraries the GPU machine may lack (fmt, Open MPI's C++ bindings; used there only where it
# has none). There gpu_env.sh unpacks every pack, and lb_build links a pack's files into $B instead
# of building when the pack's commit is the source tree's (.git-sha) and every library resolves;
# otherwise it builds as before. snapshot.sh keeps the packs of the commits it packs.
# A REF other than HEAD is built in a detached worktree under build/prebuild-<commit>/.
# usage: bench/scripts/prebuild.sh [REF...]   (TARGETS="layerbench-moe ..." to choose)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
TARGETS=${TARGETS:-"layerbench-moe layerbench-ab layerbench-coll layerbench-moe-kernels layerbench_fp8_experts
  test_moe_std_mpi test_std_kernels_gpu test_fp8_grouped_gpu test_fp8_lt_gpu test_fp8_host"}
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "prebuild: no nvcc here" >&2; exit 2; }
export PATH=$PATH:/usr/local/cuda/bin
mkdir -p .devbuild/prebuilt
[ $# -eq 0 ] && set -- HEAD
for ref in "$@"; do
  sha=$(git rev-parse --short=12 "$ref^{commit}")
  if [ "$(git rev-parse "$ref^{commit}")" = "$(git rev-parse HEAD)" ]; then
    git diff --quiet HEAD || { echo "prebuild: the working tree differs from HEAD; commit first" >&2; exit 2; }
    src=$ROOT
  else
    src=$ROOT/build/prebuild-$sha
    [ -d "$src" ] || git worktree add --detach "$src" "$sha" >/dev/null
  fi
  bdir=$src/build/gpu
  mkdir -p "$bdir"
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  cmake -S "$src" -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAYERBENCH_ENABLE_TESTING=ON \
    -DLAYERBENCH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 "${launcher[@]}" > "$bdir/prebuild-configure.log" 2>&1 \
    || { tail -20 "$bdir/prebuild-configure.log"; exit 1; }
  # Targets this commit does not have are skipped (an older REF may lack the newer tools).
  have=()
  for t in $TARGETS; do
    ninja -C "$bdir" -t query "$t" >/dev/null 2>&1 && have+=("$t")
  done
  echo "prebuild $sha: ${have[*]}"
  cmake --build "$bdir" -j"$(nproc)" $(printf -- '--target %s ' "${have[@]}") > "$bdir/prebuild-build.log" 2>&1 \
    || { grep -B2 -A10 -m5 error "$bdir/prebuild-build.log"; exit 1; }
  stage=$(mktemp -d)
  files=()
  for t in "${have[@]}"; do
    f=$(cd "$bdir" && find . -type f \( -name "$t" -o -name "lib$t.so" \) -perm -u+x | sed -n 1p)
    [ -n "$f" ] || { echo "prebuild: no file for target $t" >&2; exit 1; }
    f=${f#./}
    mkdir -p "$stage/$(dirname "$f")" && cp "$bdir/$f" "$stage/$f"
    files+=("file $t $f")
  done
  mkdir -p "$stage/lib"
  # Debian 12 sonames the GPU machine (Ubuntu 24.04) lacks: lb_prebuilt drops those it has.
  for l in libfmt.so.9 libmpi_cxx.so.40 libbenchmark.so.1debian libre2.so.9; do
    p=$(ldconfig -p | awk -v l="$l" '$1 == l && p == "" {p = $NF} END {print p}')  # reads it all: no SIGPIPE under pipefail
    [ -n "$p" ] && cp -L "$p" "$stage/lib/"
  done
  { echo "commit $sha"; echo "built $(date -u +%FT%TZ) on $(. /etc/os-release && echo "$PRETTY_NAME")";
    nvcc --version | tail -1; printf '%s\n' "${files[@]}"; } > "$stage/PREBUILT"  # file TARGET PATH: what lb_prebuilt links
  tar -C "$stage" -cJf ".devbuild/prebuilt/$sha.tar.xz" .
  rm -rf "$stage"
  echo "prebuild: .devbuild/prebuilt/$sha.tar.xz ($(du -h ".devbuild/prebuilt/$sha.tar.xz" | cut -f1))"
done
