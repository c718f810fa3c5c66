#include "stats/mann_whitney.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "stats/ranks.hpp"

namespace ls = layerbench::stats;

namespace {

// Reference: enumerate every way to label k of the pooled values as "x" and count rank sums at least
// as extreme. Independent of the subset-sum recursion under test.
struct Enumerated {
  double le = 0, ge = 0;
};
Enumerated enumerate_rank_sum(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> all = x;
  all.insert(all.end(), y.begin(), y.end());
  const auto ranks = ls::mid_ranks(all);
  double observed = 0;
  for (std::size_t i = 0; i < x.size(); ++i) observed += ranks[i];
  std::vector<bool> pick(all.size(), false);
  std::fill(pick.begin(), pick.begin() + static_cast<long>(x.size()), true);
  std::size_t total = 0, le = 0, ge = 0;
  std::sort(pick.begin(), pick.end(), std::greater<>());
  do {
    double s = 0;
    for (std::size_t i = 0; i < all.size(); ++i)
      if (pick[i]) s += ranks[i];
    ++total;
    if (s <= observed + 1e-9) ++le;
    if (s >= observed - 1e-9) ++ge;
  } while (std::prev_permutation(pick.begin(), pick.end()));
  return {static_cast<double>(le) / static_cast<double>(total), static_cast<double>(ge) / static_cast<double>(total)};
}

}  // namespace

// statistics.md oracle 22 (benchstat uTestMinP): complete separation gives the floor 2 / C(2n, n).
TEST(MannWhitney, Oracle22MinimumTwoSidedExactP) {
  EXPECT_NEAR(ls::mann_whitney_min_p(4, 4), 0.028571, 5e-7);
  EXPECT_NEAR(ls::mann_whitney_min_p(5, 5), 0.0079365, 5e-8);
  const std::vector<double> a4 = {1, 2, 3, 4}, b4 = {5, 6, 7, 8};
  const auto r4 = ls::mann_whitney_u(a4, b4);
  EXPECT_TRUE(r4.exact);
  EXPECT_DOUBLE_EQ(r4.u1, 0.0);
  EXPECT_DOUBLE_EQ(r4.u2, 16.0);
  EXPECT_NEAR(r4.p, 2.0 / 70.0, 1e-15);
  const std::vector<double> a5 = {10.5, 11, 12, 13, 14}, b5 = {1, 2, 3, 4, 5};
  const auto r5 = ls::mann_whitney_u(a5, b5);
  EXPECT_DOUBLE_EQ(r5.u1, 25.0);
  EXPECT_NEAR(r5.p, 2.0 / 252.0, 1e-15);
  EXPECT_NEAR(r5.p, 0.0079365, 5e-8);
  // 3 vs 3 can never reach 0.05: the floor is 2/20 = 0.1.
  EXPECT_NEAR(ls::mann_whitney_min_p(3, 3), 0.1, 1e-15);
}

// scipy.stats.mannwhitneyu docstring example: statistic 17.0, exact p 0.1111111111111111,
// asymptotic (continuity corrected) p 0.11134688653314041.
TEST(MannWhitney, ScipyDocExample) {
  const std::vector<double> males = {19, 22, 16, 29, 24}, females = {20, 11, 17, 12};
  const auto exact = ls::mann_whitney_u(males, females);
  EXPECT_DOUBLE_EQ(exact.u1, 17.0);
  EXPECT_TRUE(exact.exact);
  EXPECT_NEAR(exact.p, 0.1111111111111111, 1e-14);
  ls::MannWhitneyOptions o;
  o.method = ls::MannWhitneyMethod::asymptotic;
  const auto asym = ls::mann_whitney_u(males, females, o);
  EXPECT_FALSE(asym.exact);
  EXPECT_NEAR(asym.p, 0.11134688653314041, 1e-12);
  EXPECT_NEAR(asym.variance, 20.0 / 12.0 * 10.0, 1e-12);
}

