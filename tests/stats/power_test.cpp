#include "stats/power.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace ls = layerbench::stats;

TEST(Power, RTwoSampleOracles) {  // oracles 15 and 16
  EXPECT_NEAR(ls::t_test_power(20, 1, 1, 0.05, ls::TDesign::two_sample), 0.8689528, 1e-7);
  EXPECT_NEAR(ls::t_test_sample_size(1, 1, 0.05, 0.9, ls::TDesign::two_sample), 22.02110, 1e-5);
}

TEST(Power, PairedPlanOracle) {  // oracle 17 and statistics.md 2.7
  const auto p = ls::plan_paired(1.0, 1.0);
  EXPECT_NEAR(p.n_normal, 7.848880, 1e-6);
  EXPECT_NEAR(p.n_t, 9.917, 1e-3);
  EXPECT_NEAR(p.n_exact, 9.937864, 1e-6);
  EXPECT_EQ(p.recommended, 10u);
  EXPECT_NEAR(ls::plan_paired(2.0, 1.0).n_t, 33.38, 1e-2);
  // The sign of the effect does not matter; the floor of 6 pairs applies to big effects.
  EXPECT_DOUBLE_EQ(ls::plan_paired(1.0, -1.0).n_exact, p.n_exact);
  EXPECT_EQ(ls::plan_paired(0.1, 1.0).recommended, 6u);
}

TEST(Power, InvalidInput) {
  EXPECT_THROW(ls::plan_paired(1.0, 0.0), std::invalid_argument);
  EXPECT_THROW(ls::plan_paired(0.0, 1.0), std::invalid_argument);
  EXPECT_THROW(ls::plan_paired(1.0, 1.0, 1.5), std::invalid_argument);
  EXPECT_THROW(ls::plan_paired(1.0, 1.0, 0.05, 1.0), std::invalid_argument);
}

TEST(Power, RankTestFloors) {  // statistics.md 2.7 and oracle 22
  EXPECT_DOUBLE_EQ(ls::min_p_signed_rank(5), 0.0625);
  EXPECT_DOUBLE_EQ(ls::min_p_signed_rank(6), 0.03125);
  EXPECT_EQ(ls::min_pairs_for_alpha(0.05), 6u);
  EXPECT_NEAR(ls::min_p_rank_sum(4, 4), 0.028571, 1e-6);
  EXPECT_NEAR(ls::min_p_rank_sum(5, 5), 0.0079365, 1e-7);
}
