#!/usr/bin/env bash
# usage: nvtx_names_test.sh PROBE LIBRARY WORKDIR: runs PROBE with the injection library, checks the table.
set -eu
out="$3/nvtx-names.md"; rm -f "$out"
NVTX_INJECTION64_PATH="$2" LAYERBENCH_NVTX_NAMES="$out" "$1"
expected='| name | pushes | pops | nesting ok |
|---|---:|---:|---|
| ex | 3 | 3 | yes |
| inner | 3 | 3 | yes |
| left open | 1 | 0 | no |
| outer | 3 | 3 | yes |

open at exit: 1, pops without a push: 0'
if [ "$(cat "$out")" != "$expected" ]; then echo "unexpected table:"; cat "$out"; exit 1; fi
echo "table as expected"
