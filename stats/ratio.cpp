#include "stats/ratio.hpp"

#include <boost/math/distributions/normal.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <random>
#include <vector>

#include "stats/bootstrap.hpp"
#include "stats/slope.hpp"
#include "stats/summary.hpp"

namespace layerbench::stats {
namespace {

double mean(std::span<const double> x) {
  double s = 0;
  for (double v : x) s += v;
  return s / static_cast<double>(x.size());
}

// Type-7 quantile of an unsorted vector (reorders it).
double quantile_inplace(std::vector<double>& x, double p) {
  std::sort(x.begin(), x.end());
  return quantile_sorted(x, p);
}

}  // namespace

Interval paired_mean_change_bootstrap(std::span<const double> base, std::span<const double> candidate,
                                      std::size_t resamples, std::uint64_t seed, double confidence) {
  BootstrapOptions bo;
  bo.resamples = resamples;
  bo.seed = seed;
  bo.confidence = confidence;
  bo.num_threads = 1;  // callers run many small studies; threads cost more than they save
  const auto boot = bootstrap(
      base.size(),
      [&](std::span<const std::uint32_t> idx) {
        double sb = 0, sc = 0;
        for (auto i : idx) {
          sb += base[i];
          sc += candidate[i];
        }
        return sc / sb - 1;
      },
      bo);
  if (std::isnan(boot.percentile.low)) {  // every resample equal: the data are the interval
    const double change = mean(candidate) / mean(base) - 1;
    return {change, change};
  }
  return boot.percentile;
}

Interval paired_mean_change_normal(std::span<const double> base, std::span<const double> candidate, double alpha) {
  const double mb = mean(base);
  const double ratio = mean(candidate) / mb;
  double ss = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    const double u = candidate[i] - ratio * base[i];
    ss += u * u;
  }
  const double n = static_cast<double>(base.size());
  const double se = std::sqrt(ss / (n - 1)) / (std::sqrt(n) * std::abs(mb));
  const double z = boost::math::quantile(boost::math::normal(), 1 - alpha);
  const double change = ratio - 1;
  return {change - z * se, change + z * se};
}

Interval independent_median_change_bootstrap(std::span<const double> base, std::span<const double> candidate,
                                             std::size_t resamples, std::uint64_t seed, double alpha) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick_b(0, base.size() - 1), pick_c(0, candidate.size() - 1);
  std::vector<double> rb(base.size()), rc(candidate.size()), changes;
  changes.reserve(resamples);
  for (std::size_t r = 0; r < resamples; ++r) {
    for (auto& v : rb) v = base[pick_b(rng)];
    for (auto& v : rc) v = candidate[pick_c(rng)];
    const double mb = quantile_inplace(rb, 0.5), mc = quantile_inplace(rc, 0.5);
    if (mb != 0) changes.push_back(mc / mb - 1);
  }
  if (changes.empty()) throw std::invalid_argument("base median is zero: relative change undefined");
  auto hi_copy = changes;
  return {quantile_inplace(changes, alpha / 2), quantile_inplace(hi_copy, 1 - alpha / 2)};
}

MedianFunction function_of_medians(std::span<const double> a, std::span<const double> b,
                                   const std::function<double(double, double)>& f, double confidence,
                                   std::size_t resamples, std::uint64_t seed_a, std::uint64_t seed_b) {
  MedianFunction out;
  const bool two = !b.empty();
  if (a.size() < 2 || (two && b.size() < 2)) return out;
  const auto ra = resampled_medians(a, resamples, seed_a);
  std::vector<double> rb;
  if (two) rb = resampled_medians(b, resamples, seed_b);
  std::vector<double> theta(ra.size());
  for (std::size_t i = 0; i < ra.size(); ++i) theta[i] = f(ra[i], two ? rb[i] : 0.0);
  out.value = f(summarize(a).median, two ? summarize(b).median : 0.0);
  out.ci = percentile_interval(theta, confidence, Alternative::two_sided);
  return out;
}

MedianFunction median_interval(std::span<const double> x, double confidence, std::size_t resamples,
                               std::uint64_t seed) {
  MedianFunction out;
  if (x.size() < 2) return out;
  auto theta = resampled_medians(x, resamples, seed);
  out.value = summarize(x).median;
  out.ci = percentile_interval(theta, confidence, Alternative::two_sided);
  return out;
}

}  // namespace layerbench::stats
