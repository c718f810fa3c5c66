#include "stats/bootstrap.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "stats/summary.hpp"

namespace ls = layerbench::stats;

namespace {

const std::vector<double> sample{0.9, -0.4, 1.7, 0.3, 2.2, 0.8, -1.1, 1.4, 0.6, 3.9, 0.2, 1.1};

ls::IndexStatistic mean_of(const std::vector<double>& x) {
  return [&x](std::span<const std::uint32_t> idx) { return ls::mean_of_indices(x, idx); };
}

ls::BootstrapOptions options(std::size_t resamples, std::size_t threads = 1) {
  ls::BootstrapOptions o;
  o.resamples = resamples;
  o.num_threads = threads;
  return o;
}

}  // namespace

TEST(Bootstrap, JackknifeAccelerationOracle) {  // oracle 18
  const std::vector<double> d{1, 2, 3, 4, 10};
  std::vector<double> loo;
  for (double v : d) loo.push_back((20 - v) / 4);  // leave-one-out means
  EXPECT_NEAR(ls::jackknife_acceleration(loo), 180 / (6 * std::pow(50.0, 1.5)), 1e-12);
  EXPECT_NEAR(ls::jackknife_acceleration(loo), 0.0848528, 1e-7);
  EXPECT_TRUE(std::isnan(ls::jackknife_acceleration(std::vector<double>{2, 2, 2})));
}

TEST(Bootstrap, BcaEqualsPercentileWhenZ0AndAccelerationAreZero) {
  // Symmetric around the estimate: p0 = 1/2 exactly, so z0 = 0; a = 0 is passed in.
  std::vector<double> thetas;
  for (int i = -500; i <= 500; ++i) thetas.push_back(i * 0.01);
  auto copy = thetas;
  double z0 = 1;
  const auto bca = ls::bca_interval(thetas, 0.0, 0.0, 0.9, ls::Alternative::two_sided, &z0);
  const auto pct = ls::percentile_interval(copy, 0.9, ls::Alternative::two_sided);
  EXPECT_DOUBLE_EQ(z0, 0.0);
  EXPECT_DOUBLE_EQ(bca.low, pct.low);
  EXPECT_DOUBLE_EQ(bca.high, pct.high);
  EXPECT_NEAR(pct.low, -4.5, 1e-12);
  EXPECT_NEAR(pct.high, 4.5, 1e-12);
}

TEST(Bootstrap, ReproducibleForASeedWhateverTheThreadCount) {
  const auto a = ls::bootstrap_mean_median(sample, options(50000, 1));
  const auto b = ls::bootstrap_mean_median(sample, options(50000, 1));
  const auto c = ls::bootstrap_mean_median(sample, options(50000, 3));
  EXPECT_EQ(a.mean.percentile.low, b.mean.percentile.low);
  EXPECT_EQ(a.mean.bca.high, b.mean.bca.high);
  EXPECT_EQ(a.mean.percentile.low, c.mean.percentile.low);
  EXPECT_EQ(a.mean.percentile.high, c.mean.percentile.high);
  EXPECT_EQ(a.mean.bca.low, c.mean.bca.low);
  EXPECT_EQ(a.median.bca.high, c.median.bca.high);
  auto other = options(50000, 1);
  other.seed = 7;
  EXPECT_NE(ls::bootstrap_mean_median(sample, other).mean.standard_error, a.mean.standard_error);
  EXPECT_EQ(a.mean.seed, ls::default_bootstrap_seed);
  EXPECT_EQ(a.mean.resamples, 50000u);
}

