#include "stats/robust.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace ls = layerbench::stats;

TEST(Robust, TukeyOracle) {  // oracle 19
  const std::vector<double> x{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 50};
  const auto f = ls::tukey_fences(x);
  EXPECT_DOUBLE_EQ(f.q1, 3.75);
  EXPECT_DOUBLE_EQ(f.q3, 9.25);
  EXPECT_DOUBLE_EQ(f.iqr, 5.5);
  EXPECT_DOUBLE_EQ(f.outer_low, -12.75);
  EXPECT_DOUBLE_EQ(f.inner_low, -4.5);
  EXPECT_DOUBLE_EQ(f.inner_high, 17.5);
  EXPECT_DOUBLE_EQ(f.outer_high, 25.75);
  const auto out = ls::tukey_outliers(x);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].index, 10u);
  EXPECT_EQ(out[0].side, ls::OutlierSide::high);
  EXPECT_EQ(out[0].severity, ls::OutlierSeverity::mild);
  EXPECT_EQ(out[1].index, 11u);
  EXPECT_EQ(out[1].severity, ls::OutlierSeverity::severe);
  EXPECT_EQ(ls::to_string(out[1].severity), "severe");
}

TEST(Robust, PointOnFenceIsNormalAndLowSide) {
  // q1 = 2, q3 = 4 for {1..5}: inner fences -1 and 7.
  const std::vector<double> x{1, 2, 3, 4, 5, 7, -1, -2, 13};
  const auto f = ls::tukey_fences(std::vector<double>{1, 2, 3, 4, 5});
  const auto out = ls::tukey_outliers(x, f);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].index, 7u);
  EXPECT_EQ(out[0].side, ls::OutlierSide::low);
  EXPECT_EQ(out[0].severity, ls::OutlierSeverity::mild);
  EXPECT_EQ(out[1].index, 8u);
  EXPECT_EQ(out[1].severity, ls::OutlierSeverity::severe);
}

TEST(Robust, TrimmedMean) {  // oracle 20
  EXPECT_DOUBLE_EQ(ls::trimmed_mean(std::vector<double>{1, 2, 3, 5}, 0.25), 2.5);
  // scipy trim_mean of the deltas in paired_test at 0.1: drops one value from each end.
  const std::vector<double> d{0.2, 0.4, 0.1, 0.3, -0.1, 0.4, 0.3, 0.1, 0.3, 0.1, 0.5, 0.5};
  EXPECT_NEAR(ls::trimmed_mean(d, 0.1), 0.2699999999999999, 1e-14);
  EXPECT_THROW(ls::trimmed_mean(std::vector<double>{1, 2}, 0.5), std::invalid_argument);
  EXPECT_THROW(ls::trimmed_mean(std::vector<double>{}, 0.1), std::invalid_argument);
}
