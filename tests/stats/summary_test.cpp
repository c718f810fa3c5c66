#include "stats/summary.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace ls = layerbench::stats;

TEST(Summary, Type7QuantilesMatchTukeyOracle) {
  // statistics.md oracle 19: [1..10, 20, 50] -> q1 3.75, q3 9.25.
  std::vector<double> x{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 50};
  EXPECT_DOUBLE_EQ(ls::quantile(x, 0.25), 3.75);
  EXPECT_DOUBLE_EQ(ls::quantile(x, 0.75), 9.25);
}

TEST(Summary, BasicFigures) {
  std::vector<double> x{4, 1, 3, 2};
  const auto s = ls::summarize(x);
  EXPECT_EQ(s.n, 4u);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_NEAR(s.sd, 1.2909944487358056, 1e-12);
  EXPECT_THROW(ls::summarize(std::vector<double>{}), std::invalid_argument);
}
