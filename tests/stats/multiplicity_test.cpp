#include "stats/multiplicity.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace ls = layerbench::stats;

TEST(Holm, MatchesStatsmodels) {
  // statsmodels multipletests([0.01, 0.04, 0.03, 0.005], method="holm")[1]
  const std::vector<double> p{0.01, 0.04, 0.03, 0.005};
  const auto a = ls::holm_adjust(p);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_DOUBLE_EQ(a[0], 0.03);
  EXPECT_DOUBLE_EQ(a[1], 0.06);
  EXPECT_DOUBLE_EQ(a[2], 0.06);
  EXPECT_DOUBLE_EQ(a[3], 0.02);
}

TEST(Holm, CapsAtOneAndKeepsNan) {
  const std::vector<double> p{0.6, NAN, 0.3};
  const auto a = ls::holm_adjust(p);
  EXPECT_DOUBLE_EQ(a[2], 0.9);
  EXPECT_DOUBLE_EQ(a[0], 1.0);
  EXPECT_TRUE(std::isnan(a[1]));
}
