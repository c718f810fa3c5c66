#pragma once
// Paired bootstrap: percentile and BCa intervals, seeded and reproducible for a seed whatever the
// number of threads (resamples are generated in fixed blocks, each with its own derived stream).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "stats/common.hpp"

namespace layerbench::stats {

inline constexpr std::uint64_t default_bootstrap_seed = 20240531;

// Above this many pairs the paired analysis and the gate use normal-limit intervals instead of
// the bootstrap (t for a mean, the distribution-free order-statistic interval for a median, the
// delta method for a ratio of means): the bootstrap costs n x resamples (and BCa's jackknife n^2),
// minutes at 10^6 pairs, while at this n the sampling distributions are normal to within the
// bootstrap's own Monte Carlo error.
inline constexpr std::size_t kBootstrapMaxPairs = 10000;


struct BootstrapOptions {
  std::size_t resamples = 200000;
  std::uint64_t seed = default_bootstrap_seed;
  double confidence = 0.95;
  Alternative alternative = Alternative::two_sided;  // one-sided: the other end is +-inf
  std::size_t num_threads = 0;  // 0: hardware concurrency, used only when the work pays for it
};

struct BootstrapResult {
  double estimate = nan_value;  // the statistic on the data
  Interval percentile;
  Interval bca;
  double standard_error = nan_value;  // sd of the resampled statistics (ddof 1)
  double z0 = nan_value;              // BCa bias correction
  double acceleration = nan_value;    // BCa acceleration (jackknife)
  std::size_t resamples = 0;
  std::uint64_t seed = 0;
  std::vector<std::string> warnings;  // degenerate data: NaN bounds and a reason
};

// A statistic of the pairs selected by `indices` (0-based, repeats allowed, length n).
// It is called concurrently from several threads and must not mutate shared state.
using IndexStatistic = std::function<double(std::span<const std::uint32_t> indices)>;

// Bootstrap of an arbitrary statistic over n paired rows: one shared index vector per resample,
// so a statistic of (base, candidate) keeps its pairs. BCa uses the leave-one-out jackknife.
BootstrapResult bootstrap(std::size_t n, const IndexStatistic& statistic,
                          const BootstrapOptions& options = {});

struct MeanMedianBootstrap {
  BootstrapResult mean;
  BootstrapResult median;
};
// Fast path for the mean and the median of x from the same resamples; O(n) per resample, no
// sorting. It resamples rows of x sorted ascending (stable), so its resampled statistics equal
// those of bootstrap() on the sorted sample with the same seed.
MeanMedianBootstrap bootstrap_mean_median(std::span<const double> x, const BootstrapOptions& options = {});

// Normal-limit stand-ins for the bootstrap at large n (kBootstrapMaxPairs): the t interval of the
// mean and the order-statistic interval of the median of x (percentile and bca both hold the
// interval; resamples = 0 marks them as not resampled).
MeanMedianBootstrap normal_limit_mean_median(std::span<const double> x, double confidence);

// ---- building blocks (exposed for tests and other callers) ----

// Mean of x over the selected indices, summed with four independent accumulators: a single
// running sum is bound by floating-point add latency, which dominates small resamples.
double mean_of_indices(std::span<const double> x, std::span<const std::uint32_t> indices);

// Fills `indices` (length n) for resample `r` of the stream `seed`: the same for any thread.
class ResampleStream {
 public:
  ResampleStream(std::uint64_t seed, std::size_t n) : seed_(seed), n_(n) {}
  static constexpr std::size_t block_size = 1024;  // resamples per derived RNG stream
  // Draws the index vectors of resamples [first, first + count) of block first / block_size.
  void draw_block(std::size_t block, std::size_t count,
                  const std::function<void(std::span<const std::uint32_t>)>& visit) const;

 private:
  std::uint64_t seed_;
  std::size_t n_;
};

// Percentile interval [Q(alpha), Q(1 - alpha)] of the resampled statistics (type-7 quantiles).
// Reorders `thetas`.
Interval percentile_interval(std::vector<double>& thetas, double confidence, Alternative alternative);

// Jackknife acceleration a = sum U^3 / (6 (sum U^2)^1.5), U_i = (n-1)(mean - theta_(i)).
// NaN when all leave-one-out values are equal.
double jackknife_acceleration(std::span<const double> leave_one_out);

// BCa interval from the resampled statistics, the estimate and the jackknife acceleration.
// Writes z0 when `z0_out` is given. NaN bounds when z0 or a is not finite. Reorders `thetas`.
Interval bca_interval(std::vector<double>& thetas, double estimate, double acceleration,
                      double confidence, Alternative alternative, double* z0_out = nullptr);

}  // namespace layerbench::stats
