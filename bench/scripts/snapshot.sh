#!/usr/bin/env bash
# Exports a committed tree (HEAD, or the ref given) into .devbuild/src for a GPU run, with its
# commit recorded in .git-sha and the peer benchmarks' sources (.peers/, never committed) beside it.
# usage: bench/scripts/snapshot.sh [REF]
set -euo pipefail
cd "$(dirname "$0")/../.."
ref=${1:-HEAD}
rm -rf .devbuild && mkdir -p .devbuild/src
git archive "$ref" | tar -x -C .devbuild/src
git rev-parse --short=12 "$ref" > .devbuild/src/.git-sha
[ -d .peers ] && cp -r .peers .devbuild/src/
# The GPU machine has no network, no RE2 and no SQLite headers: carry Debian's packages beside the source
# (gpu_env.sh unpacks them into a private prefix when pkg-config finds no re2 there).
if command -v apt-get >/dev/null; then
  mkdir -p .devbuild/debs
  (cd .devbuild/debs && apt-get download -qq libre2-9 libre2-dev libsqlite3-0 libsqlite3-dev 2>/dev/null) || echo "snapshot: RE2 packages not downloaded"
fi
echo "snapshot of $(cat .devbuild/src/.git-sha) in .devbuild/src"
