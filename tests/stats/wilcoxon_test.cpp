#include "stats/wilcoxon.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "stats/ranks.hpp"
#include "tests/stats/oracle_data.hpp"

namespace ls = layerbench::stats;
namespace oracle = layerbench::stats::oracle;
using ls::Alternative;

namespace {

ls::WilcoxonResult run(const std::vector<double>& d, Alternative alt = Alternative::two_sided,
                       bool continuity = false, ls::ZeroMethod zm = ls::ZeroMethod::wilcox) {
  ls::WilcoxonOptions o;
  o.alternative = alt;
  o.continuity = continuity;
  o.zero_method = zm;
  return ls::wilcoxon_signed_rank(d, o);
}

}  // namespace

TEST(Wilcoxon, CornExactTwoSided) {  // oracle 1
  const auto r = run(oracle::corn);
  EXPECT_DOUBLE_EQ(std::min(r.w_plus, r.w_minus), 24.0);
  EXPECT_DOUBLE_EQ(r.w_plus, 96.0);
  EXPECT_EQ(r.n_nonzero, 15u);
  ASSERT_TRUE(r.p_exact.has_value());
  EXPECT_DOUBLE_EQ(*r.p_exact, 169.0 / 4096.0);
}

TEST(Wilcoxon, CornExactGreater) {  // oracle 2
  const auto r = run(oracle::corn, Alternative::greater);
  EXPECT_DOUBLE_EQ(r.w_plus, 96.0);
  EXPECT_DOUBLE_EQ(*r.p_exact, 0.0206298828125);
}

TEST(Wilcoxon, CornNormal) {  // oracles 3 and 4
  const auto r = run(oracle::corn);
  EXPECT_DOUBLE_EQ(r.variance, 310.0);
  EXPECT_NEAR(r.z, 2.04466, 1e-5);
  EXPECT_NEAR(r.p_normal, 0.04088813291185591, 1e-14);
  const auto cc = run(oracle::corn, Alternative::two_sided, true);
  EXPECT_NEAR(cc.p_normal, 0.043772, 1e-6);
}

TEST(Wilcoxon, TiesExactGreater) {  // oracle 5
  const auto r = run({-0.025, 0.05, 0.05, -0.05}, Alternative::greater);
  EXPECT_DOUBLE_EQ(r.w_plus, 6.0);
  EXPECT_DOUBLE_EQ(*r.p_exact, 0.5);
}

TEST(Wilcoxon, HollanderWolfe) {  // oracles 6 and 7
  const auto exact = run(oracle::hw_d, Alternative::greater);
  EXPECT_DOUBLE_EQ(exact.w_plus, 40.0);
  EXPECT_DOUBLE_EQ(*exact.p_exact, 10.0 / 512.0);
  EXPECT_NEAR(exact.z, 2.0732, 1e-4);
  EXPECT_NEAR(exact.p_normal, 0.019076, 1e-6);
  // The same from the raw x - y once round-off is removed before ranking.
  std::vector<double> raw(oracle::hw_x.size());
  for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = oracle::hw_x[i] - oracle::hw_y[i];
  const auto from_raw = run(ls::round_for_ranking(raw, 10), Alternative::greater);
  EXPECT_DOUBLE_EQ(*from_raw.p_exact, 10.0 / 512.0);
}

TEST(Wilcoxon, SleepNormalWithContinuityAndExact) {  // oracles 13 and 13b
  const auto r = run(oracle::sleep_d, Alternative::two_sided, true);
  EXPECT_DOUBLE_EQ(r.w_plus, 0.0);
  EXPECT_EQ(r.n_nonzero, 9u);
  EXPECT_EQ(r.n_zero, 1u);
  EXPECT_DOUBLE_EQ(r.variance, 71.125);
  EXPECT_NEAR(r.p_normal, 0.009091, 1e-6);
  EXPECT_DOUBLE_EQ(*r.p_exact, 2.0 / 512.0);
  // From the raw groups: round-off would split the -1.3 tie without rounding.
  std::vector<double> raw(oracle::sleep_g1.size());
  for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = oracle::sleep_g1[i] - oracle::sleep_g2[i];
  EXPECT_DOUBLE_EQ(run(ls::round_for_ranking(raw, 10), Alternative::two_sided, true).variance, 71.125);
}

