#include "stats/ranks.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include <vector>

namespace ls = layerbench::stats;

TEST(Ranks, MidRanksForTies) {
  const std::vector<double> x{0.05, 0.025, 0.05, 0.05};
  EXPECT_EQ(ls::mid_ranks(x), (std::vector<double>{3, 1, 3, 3}));
  EXPECT_EQ(ls::tie_group_sizes(x), (std::vector<std::size_t>{1, 3}));
}

TEST(Ranks, RoundingRestoresTiesSplitByRoundOff) {
  // 0.7 - 1.9 and -0.1 - 1.1 differ in the last bits; both are -1.2 to ten digits.
  const std::vector<double> d{0.7 - 1.9, -0.1 - 1.1, 0.3};
  ASSERT_NE(d[0], d[1]);
  const auto r = ls::round_for_ranking(d, 10);
  EXPECT_EQ(r[0], r[1]);
  EXPECT_DOUBLE_EQ(r[2], 0.3);
  EXPECT_EQ(ls::round_for_ranking(d, 0), d);
}

TEST(Ranks, SpearmanMatchesScipy) {
  // scipy.stats.spearmanr([1,2,3,4,5], [5,6,7,8,7]) (with a tie).
  const auto c = ls::spearman(std::vector<double>{1, 2, 3, 4, 5}, std::vector<double>{5, 6, 7, 8, 7});
  EXPECT_NEAR(c.rho, 0.8207826816681233, 1e-12);
  EXPECT_NEAR(c.p, 0.08858700531354381, 1e-10);
  // spearmanr(arange(10), [3,1,4,1,5,9,2,6,5,3])
  const auto trend = ls::spearman_trend(std::vector<double>{3, 1, 4, 1, 5, 9, 2, 6, 5, 3});
  EXPECT_NEAR(trend.rho, 0.3914537831560393, 1e-12);
  EXPECT_NEAR(trend.p, 0.2632875529923414, 1e-10);
  EXPECT_TRUE(std::isnan(ls::spearman_trend(std::vector<double>{2, 2, 2, 2}).rho));
  EXPECT_DOUBLE_EQ(ls::spearman_trend(std::vector<double>{1, 2, 3, 4}).rho, 1.0);
}
