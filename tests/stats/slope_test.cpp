// The block-centred dose-response slope: recovers a known slope through large block effects,
// covers it with its interval, and flags a non-linear response.
#include "stats/slope.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace layerbench::stats {
namespace {

struct Design {
  std::vector<double> x, y;
  std::vector<std::size_t> block, level;
};

Design make(double slope, double curve, double noise, std::size_t blocks, std::uint64_t seed) {
  const std::vector<double> doses = {0, 10, 20, 40};
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> eps(0, noise), drift(0, 50);
  Design d;
  for (std::size_t b = 0; b < blocks; ++b) {
    const double offset = 1000 + drift(rng);  // a block effect far larger than the dose effect
    for (std::size_t l = 0; l < doses.size(); ++l) {
      const double x = doses[l];
      d.x.push_back(x);
      d.y.push_back(offset + slope * x + curve * x * x + eps(rng));
      d.block.push_back(b);
      d.level.push_back(l);
    }
  }
  return d;
}

TEST(BlockSlope, RecoversSlopeThroughBlockEffects) {
  const auto d = make(0.8, 0, 1.0, 20, 1);
  BlockSlopeOptions o;
  o.keep_resamples = true;
  const auto f = fit_block_slope(d.x, d.y, d.block, d.level, o);
  EXPECT_EQ(f.blocks, 20u);
  EXPECT_EQ(f.levels, 4u);
  EXPECT_NEAR(f.slope, 0.8, 0.03);
  EXPECT_TRUE(f.ci.contains(0.8));
  EXPECT_TRUE(f.t_ci.contains(0.8));
  EXPECT_LT(f.ci.high - f.ci.low, 0.1);  // the block effects (sd 50) are gone
  EXPECT_EQ(f.resampled.size(), o.resamples);
  EXPECT_GT(f.lack_of_fit_p, 0.001);
  ASSERT_EQ(f.level_residual.size(), 4u);
  EXPECT_LT(f.max_abs_residual, 2.0);
}

// The median of per-block slopes: the known slope through block effects, and unmoved by a few
// blocks disturbed inside (one observation of the block far off, as a preempted stack).
TEST(BlockSlope, MedianOfBlockSlopesResistsDisturbedBlocks) {
  auto d = make(0.8, 0, 1.0, 21, 3);
  EXPECT_NEAR(median_block_slope(d.x, d.y, d.block), 0.8, 0.05);
  for (std::size_t b : {2u, 7u, 11u}) d.y[b * 4 + 3] += 500;  // the top dose of three blocks
  EXPECT_NEAR(median_block_slope(d.x, d.y, d.block), 0.8, 0.08);
  EXPECT_GT(fit_block_slope(d.x, d.y, d.block, d.level).slope, 2.0);  // least squares is pulled away
  const std::vector<double> x = {1, 1}, y = {2, 3};
  const std::vector<std::size_t> b = {0, 1};
  EXPECT_TRUE(std::isnan(median_block_slope(x, y, b)));  // no spread within any block
}

// A what-if's few rounds (8 blocks): the t interval over blocks keeps its 95% level, with slopes
// that vary from block to block (a power-capped clock state per round) as well as with
// independent noise; the percentile bootstrap over the same blocks covers visibly less.
TEST(BlockSlope, IntervalOverFewBlocksKeepsItsLevel) {
  std::mt19937_64 rng(2026);
  std::normal_distribution<double> eps(0, 1.0), wobble(0, 0.02);
  BlockSlopeOptions o;
  o.resamples = 400;
  const int sims = 1000;
  int block_t = 0, boot = 0, within_t = 0;
  for (int i = 0; i < sims; ++i) {
    Design d;
    for (std::size_t b = 0; b < 8; ++b) {
      const double slope_b = 0.5 + wobble(rng);
      for (std::size_t l = 0; l < 4; ++l) {
        const double x = 8.0 * static_cast<double>(l);
        d.x.push_back(x);
        d.y.push_back(60 + slope_b * x + eps(rng));
        d.block.push_back(b);
        d.level.push_back(l);
      }
    }
    o.seed = static_cast<std::uint64_t>(i) + 1;
    const auto f = fit_block_slope(d.x, d.y, d.block, d.level, o);
    block_t += f.block_t_ci.contains(0.5);
    boot += f.ci.contains(0.5);
    within_t += f.t_ci.contains(0.5);
  }
  const double cover = double(block_t) / sims, cover_boot = double(boot) / sims;
  EXPECT_GT(cover, 0.93) << "t over blocks";
  EXPECT_LT(cover, 0.97) << "t over blocks";
  EXPECT_LT(cover_boot, cover - 0.02) << "bootstrap percentile over 8 blocks";
  EXPECT_LT(double(within_t) / sims, cover) << "within-block t ignores the blocks' own slopes";
}

// With the same doses in every block, the interval over blocks is the t interval of the blocks'
// own slopes.
TEST(BlockSlope, IntervalOverBlocksIsTheTIntervalOfBlockSlopes) {
  const auto d = make(0.8, 0, 1.0, 6, 5);
  const auto f = fit_block_slope(d.x, d.y, d.block, d.level);
  std::vector<double> slopes;
  for (std::size_t b = 0; b < 6; ++b) {
    double mx = 0, my = 0, sxy = 0, sxx = 0;
    for (std::size_t i = 4 * b; i < 4 * b + 4; ++i) {
      mx += d.x[i] / 4;
      my += d.y[i] / 4;
    }
    for (std::size_t i = 4 * b; i < 4 * b + 4; ++i) {
      sxy += (d.x[i] - mx) * (d.y[i] - my);
      sxx += (d.x[i] - mx) * (d.x[i] - mx);
    }
    slopes.push_back(sxy / sxx);
  }
  double m = 0, v = 0;
  for (double s : slopes) m += s / 6;
  for (double s : slopes) v += (s - m) * (s - m) / 5;
  EXPECT_NEAR(f.slope, m, 1e-12);
  EXPECT_NEAR(f.block_se, std::sqrt(v / 6), 1e-12);
  EXPECT_NEAR(f.block_t_ci.high - f.slope, 2.5705818366147395 * f.block_se, 1e-9);  // t(5) 97.5%
}

TEST(BlockSlope, ZeroSlopeExcludesOne) {
  const auto d = make(0.0, 0, 2.0, 12, 2);
  const auto f = fit_block_slope(d.x, d.y, d.block, d.level);
  EXPECT_TRUE(f.ci.contains(0.0));
  EXPECT_FALSE(f.ci.contains(1.0));
}

TEST(BlockSlope, CurvatureFailsLinearity) {
  const auto d = make(0.5, 0.02, 0.5, 12, 3);
  const auto f = fit_block_slope(d.x, d.y, d.block, d.level);
  EXPECT_LT(f.lack_of_fit_p, 1e-6);
  EXPECT_GT(f.max_abs_residual, 3.0);
}

TEST(BlockSlope, BadInput) {
  const std::vector<double> x = {0, 1}, y = {1, 2};
  const std::vector<std::size_t> one = {0, 0}, lv = {0, 1};
  EXPECT_THROW(fit_block_slope(x, y, one, lv), std::invalid_argument);  // one block
  const std::vector<double> flat = {1, 1, 1, 1}, y4 = {1, 2, 3, 4};
  const std::vector<std::size_t> b4 = {0, 0, 1, 1}, l4 = {0, 0, 0, 0};
  EXPECT_THROW(fit_block_slope(flat, y4, b4, l4), std::invalid_argument);  // no dose spread
}

TEST(BlockSlope, ProductAndMedianResamples) {
  const std::vector<double> a(1000, 2.0), b(1000, 3.0);
  const auto p = product_interval(a, b, 0.95);
  EXPECT_DOUBLE_EQ(p.low, 6.0);
  EXPECT_DOUBLE_EQ(p.high, 6.0);
  const std::vector<double> x = {1, 2, 3, 4, 100};
  const auto m = resampled_medians(x, 2000, 7);
  ASSERT_EQ(m.size(), 2000u);
  for (double v : m) EXPECT_TRUE(v >= 1 && v <= 100);
}

}  // namespace
}  // namespace layerbench::stats