TEST(Wilcoxon, SignedRankCountsN5) {  // oracle 14
  const std::vector<std::uint64_t> expected{1, 1, 1, 2, 2, 3, 3, 3, 3, 3, 3, 2, 2, 1, 1, 1};
  const auto c = ls::signed_rank_counts(5);
  EXPECT_EQ(c, expected);
  EXPECT_EQ(std::accumulate(c.begin(), c.end(), std::uint64_t{0}), 32u);
  // The shift algorithm with scores 1..5 gives the same distribution.
  const std::vector<std::uint32_t> scores{1, 2, 3, 4, 5};
  const auto h = ls::shift_distribution(scores);
  for (std::size_t s = 0; s < c.size(); ++s) EXPECT_DOUBLE_EQ(h[s] * 32, static_cast<double>(c[s]));
}

TEST(Wilcoxon, ZeroMethodsMatchScipyNormal) {
  const std::vector<double> d{0, 0, 1, 2, -1, 3, 2, 4, 5, -2, 3, 6};
  using ZM = ls::ZeroMethod;
  // scipy 1.10 wilcoxon(d, method='approx', zero_method=..., correction=...)
  EXPECT_NEAR(run(d, Alternative::two_sided, false, ZM::wilcox).p_normal, 0.024370603757179417, 1e-14);
  EXPECT_NEAR(run(d, Alternative::two_sided, true, ZM::wilcox).p_normal, 0.027801830120072507, 1e-14);
  EXPECT_NEAR(run(d, Alternative::greater, false, ZM::wilcox).p_normal, 0.012185301878589709, 1e-14);
  EXPECT_NEAR(run(d, Alternative::two_sided, false, ZM::pratt).p_normal, 0.027095190389446938, 1e-14);
  EXPECT_NEAR(run(d, Alternative::two_sided, true, ZM::pratt).p_normal, 0.02995560799799299, 1e-14);
  EXPECT_NEAR(run(d, Alternative::greater, false, ZM::pratt).p_normal, 0.013547595194723469, 1e-14);
  EXPECT_NEAR(run(d, Alternative::two_sided, false, ZM::zsplit).p_normal, 0.027634358798249086, 1e-14);
  EXPECT_NEAR(run(d, Alternative::two_sided, true, ZM::zsplit).p_normal, 0.03053278915670683, 1e-14);
  EXPECT_NEAR(run(d, Alternative::greater, false, ZM::zsplit).p_normal, 0.013817179399124543, 1e-14);
  EXPECT_DOUBLE_EQ(run(d, Alternative::greater, false, ZM::wilcox).w_plus, 49.5);
  EXPECT_DOUBLE_EQ(run(d, Alternative::greater, false, ZM::pratt).w_plus, 65.5);
  EXPECT_DOUBLE_EQ(run(d, Alternative::greater, false, ZM::zsplit).w_plus, 67.0);
  EXPECT_DOUBLE_EQ(run(d, Alternative::greater, false, ZM::zsplit).w_minus, 11.0);
}

namespace {

// Exhaustive sign-flip permutation test of R+ (ranks of |d| over the ranked set, as the method
// defines them): the reference the shift algorithm must equal.
ls::TailProbabilities brute_force(const std::vector<double>& d, ls::ZeroMethod zm) {
  std::vector<double> kept;
  for (double v : d) {
    if (v != 0 || zm != ls::ZeroMethod::wilcox) kept.push_back(v);
  }
  std::vector<double> mags;
  for (double v : kept) mags.push_back(std::abs(v));
  const auto ranks = ls::mid_ranks(mags);
  double observed = 0;
  std::vector<double> nonzero_ranks;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (kept[i] > 0) observed += ranks[i];
    if (kept[i] != 0) nonzero_ranks.push_back(ranks[i]);
  }
  const std::size_t m = nonzero_ranks.size();
  std::size_t le = 0, ge = 0;
  for (std::uint32_t mask = 0; mask < (1u << m); ++mask) {
    double s = 0;
    for (std::size_t i = 0; i < m; ++i) {
      if (mask & (1u << i)) s += nonzero_ranks[i];
    }
    le += s <= observed + 1e-9;
    ge += s >= observed - 1e-9;
  }
  const double total = std::ldexp(1.0, static_cast<int>(m));
  ls::TailProbabilities t;
  t.less = static_cast<double>(le) / total;
  t.greater = static_cast<double>(ge) / total;
  t.two_sided = std::min(1.0, 2 * std::min(t.less, t.greater));
  return t;
}

}  // namespace

