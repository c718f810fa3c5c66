// Ratio intervals and functions of medians (stats/ratio.hpp): exact values where the data fix
// them, the delta-method formula recomputed by hand, coverage of a known ratio, reproducibility
// for a seed and the degenerate cases.
#include "stats/ratio.hpp"
#include "stats/summary.hpp"

#include <gtest/gtest.h>

#include <boost/math/distributions/normal.hpp>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

namespace st = layerbench::stats;

namespace {

// base ~ 1 + noise, candidate = base * ratio * (1 + small noise): pairs with a known mean ratio.
void make_pairs(std::size_t n, double ratio, std::vector<double>& base, std::vector<double>& candidate,
                unsigned seed = 7) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 0.05);
  base.resize(n);
  candidate.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    base[i] = 1.0 + noise(rng);
    candidate[i] = base[i] * ratio * (1 + 0.2 * noise(rng));
  }
}

}  // namespace

TEST(Ratio, DeltaMethodMatchesTheFormula) {
  std::vector<double> b, c;
  make_pairs(500, 1.03, b, c);
  const double alpha = 0.05;
  const auto ci = st::paired_mean_change_normal(b, c, alpha);
  double mb = 0, mc = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    mb += b[i];
    mc += c[i];
  }
  mb /= static_cast<double>(b.size());
  mc /= static_cast<double>(b.size());
  const double r = mc / mb;
  double ss = 0;
  for (std::size_t i = 0; i < b.size(); ++i) ss += (c[i] - r * b[i]) * (c[i] - r * b[i]);
  const double n = static_cast<double>(b.size());
  const double se = std::sqrt(ss / (n - 1)) / (std::sqrt(n) * mb);
  const double z = boost::math::quantile(boost::math::normal(), 1 - alpha);
  EXPECT_NEAR(ci.low, r - 1 - z * se, 1e-12);
  EXPECT_NEAR(ci.high, r - 1 + z * se, 1e-12);
  // An exact ratio has no spread: the interval is the change itself.
  std::vector<double> base{1, 2, 3, 4, 5}, scaled{1.1, 2.2, 3.3, 4.4, 5.5};
  const auto exact = st::paired_mean_change_normal(base, scaled, alpha);
  EXPECT_NEAR(exact.low, 0.1, 1e-12);
  EXPECT_NEAR(exact.high, 0.1, 1e-12);
}

TEST(Ratio, PairedBootstrapCoversTheRatioAndRepeatsForASeed) {
  std::vector<double> b, c;
  make_pairs(300, 1.05, b, c);
  const auto ci = st::paired_mean_change_bootstrap(b, c, 4000, 11, 0.9);
  EXPECT_LT(ci.low, 0.05);
  EXPECT_GT(ci.high, 0.05);
  EXPECT_LT(ci.high - ci.low, 0.03);
  const auto again = st::paired_mean_change_bootstrap(b, c, 4000, 11, 0.9);
  EXPECT_EQ(ci.low, again.low);
  EXPECT_EQ(ci.high, again.high);
  // The delta method agrees with the bootstrap at this n to within the Monte Carlo error.
  const auto normal = st::paired_mean_change_normal(b, c, 0.05);
  EXPECT_NEAR(normal.low, ci.low, 0.005);
  EXPECT_NEAR(normal.high, ci.high, 0.005);
  // Every resample equal: the interval is the change of the data.
  std::vector<double> base{1, 1, 1, 1}, same{1.5, 1.5, 1.5, 1.5};
  const auto flat = st::paired_mean_change_bootstrap(base, same, 500, 3, 0.9);
  EXPECT_DOUBLE_EQ(flat.low, 0.5);
  EXPECT_DOUBLE_EQ(flat.high, 0.5);
}

TEST(Ratio, IndependentMedianChange) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0.9, 1.1);
  std::vector<double> b(200), c(200);
  for (auto& v : b) v = u(rng);
  for (auto& v : c) v = 1.2 * u(rng);
  const auto ci = st::independent_median_change_bootstrap(b, c, 3000, 9, 0.05);
  const double change = st::quantile(c, 0.5) / st::quantile(b, 0.5) - 1;
  EXPECT_NEAR(change, 0.2, 0.03);
  EXPECT_LT(ci.low, change);
  EXPECT_GT(ci.high, change);
  EXPECT_GT(ci.low, 0.1);  // resolved: well away from no change
  EXPECT_LT(ci.high, 0.3);
  const std::vector<double> zeros{0, 0, 0};
  EXPECT_THROW(st::independent_median_change_bootstrap(zeros, c, 100, 1, 0.05), std::invalid_argument);
}

TEST(Ratio, FunctionsOfMedians) {
  const std::vector<double> a{4, 1, 3, 2, 5}, b{2, 2, 3, 1, 1};  // medians 3 and 2
  const auto ratio = st::function_of_medians(a, b, [](double x, double y) { return x / y; }, 0.95, 2000, 1, 2);
  EXPECT_DOUBLE_EQ(ratio.value, 1.5);
  EXPECT_LE(ratio.ci.low, ratio.value);
  EXPECT_GE(ratio.ci.high, ratio.value);
  const auto scaled = st::function_of_medians(a, {}, [](double x, double) { return 10 * x; }, 0.95, 2000, 1, 2);
  EXPECT_DOUBLE_EQ(scaled.value, 30);
  const auto median = st::median_interval(a, 0.95, 2000, 1);
  EXPECT_DOUBLE_EQ(median.value, 3);
  // The scaled median's interval is the median's, scaled (same resamples of a).
  EXPECT_NEAR(scaled.ci.low, 10 * median.ci.low, 1e-12);
  EXPECT_NEAR(scaled.ci.high, 10 * median.ci.high, 1e-12);
  EXPECT_TRUE(std::isnan(st::function_of_medians(std::vector<double>{1}, b, [](double x, double) { return x; },
                                                 0.95, 100, 1, 2).value));
  EXPECT_TRUE(std::isnan(st::median_interval(std::vector<double>{1}, 0.95, 100, 1).value));
}
