#pragma once
// The analysis of a study file: the primary comparison (base against the first candidate on the
// primary metric) with its diagnostics, sequential stop and telemetry; every other candidate and
// metric against the base with Holm-adjusted p-values; and the raw per-run CSV.
#include <cstddef>
#include <string>
#include <vector>

#include "study/study.hpp"
#include "stats/paired.hpp"

namespace layerbench::ab {

enum class OutputFormat { text, json, markdown };

// One candidate arm against the base on one metric.
struct Comparison {
  Arm candidate;
  std::string metric, unit;
  stats::PairedAnalysis analysis;
  double p = stats::nan_value;       // two-sided Wilcoxon p (exact when available)
  double p_holm = stats::nan_value;  // Holm-adjusted over the candidates on the same metric
};

// Every (candidate, metric) pair with at least 2 complete pairs, candidates in arm order, metrics
// in the order given (the primary first). Holm's step-down adjustment runs over the candidates of
// each metric (family size = number of candidates).
std::vector<Comparison> compare_arms(const Study& study, const stats::PairedOptions& options);

// Analysis of a study file as printed by `run` at the end and by `analyze FILE.jsonl`.
std::string render_study(const Study& study, const stats::PairedOptions& options, OutputFormat format);

// One row per recorded run: pair, attempt, arm, position, status, exit, times, peak RSS, metrics.
std::string runs_csv(const Study& study);

}  // namespace layerbench::ab
