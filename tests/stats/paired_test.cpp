#include "stats/paired.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace ls = layerbench::stats;

namespace {

const std::vector<double> base{10.2, 10.5, 9.9, 10.8, 10.1, 10.4, 10.6, 10.0, 10.3, 10.7, 10.2, 10.9};
const std::vector<double> cand{10.0, 10.1, 9.8, 10.5, 10.2, 10.0, 10.3, 9.9, 10.0, 10.6, 9.7, 10.4};

ls::PairedOptions quick() {
  ls::PairedOptions o;
  o.resamples = 20000;
  return o;
}

}  // namespace

TEST(Paired, MatchesScipyOnDeltas) {
  const auto a = ls::analyze_paired(base, cand, quick());
  EXPECT_EQ(a.n, 12u);
  // scipy: d = cand - base (+ = the candidate is larger); mean, median, trim_mean(d, 0.1),
  // std(ddof=1), ttest_rel(cand, base).
  EXPECT_NEAR(a.delta.mean, -0.2583333333333333, 1e-12);
  EXPECT_NEAR(a.delta.median, -0.3, 1e-12);
  EXPECT_NEAR(a.delta.trimmed_mean, -0.27, 1e-12);
  EXPECT_NEAR(a.delta.sd, 0.18319554050414572, 1e-12);
  EXPECT_NEAR(a.delta.mean_pct, 100 * -0.2583333333333333 / a.base.mean, 1e-12);
  EXPECT_NEAR(a.t.t, -4.884905575655475, 1e-9);
  EXPECT_NEAR(a.t.p, 0.00048309139787344984, 1e-13);
  // scipy wilcoxon(d.round(10), method='approx'): ties split by round-off are merged first.
  EXPECT_NEAR(a.wilcoxon.p_normal, 0.003963147976117552, 1e-13);
  EXPECT_DOUBLE_EQ(a.wilcoxon.w_plus, 2.5);
  EXPECT_EQ(a.sign.positive, 1u);
  EXPECT_EQ(a.sign.negative, 11u);
  EXPECT_DOUBLE_EQ(a.sign.p, 26.0 / 4096.0);
  EXPECT_TRUE(a.bootstrap.mean.percentile.high < 0);
  EXPECT_FALSE(a.guidance.empty());
  EXPECT_NE(a.guidance[0].find("All tests agree"), std::string::npos);
}

TEST(Paired, GuidanceNeverSaysAllTestsAgreeWhenTheSignTestDisagrees) {
  // Eight large positive deltas, four tiny negative ones: t and Wilcoxon significant, sign test
  // (8 of 12, p = 0.39) not.
  const std::vector<double> d{5, 6, 7, 8, 5.5, 6.5, 7.5, 8.5, -0.1, -0.2, -0.3, -0.4};
  std::vector<double> b(d.size(), 100.0), c;
  for (double x : d) c.push_back(100.0 + x);
  const auto a = ls::analyze_paired(b, c, quick());
  ASSERT_LT(a.t.p, 0.05);
  ASSERT_LT(*a.wilcoxon.p_exact, 0.05);
  ASSERT_GT(a.sign.p, 0.05);
  std::string all;
  for (const auto& g : a.guidance) all += g + "\n";
  EXPECT_EQ(all.find("All tests agree"), std::string::npos) << all;
  EXPECT_NE(all.find("the sign test is not significant"), std::string::npos) << all;
}

TEST(Paired, SwappingArmsFlipsSignsAndKeepsP) {
  const auto a = ls::analyze_paired(base, cand, quick());
  const auto b = ls::analyze_paired(cand, base, quick());
  EXPECT_DOUBLE_EQ(a.delta.mean, -b.delta.mean);
  EXPECT_DOUBLE_EQ(a.delta.median, -b.delta.median);
  EXPECT_DOUBLE_EQ(a.t.t, -b.t.t);
  EXPECT_DOUBLE_EQ(a.t.p, b.t.p);
  EXPECT_DOUBLE_EQ(a.wilcoxon.z, -b.wilcoxon.z);
  EXPECT_DOUBLE_EQ(*a.wilcoxon.p_exact, *b.wilcoxon.p_exact);
  EXPECT_DOUBLE_EQ(a.sign.p, b.sign.p);
  // b's deltas are base - cand: its lower bound is the negated upper bound of a's (the resampling
  // is seeded identically; the quantile rule is exact in this direction).
  EXPECT_NEAR(b.bootstrap.mean.percentile.low, -a.bootstrap.mean.percentile.high, 1e-12);
}

