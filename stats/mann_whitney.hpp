#pragma once
// Mann-Whitney U (Wilcoxon rank-sum) test for two independent samples: exact conditional null
// distribution for small samples even with ties (subset sums of doubled mid-ranks), else the normal
// approximation with tie correction. Used by the gate for unpaired comparisons (benchstat, compare.py).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "stats/common.hpp"

namespace layerbench::stats {

enum class MannWhitneyMethod { automatic, exact, asymptotic };

struct MannWhitneyOptions {
  // greater: x tends to be larger than y (scipy's convention for mannwhitneyu(x, y)).
  Alternative alternative = Alternative::two_sided;
  bool continuity = true;  // 0.5 continuity correction of the normal approximation (scipy default)
  MannWhitneyMethod method = MannWhitneyMethod::automatic;
  // automatic: exact when n1 + n2 <= max_exact_total. Cost O(N * min(n1, n2) * N^2) time.
  std::size_t max_exact_total = 100;
};

struct MannWhitneyResult {
  double u1 = 0;  // U of x: #{x_i > y_j} + 0.5 #{x_i == y_j}
  double u2 = 0;  // n1 n2 - u1
  std::size_t n1 = 0, n2 = 0;
  bool ties = false;
  double mean = 0;      // E[U] = n1 n2 / 2
  double variance = 0;  // tie-corrected Var[U]
  double z = nan_value;  // NaN when the variance is 0 (all values equal)
  Alternative alternative = Alternative::two_sided;
  bool exact = false;   // p from the exact conditional distribution
  double p = nan_value;
};

// Throws std::invalid_argument when either sample is empty or holds a non-finite value.
MannWhitneyResult mann_whitney_u(std::span<const double> x, std::span<const double> y,
                                 const MannWhitneyOptions& options = {});

// Distribution of the sum of k scores drawn without replacement from `scores` (all subsets of size
// k equally likely): P(S = s) for s = 0..sum(scores).
std::vector<double> subset_sum_distribution(std::span<const std::uint32_t> scores, std::size_t k);

// Smallest two-sided exact p reachable with n1 and n2 untied samples: 2 / C(n1 + n2, n1)
// (benchstat's uTestMinP). A gate cannot call a difference significant when this is >= alpha.
double mann_whitney_min_p(std::size_t n1, std::size_t n2);

}  // namespace layerbench::stats
