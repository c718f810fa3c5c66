#include "stats/tests.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/stats/oracle_data.hpp"

namespace ls = layerbench::stats;
namespace oracle = layerbench::stats::oracle;
using ls::Alternative;

TEST(TTest, SleepPaired) {  // oracle 12
  const auto r = ls::t_test(oracle::sleep_d);
  EXPECT_NEAR(r.mean, -1.58, 1e-12);
  EXPECT_NEAR(r.se * std::sqrt(10.0), 1.229995, 1e-6);
  EXPECT_NEAR(r.t, -4.062128, 1e-6);
  EXPECT_DOUBLE_EQ(r.df, 9.0);
  EXPECT_NEAR(r.p, 0.002833, 1e-6);
  EXPECT_NEAR(r.ci.low, -2.459886, 1e-6);
  EXPECT_NEAR(r.ci.high, -0.700114, 1e-6);
}

TEST(TTest, OneSidedAndSymmetry) {
  const auto two = ls::t_test(oracle::sleep_d);
  const auto less = ls::t_test(oracle::sleep_d, 0.95, Alternative::less);
  const auto greater = ls::t_test(oracle::sleep_d, 0.95, Alternative::greater);
  EXPECT_NEAR(less.p, two.p / 2, 1e-15);
  EXPECT_NEAR(greater.p, 1 - two.p / 2, 1e-12);
  EXPECT_TRUE(std::isinf(less.ci.low));
  EXPECT_LT(less.ci.high, 0);
  EXPECT_TRUE(std::isinf(greater.ci.high));
  // Matches scipy.stats.ttest_rel on a second data set.
  const std::vector<double> d{0.2, 0.4, 0.1, 0.3, -0.1, 0.4, 0.3, 0.1, 0.3, 0.1, 0.5, 0.5};
  EXPECT_NEAR(ls::t_test(d).t, 4.884905575655475, 1e-10);
  EXPECT_NEAR(ls::t_test(d).p, 0.00048309139787344984, 1e-14);
  EXPECT_THROW(ls::t_test(std::vector<double>{1.0}), std::invalid_argument);
}

TEST(TTest, ConstantDeltas) {
  const auto r = ls::t_test(std::vector<double>{2, 2, 2});
  EXPECT_TRUE(std::isinf(r.t));
  EXPECT_DOUBLE_EQ(r.p, 0.0);
  EXPECT_TRUE(std::isnan(ls::t_test(std::vector<double>{0, 0, 0}).p));
}

TEST(SignTest, HollanderWolfe) {  // oracle 8
  const auto g = ls::sign_test(oracle::hw_d, Alternative::greater);
  EXPECT_EQ(g.positive, 7u);
  EXPECT_EQ(g.n, 9u);
  EXPECT_DOUBLE_EQ(g.p, 0.08984375);
  EXPECT_DOUBLE_EQ(ls::sign_test(oracle::hw_d).p, 0.1796875);
}

TEST(SignTest, Corn) {  // oracle 9
  const auto r = ls::sign_test(oracle::corn);
  EXPECT_EQ(r.positive, 13u);
  EXPECT_EQ(r.negative, 2u);
  EXPECT_DOUBLE_EQ(r.p, 0.00738525390625);
}

TEST(SignTest, ZerosDroppedAndAllZero) {
  const auto r = ls::sign_test(oracle::sleep_d);
  EXPECT_EQ(r.zeros, 1u);
  EXPECT_EQ(r.n, 9u);
  EXPECT_DOUBLE_EQ(r.p, 2.0 / 512.0);
  EXPECT_DOUBLE_EQ(ls::sign_test(std::vector<double>{0, 0}).p, 1.0);
}

TEST(Binomial, ScipyOracle) {  // oracle 10
  const auto r = ls::binomial_test(3, 15, 0.1, Alternative::greater);
  EXPECT_NEAR(r.p, 0.18406106910639114, 1e-14);
  EXPECT_NEAR(r.ci.low, 0.05684686759024681, 1e-12);
  EXPECT_DOUBLE_EQ(r.ci.high, 1.0);
}

TEST(Binomial, RMinlikeTwoSided) {  // oracle 11
  EXPECT_NEAR(ls::binomial_test(682, 925, 0.75).p, 0.38249156, 1e-8);
  // At p = 1/2 minlike equals min(1, 2 min tail).
  EXPECT_DOUBLE_EQ(ls::binomial_test(7, 9).p, 2 * 0.08984375);
  EXPECT_DOUBLE_EQ(ls::binomial_test(5, 10).p, 1.0);
}

TEST(Welch, MatchesScipyTtestInd) {
  // scipy.stats.ttest_ind([1, 2, 3, 4, 6], [2, 4, 6, 8, 10, 12], equal_var=False)
  const auto r = ls::welch_t_test(std::vector<double>{1, 2, 3, 4, 6}, std::vector<double>{2, 4, 6, 8, 10, 12});
  EXPECT_NEAR(r.t, -2.167598108926589, 1e-12);
  EXPECT_NEAR(r.df, 7.705550167239236, 1e-10);
  EXPECT_NEAR(r.p, 0.06333171374352972, 1e-12);
  EXPECT_DOUBLE_EQ(r.difference, 3.2 - 7.0);
}