TEST(MannWhitney, OneSidedFollowsScipyConvention) {
  const std::vector<double> x = {5, 6, 7, 8}, y = {1, 2, 3, 4};
  ls::MannWhitneyOptions o;
  o.alternative = ls::Alternative::greater;  // x larger than y
  EXPECT_NEAR(ls::mann_whitney_u(x, y, o).p, 1.0 / 70.0, 1e-15);
  o.alternative = ls::Alternative::less;
  EXPECT_NEAR(ls::mann_whitney_u(x, y, o).p, 1.0, 1e-15);
  // Unequal sizes with x the larger sample: the mapping from the smaller sample's rank sum back to x.
  const std::vector<double> big = {10, 11, 12, 13, 14, 15}, small = {1, 2};
  o.alternative = ls::Alternative::greater;
  EXPECT_NEAR(ls::mann_whitney_u(big, small, o).p, 1.0 / 28.0, 1e-15);
  o.alternative = ls::Alternative::less;
  EXPECT_NEAR(ls::mann_whitney_u(small, big, o).p, 1.0 / 28.0, 1e-15);
}

// With ties the exact p is conditional on the tie pattern; compare with exhaustive enumeration.
TEST(MannWhitney, ExactWithTiesMatchesEnumeration) {
  const std::vector<std::pair<std::vector<double>, std::vector<double>>> cases = {
      {{1.0, 2.0, 2.0, 3.0, 5.0}, {2.0, 3.0, 3.0, 4.0, 6.0, 6.0}},
      {{0.5, 0.5, 0.5, 0.7}, {0.5, 0.7, 0.7, 0.9, 0.9}},
      {{10, 12, 12, 12, 15, 15, 16}, {9, 10, 10, 12, 13}},
  };
  for (const auto& [x, y] : cases) {
    const auto ref = enumerate_rank_sum(x, y);
    ls::MannWhitneyOptions o;
    const auto two = ls::mann_whitney_u(x, y, o);
    EXPECT_TRUE(two.ties);
    EXPECT_TRUE(two.exact);
    EXPECT_NEAR(two.p, std::min(1.0, 2 * std::min(ref.le, ref.ge)), 1e-12);
    o.alternative = ls::Alternative::greater;
    EXPECT_NEAR(ls::mann_whitney_u(x, y, o).p, ref.ge, 1e-12);
    o.alternative = ls::Alternative::less;
    EXPECT_NEAR(ls::mann_whitney_u(x, y, o).p, ref.le, 1e-12);
  }
}

TEST(MannWhitney, TieCorrectedVarianceAndDegenerateInput) {
  // Pooled [1, 2, 2, 3]: one tie group of 2; var = n1 n2/12 ((N+1) - (8-2)/(4*3)) = 4/12 * 4.5 = 1.5.
  const std::vector<double> x = {1, 2}, y = {2, 3};
  ls::MannWhitneyOptions o;
  o.method = ls::MannWhitneyMethod::asymptotic;
  const auto r = ls::mann_whitney_u(x, y, o);
  EXPECT_NEAR(r.variance, 1.5, 1e-12);
  EXPECT_DOUBLE_EQ(r.u1, 0.5);
  // All equal: no information; p is 1 on both paths, never NaN.
  const std::vector<double> c = {3, 3, 3};
  EXPECT_DOUBLE_EQ(ls::mann_whitney_u(c, c).p, 1.0);
  EXPECT_DOUBLE_EQ(ls::mann_whitney_u(c, c, o).p, 1.0);
  EXPECT_THROW(ls::mann_whitney_u(std::vector<double>{}, c), std::invalid_argument);
  const std::vector<double> bad = {1.0, std::nan("")};
  EXPECT_THROW(ls::mann_whitney_u(bad, c), std::invalid_argument);
}

TEST(MannWhitney, SubsetSumDistributionCounts) {
  // Choosing 2 of ranks {1, 2, 3, 4}: sums 3, 4, 5, 5, 6, 7 over 6 subsets.
  const std::vector<std::uint32_t> s = {1, 2, 3, 4};
  const auto p = ls::subset_sum_distribution(s, 2);
  ASSERT_EQ(p.size(), 11u);
  EXPECT_NEAR(p[3], 1.0 / 6, 1e-15);
  EXPECT_NEAR(p[5], 2.0 / 6, 1e-15);
  EXPECT_NEAR(p[7], 1.0 / 6, 1e-15);
  EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-15);
  // Larger exact case stays normalised and symmetric (no ties: the null is symmetric about its mean).
  std::vector<double> x(30), y(30);
  for (int i = 0; i < 30; ++i) {
    x[i] = 2 * i;
    y[i] = 2 * i + 1;
  }
  const auto r = ls::mann_whitney_u(x, y);
  EXPECT_TRUE(r.exact);
  EXPECT_GT(r.p, 0.5);
  EXPECT_LE(r.p, 1.0);
}
