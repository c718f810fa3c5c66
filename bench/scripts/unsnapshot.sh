#!/usr/bin/env bash
# On the GPU machine, from the repository root: unpacks snapshot.sh's trees into .devbuild/src
# (and .devbuild/base/src when a base was packed), where the GPU scripts run.
# usage: bench/scripts/unsnapshot.sh && cd .devbuild/src && ...
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -f .devbuild/src.tar.xz ] || { echo "unsnapshot: no .devbuild/src.tar.xz (bench/scripts/snapshot.sh, carry .devbuild)" >&2; exit 2; }
rm -rf .devbuild/src && mkdir -p .devbuild/src && tar -xJf .devbuild/src.tar.xz -C .devbuild/src
if [ -f .devbuild/base.tar.xz ]; then
  rm -rf .devbuild/base && mkdir -p .devbuild/base/src && tar -xJf .devbuild/base.tar.xz -C .devbuild/base/src
fi
echo "unsnapshot: src $(cat .devbuild/src/.git-sha)$([ -d .devbuild/base/src ] && echo ", base $(cat .devbuild/base/src/.git-sha)")"