TEST(Wilcoxon, ExactWithTiesEqualsBruteForceEnumeration) {
  const std::vector<std::vector<double>> cases{
      {1, -1, 2, 2, -2, 3, 3, 3, -4, 5, 5, 6, -6, 7, 8, 8},       // 16, many ties
      {0.5, 0.5, -0.5, 1.5, 1.5, 1.5, 1.5, -2, 3, 3},             // heavy ties
      {0, 0, 1, -1, 2, 2, 3, -3, 3, 4, 5, 0, 6, -6, 7},           // zeros and ties
      {-0.025, 0.05, 0.05, -0.05},
      {6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67},    // no ties
  };
  for (const auto& d : cases) {
    for (auto zm : {ls::ZeroMethod::wilcox, ls::ZeroMethod::pratt, ls::ZeroMethod::zsplit}) {
      const auto bf = brute_force(d, zm);
      EXPECT_NEAR(*run(d, Alternative::less, false, zm).p_exact, bf.less, 1e-15);
      EXPECT_NEAR(*run(d, Alternative::greater, false, zm).p_exact, bf.greater, 1e-15);
      EXPECT_NEAR(*run(d, Alternative::two_sided, false, zm).p_exact, bf.two_sided, 1e-15);
    }
  }
}

TEST(Wilcoxon, ExactAndNormalConvergeForLargeN) {
  std::vector<double> d;
  std::uint64_t state = 12345;
  for (int i = 0; i < 200; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = static_cast<double>(state >> 11) / 9007199254740992.0;
    d.push_back(std::round((u - 0.42) * 1000) / 10);  // shifted, with ties at 0.1 resolution
  }
  const auto r = run(d);
  ASSERT_TRUE(r.p_exact.has_value());
  EXPECT_LT(*r.p_exact, 0.05);
  EXPECT_NEAR(*r.p_exact, r.p_normal, 0.1 * r.p_normal);
  // A central statistic (p near 0.5) agrees much more closely.
  std::vector<double> centred;
  for (double v : d) centred.push_back(v - 8.1);
  const auto mid = run(centred);
  EXPECT_GT(*mid.p_exact, 0.2);
  EXPECT_NEAR(*mid.p_exact, mid.p_normal, 0.01);
  const auto cc = run(d, Alternative::two_sided, true);
  EXPECT_NEAR(*cc.p_exact, cc.p_normal, 0.1 * cc.p_normal);
}

TEST(Wilcoxon, SmallTailIsSummedDirectlyAndClipped) {
  // All 60 deltas positive: two-sided p = 2 / 2^60, far below 1 - (large tail) resolution.
  std::vector<double> d(60);
  std::iota(d.begin(), d.end(), 1.0);
  const auto r = run(d);
  EXPECT_NEAR(*r.p_exact, std::ldexp(1.0, -59), 1e-30);
  EXPECT_GT(*r.p_exact, 0.0);
  // Symmetric data: p must be clipped at 1, not 1 + centre mass.
  EXPECT_DOUBLE_EQ(*run({1, -1, 2, -2, 3, -3}).p_exact, 1.0);
  // Beyond 200 non-zero deltas the exact p is not computed.
  std::vector<double> big(201, 1.0);
  EXPECT_FALSE(run(big).p_exact.has_value());
}

TEST(Wilcoxon, SwappingSignsFlipsZAndKeepsP) {
  std::vector<double> neg;
  for (double v : oracle::corn) neg.push_back(-v);
  const auto a = run(oracle::corn);
  const auto b = run(neg);
  EXPECT_DOUBLE_EQ(a.w_plus, b.w_minus);
  EXPECT_DOUBLE_EQ(a.z, -b.z);
  EXPECT_DOUBLE_EQ(*a.p_exact, *b.p_exact);
  EXPECT_DOUBLE_EQ(a.p_normal, b.p_normal);
  EXPECT_DOUBLE_EQ(*run(oracle::corn, Alternative::greater).p_exact, *run(neg, Alternative::less).p_exact);
}

TEST(Wilcoxon, ParsesZeroMethods) {
  EXPECT_EQ(ls::parse_zero_method("zsplit"), ls::ZeroMethod::zsplit);
  EXPECT_THROW(ls::parse_zero_method("drop"), std::invalid_argument);
}
