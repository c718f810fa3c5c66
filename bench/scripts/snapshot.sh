#!/usr/bin/env bash
# Packs a committed tree (HEAD, or the ref given) for a GPU run: .devbuild/src.tar.xz holds the
# tree, its commit in .git-sha and the peer benchmarks' sources (.peers/, never committed); with
# --base REF also .devbuild/base.tar.xz (the tree an A/B compares against, e.g. gpu_moe_noregress.sh).
# Packed, the trees cost a few MiB of a GPU call's 64 MiB: carry [".devbuild"] and begin the call
# with bench/scripts/unsnapshot.sh, which unpacks them into .devbuild/src and .devbuild/base/src.
# Everything else in .devbuild goes, except the binary packs of bench/scripts/prebuild.sh for the
# commits named here (run prebuild.sh after this when there are none).
# usage: bench/scripts/snapshot.sh [--base REF] [REF]
set -euo pipefail
cd "$(dirname "$0")/../.."
base=
[ "${1:-}" = --base ] && { base=$2; shift 2; }
ref=${1:-HEAD}
sha=$(git rev-parse --short=12 "$ref^{commit}")
keep=("$sha")
[ -n "$base" ] && keep+=("$(git rev-parse --short=12 "$base^{commit}")")
mkdir -p .devbuild/prebuilt
find .devbuild -mindepth 1 -maxdepth 1 ! -name prebuilt -exec rm -rf {} +
for p in .devbuild/prebuilt/*.tar.xz; do
  [ -e "$p" ] || continue
  case " ${keep[*]} " in *" $(basename "$p" .tar.xz) "*) ;; *) rm -f "$p" ;; esac
done
pack_tree() {  # pack_tree REF OUTPUT [EXTRA_DIR]
  local stage; stage=$(mktemp -d)
  git archive "$1" | tar -x -C "$stage"
  git rev-parse --short=12 "$1^{commit}" > "$stage/.git-sha"
  [ -n "${3:-}" ] && [ -d "$3" ] && cp -r "$3" "$stage/"
  tar -C "$stage" -cJf "$2" .
  rm -rf "$stage"
}
pack_tree "$ref" .devbuild/src.tar.xz .peers
[ -n "$base" ] && pack_tree "$base" .devbuild/base.tar.xz
# The GPU machine has no network, no RE2 and no SQLite headers: carry Debian's packages beside the source
# (gpu_env.sh unpacks them into a private prefix when pkg-config finds no re2 there).
if command -v apt-get >/dev/null; then
  mkdir -p .devbuild/debs
  (cd .devbuild/debs && apt-get download -qq libre2-9 libre2-dev libsqlite3-0 libsqlite3-dev 2>/dev/null) || echo "snapshot: RE2 packages not downloaded"
fi
echo "snapshot of $sha${base:+ and base $base} in .devbuild ($(du -sh .devbuild | cut -f1)); prebuilt packs: $(ls .devbuild/prebuilt | tr '\n' ' ')"
