#!/usr/bin/env bash
# Runs every command the README and the docs show, as written, from the repository root: each
# ```bash block is one shell script (so an `export` carries to the next line), each command echoed
# before it runs. Blocks fenced as ```bash gpu need a GPU: they are listed and not run here.
# usage: bench/scripts/readme_commands.sh [--list] [--skip REGEX]... [--build DIR] [FILE...]
#   FILE          markdown files (default: README.md and docs/*.md, in that order)
#   --list        print the commands and what would be skipped; run nothing
#   --skip REGEX  do not run commands matching REGEX (e.g. one the caller has just run itself)
#   --build DIR   put the binaries of the build in DIR first on PATH (the blocks call them by name:
#                 without it they come from PATH, e.g. the installed package)
# Exit status: 0 when every command that ran succeeded, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.."
list=0 skips=() files=()
while [ $# -gt 0 ]; do
  case $1 in
    --list) list=1 ;;
    --skip) skips+=("$2"); shift ;;
    --build)
      [ -d "$2/bench" ] || { echo "readme_commands: --build $2: no bench/ in that build directory" >&2; exit 2; }
      PATH="$(printf '%s:' "$(cd "$2" && pwd)"/bench/*)$PATH"; export PATH; shift ;;
    *) files+=("$1") ;;
  esac
  shift
done
[ ${#files[@]} -gt 0 ] || files=(README.md docs/*.md)
# Open MPI refuses root unless told; the README says so beside its mpirun lines.
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Blocks as NUL-separated records: "KIND\nCOMMAND\nCOMMAND...", continuation lines joined.
extract() {
  awk '
  /^```/ {
    if (inblock) { printf "%s%c", body, 0; inblock = 0; next }
    if ($0 ~ /^```(bash|sh)( |$)/) { inblock = 1; body = ($0 ~ /gpu/) ? "gpu" : "run"; cmd = ""; next }
  }
  inblock {
    line = $0
    if (cmd == "" && (line ~ /^[ \t]*#/ || line ~ /^[ \t]*$/)) next
    if (line ~ /\\$/) { sub(/\\$/, "", line); cmd = cmd line " "; next }
    cmd = cmd line
    gsub(/[ \t]+/, " ", cmd)
    body = body "\n" cmd
    cmd = ""
  }' "$1"
}

failed=0 ran=0 skipped=0
for readme in "${files[@]}"; do
[ "$list" = 1 ] && echo "== $readme"
while IFS= read -r -d '' block; do
  kind=${block%%$'\n'*}
  cmds=${block#*$'\n'}
  [ "$block" = "$kind" ] && continue
  script="set -eo pipefail"
  while IFS= read -r cmd; do
    skip=""
    [ "$kind" = gpu ] && skip="needs a GPU"
    for re in "${skips[@]}"; do [[ $cmd =~ $re ]] && skip="skipped (--skip $re)"; done
    if [ -n "$skip" ] || [ "$list" = 1 ]; then
      printf '%-10s %s\n' "${skip:+[$skip]}" "$cmd" | sed 's/^ *//'
      [ -n "$skip" ] && skipped=$((skipped + 1))
      continue
    fi
    script+=$'\n'"printf '\\n$ %s\\n' $(printf '%q' "$cmd")"$'\n'"$cmd"
    ran=$((ran + 1))
  done <<< "$cmds"
  [ "$list" = 1 ] && continue
  echo "== $readme"
  start=$SECONDS
  if ! bash -c "$script" < /dev/null; then
    echo "readme_commands: a command of this block of $readme failed:" >&2
    echo "$cmds" | sed 's/^/    /' >&2
    failed=$((failed + 1))
  fi
  echo "(block: $((SECONDS - start)) s)"
done < <(extract "$readme")
done
[ "$list" = 1 ] && exit 0
echo
echo "readme_commands: $ran commands run in ${#files[@]} file(s), $skipped not run (GPU or --skip), $failed block(s) failed"
[ "$failed" -eq 0 ]
