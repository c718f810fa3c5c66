#pragma once
// Slope of a response against a dose measured in blocks (rounds): every block visits several
// dose levels, and block effects (slow drift, a warm or cold stretch) are removed by centring
// each block on its own means before the least-squares fit, as pairing does in an A/B.
//   slope: sum(x~ y~) / sum(x~^2) over the block-centred data;
//   intervals: the t interval over blocks (cluster-robust: the spread of the blocks' own fits,
//     df = blocks - 1), the bootstrap percentile over blocks (whole blocks resampled) and the t
//     interval of the within-block fit (df = n - blocks - 1). With few blocks (a what-if's 8-12
//     rounds) the percentile bootstrap is too narrow (it scales the spread by sqrt((B-1)/B) and
//     takes normal quantiles: ~88% coverage at B = 8, tests/stats/slope_test.cpp); the t interval
//     over blocks keeps its level, and treats each block, not each observation, as independent;
//   linearity: the block-adjusted mean response of each level against the line; the largest
//     residual and the lack-of-fit F test (levels - 2 and n - blocks - levels + 1 df).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "stats/bootstrap.hpp"
#include "stats/common.hpp"

namespace layerbench::stats {

struct BlockSlopeOptions {
  double confidence = 0.95;
  std::size_t resamples = 20000;
  std::uint64_t seed = default_bootstrap_seed;
  bool keep_resamples = false;  // fill BlockSlopeFit::resampled (for products of intervals)
};

struct BlockSlopeFit {
  std::size_t n = 0, blocks = 0, levels = 0;
  double slope = nan_value;
  double intercept = nan_value;  // overall mean y - slope * overall mean x
  double se = nan_value;         // within-block least squares
  double df = nan_value;
  Interval ci;                   // bootstrap percentile over blocks
  Interval t_ci;                 // within-block least squares (observations independent)
  double block_se = nan_value;   // cluster-robust over blocks (CR1)
  Interval block_t_ci;           // slope +- t(blocks - 1) * block_se
  double residual_sd = nan_value;
  std::vector<double> level_x, level_y, level_residual;  // block-adjusted level means, residual from the line
  double max_abs_residual = nan_value;
  double lack_of_fit_f = nan_value, lack_of_fit_p = nan_value;  // NaN with fewer than 3 levels
  std::vector<double> resampled;  // the bootstrap slopes when keep_resamples
};

// x, y: one entry per observation; block[i] and level[i] index its block and dose level (dense
// from 0). Throws std::invalid_argument for mismatched lengths, fewer than 2 blocks, non-finite
// values, or no spread of x within blocks.
BlockSlopeFit fit_block_slope(std::span<const double> x, std::span<const double> y,
                              std::span<const std::size_t> block, std::span<const std::size_t> level,
                              const BlockSlopeOptions& options = {});

// The median over blocks of each block's own least-squares slope (blocks without spread of x
// are left out): robust to a block disturbed as a whole (a preempted round on a loaded host).
// NaN when no block has spread. Throws std::invalid_argument for mismatched lengths.
double median_block_slope(std::span<const double> x, std::span<const double> y, std::span<const std::size_t> block);

// Percentile interval of the product a_i * b_i of two independent sets of resampled values (same
// length), e.g. a bootstrapped slope times a bootstrapped cost. Reorders nothing.
Interval product_interval(std::span<const double> a, std::span<const double> b, double confidence);

// Bootstrap resamples of the median of x (the same resample stream as bootstrap()).
std::vector<double> resampled_medians(std::span<const double> x, std::size_t resamples, std::uint64_t seed);

}  // namespace layerbench::stats
