#pragma once
// Intervals for ratios and functions of medians, the statistics behind the gate's relative
// change and the report's derived figures:
//   paired (one index vector per resample, pairs stay pairs): the relative change of the means,
//     candidate mean / base mean - 1, by the percentile bootstrap or, at large n, the delta method;
//   independent samples (separate runs): the relative change of the medians and any function of
//     two medians, each sample resampled on its own (percentile bootstrap).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "stats/common.hpp"

namespace layerbench::stats {

// mean(candidate) / mean(base) - 1 of pairs with its percentile-bootstrap interval at
// `confidence` (two-sided; each end is a one-sided (1 + confidence) / 2 bound). When every
// resample gives the same value the interval is that value.
Interval paired_mean_change_bootstrap(std::span<const double> base, std::span<const double> candidate,
                                      std::size_t resamples, std::uint64_t seed, double confidence);

// The same by the delta method (normal limit): se = sd(c_i - R b_i) / (sqrt(n) |mean(b)|) with
// R = mean(c) / mean(b); the interval is change -+ z se with z the (1 - alpha) normal quantile,
// each end a one-sided (1 - alpha) bound.
Interval paired_mean_change_normal(std::span<const double> base, std::span<const double> candidate, double alpha);

// median(candidate) / median(base) - 1 of independent samples: percentile-bootstrap interval
// [Q(alpha/2), Q(1 - alpha/2)] of the resampled changes (resamples with a zero base median are
// left out). Throws std::invalid_argument when every resampled base median is zero.
Interval independent_median_change_bootstrap(std::span<const double> base, std::span<const double> candidate,
                                             std::size_t resamples, std::uint64_t seed, double alpha);

// f(median(a), median(b)) of independent samples with a two-sided percentile-bootstrap interval
// at `confidence`: a and b resampled on their own (resampled_medians, seeds seed_a and seed_b).
// With b empty, f(median(a), 0). Needs at least 2 values in each sample used (else value NaN).
struct MedianFunction {
  double value = nan_value;
  Interval ci;
};
MedianFunction function_of_medians(std::span<const double> a, std::span<const double> b,
                                   const std::function<double(double, double)>& f, double confidence,
                                   std::size_t resamples, std::uint64_t seed_a, std::uint64_t seed_b);
// median(x) with the percentile-bootstrap interval of the median (`resamples` resamples of x).
MedianFunction median_interval(std::span<const double> x, double confidence, std::size_t resamples,
                               std::uint64_t seed);

}  // namespace layerbench::stats
