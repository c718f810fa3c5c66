# Sourced by the GPU scripts: the environment every launch on a shared multi-GPU host keeps.
# NVLink multicast (NVLS) stays off: it can take a shared host's GPUs out of service.
source "$(dirname "${BASH_SOURCE[0]}")/require_gpu.sh"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# RE2 from the packages snapshot.sh carries, when the machine has none (see snapshot.sh).
if ! pkg-config --exists re2 2>/dev/null && compgen -G "../debs/libre2*.deb" >/dev/null; then
  RE2_PREFIX=/tmp/lb-re2
  for d in ../debs/libre2*.deb; do dpkg -x "$d" "$RE2_PREFIX"; done
  sed -i "s|=/usr|=$RE2_PREFIX/usr|" "$RE2_PREFIX"/usr/lib/x86_64-linux-gnu/pkgconfig/re2.pc
  export PKG_CONFIG_PATH="$RE2_PREFIX/usr/lib/x86_64-linux-gnu/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LD_LIBRARY_PATH="$RE2_PREFIX/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# SQLite (layerbench-history's store) likewise, when the machine has no sqlite3.h.
LB_CMAKE_EXTRA=()
if [ ! -e /usr/include/sqlite3.h ] && compgen -G "../debs/libsqlite3*.deb" >/dev/null; then
  SQLITE_PREFIX=/tmp/lb-sqlite
  for d in ../debs/libsqlite3*.deb; do dpkg -x "$d" "$SQLITE_PREFIX"; done
  LB_CMAKE_EXTRA+=(-DCMAKE_PREFIX_PATH="$SQLITE_PREFIX/usr")
  export LD_LIBRARY_PATH="$SQLITE_PREFIX/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# Binaries built on a development machine (bench/scripts/prebuild.sh): ../prebuilt/<commit>.tar.xz
# beside the source, unpacked once into $LB_PREBUILT_ROOT/<commit>; a library the pack carries is
# kept only where this machine lacks it. lb_build uses a pack whose commit is the tree's .git-sha.
LB_PREBUILT_ROOT=${LB_PREBUILT_ROOT:-/tmp/lb-prebuilt}
for pack in ../prebuilt/*.tar.xz; do
  [ -f "$pack" ] || continue
  dest=$LB_PREBUILT_ROOT/$(basename "$pack" .tar.xz)
  if [ ! -f "$dest/PREBUILT" ]; then
    mkdir -p "$dest" && tar -xJf "$pack" -C "$dest"
    for l in "$dest"/lib/*.so*; do
      [ -e "$l" ] && [ "$(ldconfig -p | grep -c "^[[:space:]]*$(basename "$l") ")" -gt 0 ] && rm -f "$l"
    done
  fi
  for d in "$dest/lib" /usr/local/cuda/lib64; do  # the pack's RUNPATH names this machine's CUDA as lib/
    case ":${LD_LIBRARY_PATH:-}:" in *":$d:"*) ;; *) export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d" ;; esac
  done
done
MPIRUN_ENV=(-x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS)
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
B=${BUILD_DIR:-/tmp/lb-build}
echo "commit $(cat .git-sha 2>/dev/null || git rev-parse --short=12 HEAD 2>/dev/null)"

# lb_prebuilt TARGET...: links the named targets' files of the pack of this tree's commit into $B
# (same layout as a build); fails, saying why, when there is no pack, a target is not in it or a
# library does not resolve here.
lb_prebuilt() {
  local sha P t f files=()
  sha=$(cat .git-sha 2>/dev/null) || return 1
  P=$LB_PREBUILT_ROOT/$sha
  [ -f "$P/PREBUILT" ] && [ $# -gt 0 ] || return 1
  for t in "$@"; do
    f=$(awk -v t="$t" '$1 == "file" && $2 == t {print $3}' "$P/PREBUILT")  # prebuild.sh's list
    [ -n "$f" ] || { echo "prebuilt $sha has no $t: building"; return 1; }
    if [ "$(ldd "$P/$f" 2>/dev/null | grep -c "not found")" -gt 0 ]; then
      echo "prebuilt $t: $(ldd "$P/$f" 2>/dev/null | awk '/not found/ {printf "%s%s", n++ ? ", " : "", $1}') not found here: building"
      return 1
    fi
    files+=("$f")
  done
  for f in "${files[@]}"; do mkdir -p "$B/$(dirname "$f")" && ln -sfn "$P/$f" "$B/$f"; done
  echo "lb_build: prebuilt binaries of $sha ($(grep '^built' "$P/PREBUILT"))" | tee "$OUT/build.log"
}

# lb_build [TARGET...]: the project's own CMake with the CUDA paths on, into $B; all targets when
# none are named (or the pack of bench/scripts/prebuild.sh, see lb_prebuilt). Logs in $OUT; on
# failure prints the first errors and returns non-zero.
lb_build() {
  lb_prebuilt "$@" && return 0
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAYERBENCH_ENABLE_TESTING=ON -DLAYERBENCH_CUDA=ON "${LB_CMAKE_EXTRA[@]}" \
    > "$OUT/configure.log" 2>&1 || { tail -40 "$OUT/configure.log"; return 1; }
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build "$B" -j"$(nproc)" "${targets[@]}" > "$OUT/build.log" 2>&1 \
    || { grep -B2 -A10 -m5 error "$OUT/build.log"; return 1; }
}
