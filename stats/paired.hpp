#pragma once
// The full paired A/B analysis: arm summaries, deltas, t, bootstrap, Wilcoxon, sign test,
// Tukey outliers, drift and reading guidance. Deltas are candidate - base (positive: the
// candidate is larger, i.e. slower for times: the project's one sign convention); percentages
// are over the base mean.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stats/bootstrap.hpp"
#include "stats/common.hpp"
#include "stats/prediction.hpp"
#include "stats/ranks.hpp"
#include "stats/robust.hpp"
#include "stats/summary.hpp"
#include "stats/tests.hpp"
#include "stats/wilcoxon.hpp"

namespace layerbench::stats {

struct PairedOptions {
  double confidence = 0.95;
  std::size_t resamples = 200000;
  std::uint64_t seed = default_bootstrap_seed;
  double trim = 0.1;  // trimmed-mean proportion cut from each end
  std::optional<double> predicted;  // a forecast delta (e.g. from a component profile)
  double predicted_half_width = 0;   // its uncertainty: half-width of its interval (0 = exact)
  bool continuity = false;
  ZeroMethod zero_method = ZeroMethod::wilcox;
  std::size_t num_threads = 0;  // bootstrap threads; 0 = automatic
  // Deltas are rounded to this many significant digits before ranking so that round-off does
  // not split ties (statistics.md 2.1); <= 0 ranks the raw deltas.
  int rank_digits = 10;
};

struct DeltaSummary {
  double mean = 0, median = 0, trimmed_mean = 0, trim = 0, sd = 0, se = 0;
  double mean_pct = 0, median_pct = 0, trimmed_mean_pct = 0;  // % of the base mean
};

struct DriftResult {
  Correlation base;   // base arm against pair index
  Correlation delta;  // delta against pair index
};

struct PredictedResult {
  double value = 0;
  double ratio_mean = 0;    // mean delta / predicted
  double ratio_median = 0;  // median delta / predicted
  PredictionCheck check;    // measured - predicted and measured / predicted with intervals
};

struct PairedAnalysis {
  std::size_t n = 0;
  Summary base, candidate;
  std::vector<double> deltas;
  DeltaSummary delta;
  TTestResult t;
  MeanMedianBootstrap bootstrap;
  bool normal_limit = false;  // n > kBootstrapMaxPairs: `bootstrap` holds normal-limit intervals
  WilcoxonResult wilcoxon;
  SignTestResult sign;
  TukeyFences fences;
  std::vector<Outlier> outliers;
  DriftResult drift;
  std::optional<PredictedResult> predicted;
  double alpha = 0.05;  // 1 - confidence: the level the guidance reads p-values at
  std::vector<std::string> warnings;
  std::vector<std::string> guidance;  // sentences for a human reader
};

// Throws std::invalid_argument for mismatched lengths, fewer than 2 pairs, non-finite values
// or invalid options.
PairedAnalysis analyze_paired(std::span<const double> base, std::span<const double> candidate,
                              const PairedOptions& options = {});

// Reading guidance for an analysis (filled into PairedAnalysis::guidance by analyze_paired).
std::vector<std::string> reading_guidance(const PairedAnalysis& a);

}  // namespace layerbench::stats
