// The change-point detector on synthetic histories: a step is found at its commit with an
// interval that covers it, a lone spike and pure noise give nothing, and the online scan agrees.
#include "stats/changepoint.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

namespace ls = layerbench::stats;

namespace {

// Commits of `samples` samples each: run offset N(0, cv), within-run noise N(0, cv / 3).
std::vector<ls::CommitPoint> history(std::size_t n, double cv, std::size_t step_at, double step, std::uint64_t seed,
                                     std::size_t samples = 10) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  std::vector<ls::CommitPoint> out;
  std::vector<double> s(samples);
  for (std::size_t c = 0; c < n; ++c) {
    const double level = c >= step_at ? std::log1p(step) : 0.0;
    const double r = cv * z(rng);
    for (auto& v : s) v = 100 * std::exp(level + r + cv / 3 * z(rng));
    out.push_back(ls::commit_point(s));
  }
  return out;
}

}  // namespace

TEST(ChangePoint, CommitPointIsTheLogMedianWithItsStandardError) {
  const std::vector<double> s{1, 2, 4, 8, 16};
  const auto c = ls::commit_point(s);
  EXPECT_NEAR(c.y, std::log(4.0), 1e-12);
  // |ln s - ln 4| = 2 ln2, ln2, 0, ln2, 2 ln2: MAD = ln 2.
  EXPECT_NEAR(c.se, 1.2533141373155001 * 1.482602218505602 * std::log(2.0) / std::sqrt(5.0), 1e-12);
  EXPECT_EQ(ls::commit_point(std::vector<double>{3.0}).se, 0.0);
  EXPECT_THROW(ls::commit_point(std::vector<double>{1.0, -1.0}), std::invalid_argument);
  EXPECT_THROW(ls::commit_point(std::vector<double>{}), std::invalid_argument);
}

TEST(ChangePoint, FindsAThreePercentStepAtItsCommit) {
  int found = 0, covered = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto h = history(120, 0.01, 70, 0.03, seed);
    const auto cps = ls::detect_changes(h, {});
    ASSERT_EQ(cps.size(), 1u) << "seed " << seed;
    const auto& c = cps[0];
    found += c.index + 1 >= 70 && c.index <= 71;
    covered += c.interval.contains(0.03);
    EXPECT_GT(c.relative, 0.015);
    EXPECT_LT(c.p, 1e-6);
    EXPECT_LE(c.range_low, c.index);
    EXPECT_GE(c.range_high, c.index);
  }
  EXPECT_GE(found, 19);
  EXPECT_GE(covered, 17);  // a 95% interval: 19 of 20 expected
}

TEST(ChangePoint, NothingInNoiseNorInALoneSpike) {
  // 4000 commits of noise at 2% CV, each history with one commit 30% slow: the threshold is a
  // suspicion's (confirmation filters the rest), so a few in a thousand commits is the design.
  std::size_t changes = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    auto h = history(200, 0.02, 1000, 0.0, seed);
    h[100].y += std::log(1.3);
    for (const auto& c : ls::detect_changes(h, {})) {
      ++changes;
      EXPECT_FALSE(c.index >= 98 && c.index <= 102) << "seed " << seed << ": the spike became a change";
    }
  }
  EXPECT_LE(changes, 4u);
}

TEST(ChangePoint, MinimumMagnitudeHidesSmallSteps) {
  const auto h = history(120, 0.001, 60, 0.005, 3);
  EXPECT_EQ(ls::detect_changes(h, {}).size(), 0u);  // 0.5% < 1%
  ls::ChangePointOptions o;
  o.min_magnitude = 0.002;
  EXPECT_EQ(ls::detect_changes(h, o).size(), 1u);
}

TEST(ChangePoint, TwoStepsAreEstimatedApart) {
  auto a = history(80, 0.01, 40, 0.04, 11);
  const auto b = history(80, 0.01, 1000, 0.0, 12);
  for (const auto& p : b) a.push_back({p.y + std::log(1.04) + std::log(0.95), p.se});  // then -5%
  const auto cps = ls::detect_changes(a, {});
  ASSERT_EQ(cps.size(), 2u);
  EXPECT_NEAR(double(cps[0].index), 40, 1);
  EXPECT_NEAR(double(cps[1].index), 80, 1);
  EXPECT_NEAR(cps[0].relative, 0.04, 0.01);
  EXPECT_NEAR(cps[1].relative, -0.05, 0.01);
}

TEST(ChangePoint, OnlineScanSeesTheStepWithinTheWindow) {
  const auto h = history(100, 0.005, 60, 0.03, 5);
  const std::span<const ls::CommitPoint> all(h);
  std::optional<ls::StepEstimate> first;
  std::size_t at = 0;
  for (std::size_t n = 1; n <= h.size() && !first; ++n) {
    first = ls::detect_recent(all.first(n), 0, 24, {});
    at = n;
  }
  ASSERT_TRUE(first);
  EXPECT_NEAR(double(first->index), 60, 1);
  EXPECT_LE(at, 60u + 6);  // 6 sd of the noise: found a few commits after
}

TEST(ChangePoint, SingleSampleCommitsUseOneSigma) {
  std::mt19937_64 rng(9);
  std::normal_distribution<double> z(0, 0.01);
  std::vector<ls::CommitPoint> h;
  for (int c = 0; c < 100; ++c) h.push_back(ls::commit_point(std::vector<double>{std::exp((c >= 50 ? 0.05 : 0) + z(rng))}));
  const auto cps = ls::detect_changes(h, {});
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_NEAR(double(cps[0].index), 50, 1);
  EXPECT_NEAR(cps[0].sigma, 0.01, 0.004);
}

TEST(ChangePoint, OptionsAreChecked) {
  ls::ChangePointOptions o;
  o.min_post = 1;
  EXPECT_THROW(o.validate(), std::invalid_argument);
  o = {};
  o.confidence = 1.0;
  EXPECT_THROW(o.validate(), std::invalid_argument);
  o = {};
  o.min_magnitude = -0.1;
  EXPECT_THROW(o.validate(), std::invalid_argument);
}
