#!/usr/bin/env bash
# Regenerates results/gate-calibration.md: the gate's false-alarm rate on simulated A/A studies and its power
# for a 2% regression at 1% CV with 20 pairs (layerbench-gate-sim), stamped with command, date and commit.
# usage: bench/gate/calibrate.sh BUILD_DIR [OUT_FILE]
set -euo pipefail
build=${1:?usage: calibrate.sh BUILD_DIR [OUT_FILE]}
out=${2:-results/gate-calibration.md}
args=(--studies 2000 --pairs 20 --cv 0.01 --drift 0.02 --effect 0.02 --alpha 0.05 --resamples 2000 --seed 1)
body=$("$build/tools/layerbench-gate-sim" "${args[@]}")
{
  echo "# layerbench-gate calibration"
  echo
  echo "- command: \`bench/gate/calibrate.sh BUILD_DIR\` (runs \`layerbench-gate-sim ${args[*]}\`)"
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- commit: $(git rev-parse HEAD)"
  echo
  echo "$body"
  echo
  cat <<'NOTE'
Reading: the paired rule fires only when the one-sided exact Wilcoxon p < alpha **and** the one-sided (1 - alpha)
bootstrap bound of the relative change clears the threshold, so the A/A false-alarm rate is at most the
Wilcoxon level (about alpha at threshold 0) and falls to ~0 once the threshold is above the noise. Power for
a +2% regression with 20 pairs at 1% CV is >= 0.8 for thresholds up to 1%; a threshold equal to the effect
(2%) detects it only with probability ~alpha by construction (the lower bound must clear the threshold),
so a gate meant to catch 2% regressions with 20 pairs should run with `--threshold 1%` or lower. The
unpaired rows show what pairing buys: the same 2% effect at threshold 1% is found less often without it,
and in real runs (drift between launches) the unpaired design also needs a far larger threshold.
NOTE
} > "$out"
echo "wrote $out"