TEST(Bootstrap, FastPathEqualsGenericPathOnTheSortedSample) {
  const auto fast = ls::bootstrap_mean_median(sample, options(20000));
  std::vector<double> sorted = sample;
  std::sort(sorted.begin(), sorted.end());
  const auto mean = ls::bootstrap(sorted.size(), mean_of(sorted), options(20000, 2));
  EXPECT_EQ(fast.mean.percentile.low, mean.percentile.low);
  EXPECT_EQ(fast.mean.percentile.high, mean.percentile.high);
  EXPECT_NEAR(fast.mean.bca.low, mean.bca.low, 1e-12);
  EXPECT_NEAR(fast.mean.acceleration, mean.acceleration, 1e-12);
  const auto median = ls::bootstrap(
      sorted.size(),
      [&sorted](std::span<const std::uint32_t> idx) {
        std::vector<double> v;
        for (auto i : idx) v.push_back(sorted[i]);
        return ls::quantile(v, 0.5);
      },
      options(20000));
  EXPECT_EQ(fast.median.percentile.low, median.percentile.low);
  EXPECT_EQ(fast.median.percentile.high, median.percentile.high);
  EXPECT_EQ(fast.median.bca.low, median.bca.low);
  EXPECT_EQ(fast.median.bca.high, median.bca.high);
  // The order of the rows does not change the bootstrap distribution of a symmetric statistic:
  // the unsorted sample agrees within Monte Carlo error.
  const auto unsorted = ls::bootstrap(sample.size(), mean_of(sample), options(20000));
  EXPECT_NEAR(unsorted.percentile.low, mean.percentile.low, 0.05);
  EXPECT_NEAR(unsorted.percentile.high, mean.percentile.high, 0.05);
}

TEST(Bootstrap, ConvergesToExhaustiveEnumeration) {
  // n = 5: all 5^5 resamples are the exact bootstrap distribution.
  const std::vector<double> d{1, 2, 3, 4, 10};
  std::vector<double> exact;
  for (int code = 0; code < 3125; ++code) {
    double sum = 0;
    for (int k = 0, c = code; k < 5; ++k, c /= 5) sum += d[static_cast<std::size_t>(c % 5)];
    exact.push_back(sum / 5);
  }
  auto exact_copy = exact;
  const auto pct = ls::percentile_interval(exact, 0.9, ls::Alternative::two_sided);
  const auto bca = ls::bca_interval(exact_copy, 4.0, 0.0848528137423857, 0.9, ls::Alternative::two_sided);
  auto o = options(200000, 2);
  o.confidence = 0.9;
  const auto mc = ls::bootstrap_mean_median(d, o).mean;
  EXPECT_NEAR(mc.percentile.low, pct.low, 0.05);
  EXPECT_NEAR(mc.percentile.high, pct.high, 0.05);
  EXPECT_NEAR(mc.bca.low, bca.low, 0.05);
  EXPECT_NEAR(mc.bca.high, bca.high, 0.05);
  EXPECT_NEAR(mc.acceleration, 0.0848528137423857, 1e-12);
  // Skewed data: BCa shifts the interval right of the percentile one.
  EXPECT_GT(mc.bca.high, mc.percentile.high);
}

TEST(Bootstrap, DegenerateDataGivesNanAndWarning) {
  const std::vector<double> d(8, 0.25);
  const auto r = ls::bootstrap_mean_median(d, options(2000));
  EXPECT_TRUE(std::isnan(r.mean.percentile.low));
  EXPECT_TRUE(std::isnan(r.mean.bca.high));
  EXPECT_TRUE(std::isnan(r.median.percentile.high));
  EXPECT_FALSE(r.mean.warnings.empty());
  EXPECT_DOUBLE_EQ(r.mean.estimate, 0.25);
}

TEST(Bootstrap, RelativeChangeOverPairedIndicesOneSided) {
  // The gate's use: a CI of mean(candidate - base) / mean(base) with pairs kept together.
  const std::vector<double> base{10.0, 10.4, 9.8, 10.1, 10.6, 10.2, 9.9, 10.3};
  const std::vector<double> cand{10.3, 10.6, 10.2, 10.3, 11.0, 10.4, 10.1, 10.8};
  auto stat = [&](std::span<const std::uint32_t> idx) {
    double b = 0, c = 0;
    for (auto i : idx) {
      b += base[i];
      c += cand[i];
    }
    return (c - b) / b;
  };
  auto o = options(20000);
  o.alternative = ls::Alternative::greater;
  const auto r = ls::bootstrap(base.size(), stat, o);
  EXPECT_NEAR(r.estimate, (83.7 - 81.3) / 81.3, 1e-12);
  EXPECT_TRUE(std::isinf(r.percentile.high));
  EXPECT_GT(r.percentile.low, 0.0);  // every pair got slower
  EXPECT_LT(r.percentile.low, r.estimate);
  EXPECT_TRUE(std::isinf(r.bca.high));
  EXPECT_THROW(ls::bootstrap(1, stat, o), std::invalid_argument);
}