TEST(Paired, OutliersDriftAndPrediction) {
  // The seeds' pattern: a small positive effect with two symmetric outliers.
  std::vector<double> b, c;
  for (int i = 0; i < 31; ++i) {
    const double d = i == 5 ? -9.0 : (i == 20 ? 6.0 : 0.9 + std::sin(i * 1.7));
    b.push_back(236.0 + 0.3 * std::cos(i * 0.9));
    c.push_back(b.back() + d);
  }
  ls::PairedOptions o = quick();
  o.predicted = 0.822;
  const auto a = ls::analyze_paired(b, c, o);
  ASSERT_GE(a.outliers.size(), 2u);
  EXPECT_EQ(a.outliers.front().index, 5u);
  EXPECT_EQ(a.outliers.front().side, ls::OutlierSide::low);
  EXPECT_EQ(a.outliers.back().index, 20u);
  ASSERT_TRUE(a.predicted.has_value());
  EXPECT_NEAR(a.predicted->ratio_mean, a.delta.mean / 0.822, 1e-12);
  EXPECT_LT(*a.wilcoxon.p_exact, 0.05);
  EXPECT_GT(a.t.p, 0.05);
  EXPECT_NE(a.guidance[0].find("Rank tests significant"), std::string::npos);
  EXPECT_NE(a.guidance[0].find("outliers"), std::string::npos);
}

TEST(Paired, DriftWarning) {
  std::vector<double> b, c;
  for (int i = 0; i < 20; ++i) {
    b.push_back(10.0 + 0.1 * i);
    c.push_back(10.0 + 0.1 * i + ((i * 7) % 5 - 2) * 0.01);
  }
  const auto a = ls::analyze_paired(b, c, quick());
  EXPECT_NEAR(a.drift.base.rho, 1.0, 1e-12);
  EXPECT_LT(a.drift.base.p, 0.05);
  bool warned = false;
  for (const auto& w : a.warnings) warned |= w.find("drift") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(Paired, DegenerateAndInvalid) {
  const std::vector<double> b{1, 2, 3, 4};
  const std::vector<double> c{0.5, 1.5, 2.5, 3.5};
  const auto a = ls::analyze_paired(b, c, quick());
  EXPECT_TRUE(std::isnan(a.bootstrap.mean.percentile.low));
  EXPECT_FALSE(a.warnings.empty());
  EXPECT_THROW(ls::analyze_paired(std::vector<double>{1}, std::vector<double>{1}), std::invalid_argument);
  EXPECT_THROW(ls::analyze_paired(b, std::vector<double>{1, 2}), std::invalid_argument);
  EXPECT_THROW(ls::analyze_paired(b, std::vector<double>{1, 2, NAN, 4}), std::invalid_argument);
}

TEST(Paired, GuidancePrintsPercentagesOfAZeroBaseAsNotAvailable) {
  // A base mean of 0 leaves "% of the base mean" undefined: the one formatter's "—", not "n/a".
  std::vector<double> b(12, 0.0), c;
  for (int i = 1; i <= 12; ++i) c.push_back(i);
  const auto a = ls::analyze_paired(b, c, quick());
  ASSERT_TRUE(std::isnan(a.delta.mean_pct));
  std::string all;
  for (const auto& g : a.guidance) all += g + "\n";
  EXPECT_NE(all.find("All tests agree: the candidate is higher by 6.5 (—) on average"), std::string::npos) << all;
  EXPECT_EQ(all.find("n/a"), std::string::npos) << all;
}
