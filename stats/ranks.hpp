#pragma once
// Mid-ranks, tie groups, rounding before ranking, and Spearman correlation.
#include <cstddef>
#include <span>
#include <vector>

namespace layerbench::stats {

// 1-based ranks with ties given the mean of the ranks they span (mid-ranks), in input order.
std::vector<double> mid_ranks(std::span<const double> x);

// Sizes of the groups of equal values (only groups of size >= 2 matter for tie corrections).
std::vector<std::size_t> tie_group_sizes(std::span<const double> x);

// Rounds every value to `significant_digits` digits relative to the largest magnitude, so
// that floating-point round-off (0.7 - 1.9 vs -0.1 - 1.1) does not split real ties before
// ranking. significant_digits <= 0 returns the input unchanged.
std::vector<double> round_for_ranking(std::span<const double> x, int significant_digits);

struct Correlation {
  double rho = 0;  // NaN when either variable is constant or n < 3
  double p = 0;    // two-sided, t approximation with n - 2 df (scipy spearmanr)
};
// Spearman rank correlation (Pearson correlation of mid-ranks).
Correlation spearman(std::span<const double> x, std::span<const double> y);
// Spearman correlation of x against its index 0..n-1: the drift of a series over time.
Correlation spearman_trend(std::span<const double> x);

}  // namespace layerbench::stats
