#!/usr/bin/env bash
# Exports the committed tree (HEAD) into .devbuild/src for a GPU run, with its commit recorded in
# .git-sha and the peer benchmarks' sources (.peers/, never committed) beside it.
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -rf .devbuild && mkdir -p .devbuild/src
git archive HEAD | tar -x -C .devbuild/src
git rev-parse --short=12 HEAD > .devbuild/src/.git-sha
[ -d .peers ] && cp -r .peers .devbuild/src/
echo "snapshot of $(cat .devbuild/src/.git-sha) in .devbuild/src"
