// Checking a prediction against a measured delta: Fieller's ratio interval, the difference's
// interval with the prediction's own uncertainty, the verdict.
#include "stats/paired.hpp"
#include "stats/prediction.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace layerbench::stats {
namespace {

TEST(Fieller, ExactDenominatorIsTheScaledInterval) {
  bool bounded = false;
  const auto ci = fieller_ratio(2.0, 0.5, 4.0, 0.0, 1.96, &bounded);
  ASSERT_TRUE(bounded);
  EXPECT_NEAR(ci.low, (2.0 - 1.96 * 0.5) / 4.0, 1e-12);
  EXPECT_NEAR(ci.high, (2.0 + 1.96 * 0.5) / 4.0, 1e-12);
}

TEST(Fieller, BoundsSolveTheDefiningEquation) {
  const double a = 1.3, sa = 0.2, b = 2.1, sb = 0.4, q = 2.2;
  bool bounded = false;
  const auto ci = fieller_ratio(a, sa, b, sb, q, &bounded);
  ASSERT_TRUE(bounded);
  for (double th : {ci.low, ci.high}) {
    EXPECT_NEAR(std::pow(a - th * b, 2), q * q * (sa * sa + th * th * sb * sb), 1e-10);
  }
  EXPECT_LT(ci.low, a / b);
  EXPECT_GT(ci.high, a / b);
  // Uncertainty in the denominator widens the interval, and asymmetrically (upwards).
  const auto exact = fieller_ratio(a, sa, b, 0.0, q, &bounded);
  EXPECT_LT(ci.low, exact.low);
  EXPECT_GT(ci.high - a / b, a / b - ci.low);
}

TEST(Fieller, DenominatorNotAwayFromZeroIsUnbounded) {
  bool bounded = true;
  const auto ci = fieller_ratio(1.0, 0.1, 0.2, 0.15, 1.96, &bounded);
  EXPECT_FALSE(bounded);
  EXPECT_TRUE(std::isinf(ci.low) && std::isinf(ci.high));
}

TEST(PredictionCheck, HoldsAndFails) {
  // measured 0.077 with CI [-0.05, 0.21] (the one-GPU metadata study), against two predictions.
  const auto near = check_prediction(0.077, {-0.05, 0.21}, 0.065, 100, 0.05, 0.02, 0.95);
  EXPECT_TRUE(near.holds);
  EXPECT_NEAR(near.difference, 0.027, 1e-12);
  EXPECT_NEAR(near.difference_ci.low, 0.027 - std::hypot(0.127, 0.02), 1e-12);
  EXPECT_NEAR(near.difference_ci.high, 0.027 + std::hypot(0.133, 0.02), 1e-12);
  EXPECT_NE(near.verdict.find("holds"), std::string::npos);
  EXPECT_NE(near.verdict.find("no effect would hold too"), std::string::npos);  // [-0.05, 0.21] contains 0
  const auto far = check_prediction(0.077, {-0.05, 0.21}, 0.065, 100, 0.69, 0.0, 0.95);
  EXPECT_FALSE(far.holds);
  EXPECT_NE(far.verdict.find("fails"), std::string::npos);
  ASSERT_TRUE(far.ratio_bounded);
  EXPECT_NEAR(far.ratio, 0.077 / 0.69, 1e-12);
  EXPECT_TRUE(far.ratio_ci.contains(far.ratio));
  EXPECT_LT(far.ratio_ci.high, 1.0);
  EXPECT_THROW(check_prediction(1, {0, 2}, 0.5, 10, 1, -1, 0.95), std::invalid_argument);
}

TEST(PredictionCheck, PairedAnalysisCarriesIt) {
  std::vector<double> base, cand;
  for (int i = 0; i < 40; ++i) {
    base.push_back(10.0 + 0.01 * (i % 7));
    cand.push_back(9.0 + 0.013 * (i % 5));
  }
  PairedOptions o;
  o.resamples = 5000;
  o.predicted = -1.0;  // candidate - base: the candidate is ~1 lower
  o.predicted_half_width = 0.05;
  const auto a = analyze_paired(base, cand, o);
  ASSERT_TRUE(a.predicted);
  const auto& c = a.predicted->check;
  EXPECT_NEAR(c.measured, a.delta.mean, 1e-12);
  EXPECT_TRUE(c.holds);  // the mean delta is ~-1.004
  EXPECT_EQ(c.verdict.find("no effect"), std::string::npos);  // and clearly away from 0
  EXPECT_DOUBLE_EQ(c.half_width, 0.05);
  EXPECT_TRUE(c.ratio_bounded);
  EXPECT_TRUE(c.ratio_ci.contains(1.0));
}

}  // namespace
}  // namespace layerbench::stats
