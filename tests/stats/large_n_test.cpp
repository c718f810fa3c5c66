// Above kBootstrapMaxPairs the paired analysis switches from the bootstrap to normal-limit
// intervals. Where both can run, they must agree: the switch changes the method, not the answer.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "stats/bootstrap.hpp"
#include "stats/paired.hpp"

namespace st = layerbench::stats;

namespace {
std::vector<double> skewed(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::gamma_distribution<double> g(4.0, 0.01);  // right-skewed, like run times
  std::vector<double> x(n);
  for (auto& v : x) v = g(rng) - 0.03;
  return x;
}
}  // namespace

TEST(LargeN, NormalLimitAgreesWithTheBootstrapWhereBothRun) {
  const auto x = skewed(8000, 7);
  st::BootstrapOptions bo;
  bo.resamples = 20000;
  const auto boot = st::bootstrap_mean_median(x, bo);
  const auto lim = st::normal_limit_mean_median(x, 0.95);
  EXPECT_DOUBLE_EQ(lim.mean.estimate, boot.mean.estimate);
  EXPECT_DOUBLE_EQ(lim.median.estimate, boot.median.estimate);
  const double mean_width = boot.mean.percentile.high - boot.mean.percentile.low;
  EXPECT_NEAR(lim.mean.percentile.low, boot.mean.percentile.low, 0.05 * mean_width);
  EXPECT_NEAR(lim.mean.percentile.high, boot.mean.percentile.high, 0.05 * mean_width);
  const double median_width = boot.median.percentile.high - boot.median.percentile.low;
  EXPECT_NEAR(lim.median.percentile.low, boot.median.percentile.low, 0.15 * median_width);
  EXPECT_NEAR(lim.median.percentile.high, boot.median.percentile.high, 0.15 * median_width);
  EXPECT_EQ(lim.mean.resamples, 0u);
}

TEST(LargeN, AnalysisSwitchesAboveTheThreshold) {
  const std::size_t n = st::kBootstrapMaxPairs + 1;
  const auto d = skewed(n, 11);
  std::vector<double> base(n), cand(n);
  for (std::size_t i = 0; i < n; ++i) {
    base[i] = 1.0 + d[i];
    cand[i] = 1.0;
  }
  const auto a = st::analyze_paired(base, cand);
  EXPECT_TRUE(a.normal_limit);
  EXPECT_TRUE(a.bootstrap.mean.percentile.contains(a.delta.mean));
  EXPECT_TRUE(a.bootstrap.median.percentile.contains(a.delta.median));
  EXPECT_FALSE(a.guidance.empty());
  std::vector<double> small_b(base.begin(), base.begin() + 200), small_c(cand.begin(), cand.begin() + 200);
  st::PairedOptions o;
  o.resamples = 2000;
  EXPECT_FALSE(st::analyze_paired(small_b, small_c, o).normal_limit);
}
