#include "stats/limits.hpp"

#include <gtest/gtest.h>

namespace ls = layerbench::stats;

// statistics.md oracle 21: history n = 25, mean 100, sd 10, boundary 0.977 ->
// Bencher's t_test limit 121.46 and z_score limit 119.95.
TEST(Limits, BencherOracle21) {
  EXPECT_NEAR(ls::t_test_upper_limit(100, 10, 25, 0.977), 121.46, 0.005);
  EXPECT_NEAR(ls::z_score_upper_limit(100, 10, 0.977), 119.95, 0.005);
}

TEST(Limits, RejectsBadInput) {
  EXPECT_THROW(ls::t_test_upper_limit(0, 1, 1, 0.9), std::invalid_argument);
  EXPECT_THROW(ls::z_score_upper_limit(0, 1, 1.0), std::invalid_argument);
  // The t limit is wider than the z limit and converges to it as the history grows.
  EXPECT_GT(ls::t_test_upper_limit(0, 1, 5, 0.95), ls::z_score_upper_limit(0, 1, 0.95));
  EXPECT_NEAR(ls::t_test_upper_limit(0, 1, 100000, 0.95), ls::z_score_upper_limit(0, 1, 0.95), 1e-4);
}
