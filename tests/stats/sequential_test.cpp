// The scale-invariant normal-mixture confidence sequence: the closed form against the defining
// integrals, the interval against the martingale, coverage at every n by simulation, and the stop rule.
#include <gtest/gtest.h>

#include <boost/math/quadrature/gauss_kronrod.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "stats/sequential.hpp"

namespace ls = layerbench::stats;

namespace {

// M_n(0) from its definition: the likelihood ratio of the scale-invariant reduction,
// int u^(n-1) exp(-sum(u x - theta)^2 / 2) du / int u^(n-1) exp(-u^2 sum x^2 / 2) du,
// mixed over theta ~ N(0, tau^2), by numerical quadrature.
double mixture_by_quadrature(const std::vector<double>& x, double tau) {
  using boost::math::quadrature::gauss_kronrod;
  const double n = static_cast<double>(x.size());
  double s1 = 0, s2 = 0;
  for (double v : x) {
    s1 += v;
    s2 += v * v;
  }
  const double scale = std::sqrt(n / s2);  // the ratio is scale-free: put the u mass near 1
  s1 *= scale;
  s2 *= scale * scale;
  auto log_u_term = [&](double u, double theta) {
    return (n - 1) * std::log(u) - 0.5 * (u * u * s2 - 2 * u * theta * s1 + n * theta * theta);
  };
  const double offset = log_u_term(1.0, 0.0);
  auto u_integral = [&](double theta) {
    auto f = [&](double u) { return u <= 0 ? 0.0 : std::exp(log_u_term(u, theta) - offset); };
    return gauss_kronrod<double, 61>::integrate(f, 0.0, std::numeric_limits<double>::infinity(), 15, 1e-12);
  };
  const double denominator = u_integral(0.0);
  auto prior = [&](double theta) {
    return std::exp(-0.5 * theta * theta / (tau * tau)) / (tau * std::sqrt(2 * M_PI)) * u_integral(theta);
  };
  const double numerator = gauss_kronrod<double, 61>::integrate(prior, -12 * tau, 12 * tau, 15, 1e-12);
  return numerator / denominator;
}

double log_m_at(const std::vector<double>& x, double mu0, double tau) {
  double s1 = 0, s2 = 0;
  for (double v : x) {
    s1 += v - mu0;
    s2 += (v - mu0) * (v - mu0);
  }
  return ls::log_mixture_martingale(x.size(), s1, s2, tau);
}

}  // namespace

TEST(Sequential, TauForPairsMatchesTheNormalMixtureOptimum) {
  // rho^2 = (-2 log a + log(-2 log a + 1)) / m; at a = 0.05, m = 10: (5.99146 + 1.94469) / 10.
  EXPECT_NEAR(ls::tau_for_pairs(10, 0.05), std::sqrt((5.991464547107979 + 1.9446900546295833) / 10), 1e-12);
  EXPECT_NEAR(ls::tau_for_pairs(1, 0.01), std::sqrt(9.210340371976182 + 2.3234009687390422), 1e-12);
  EXPECT_THROW(ls::tau_for_pairs(0.5, 0.05), std::invalid_argument);
  EXPECT_THROW(ls::tau_for_pairs(10, 1.0), std::invalid_argument);
}

TEST(Sequential, ClosedFormEqualsTheDefiningIntegrals) {
  const std::vector<std::vector<double>> data{
      {0.3, -0.1, 0.45},
      {1.2, 0.8, 1.1, 0.95, 1.3, 0.7},
      {-0.02, 0.01, 0.03, -0.04, 0.0, 0.02, 0.05, -0.01, 0.015, 0.03},
  };
  for (double tau : {0.3, 1.0, 2.5}) {
    for (const auto& x : data) {
      const double closed = std::exp(log_m_at(x, 0.0, tau));
      EXPECT_NEAR(closed, mixture_by_quadrature(x, tau), 1e-7 * std::max(1.0, closed)) << "n=" << x.size();
    }
  }
  // One delta carries no scale-free evidence; neither does an empty study.
  EXPECT_DOUBLE_EQ(ls::log_mixture_martingale(1, 0.7, 0.49, 1.0), 0.0);
  EXPECT_DOUBLE_EQ(ls::log_mixture_martingale(0, 0, 0, 1.0), 0.0);
}

TEST(Sequential, IntervalEndsAreWhereTheMartingaleReachesOneOverAlpha) {
  const std::vector<double> x{1.2, 0.8, 1.1, 0.95, 1.3, 0.7, 1.05, 0.9};
  double mean = 0;
  for (double v : x) mean += v / 8;
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  const double sd = std::sqrt(ss / 7);
  for (double alpha : {0.05, 0.01}) {
    const double tau = ls::tau_for_pairs(6, alpha);
    const auto ci = ls::confidence_sequence(x.size(), mean, sd, alpha, tau);
    ASSERT_TRUE(std::isfinite(ci.low) && std::isfinite(ci.high));
    EXPECT_NEAR(mean - ci.low, ci.high - mean, 1e-12);
    EXPECT_NEAR(log_m_at(x, ci.low, tau), -std::log(alpha), 1e-9);
    EXPECT_NEAR(log_m_at(x, ci.high, tau), -std::log(alpha), 1e-9);
    EXPECT_LT(log_m_at(x, mean, tau), -std::log(alpha));
    // Wider than the fixed-n t interval at the same level: the price of looking after every pair.
    EXPECT_GT(ci.high - mean, 2.3646 * sd / std::sqrt(8.0));  // t_{0.975, 7} = 2.3646
  }
}

TEST(Sequential, DegenerateData) {
  const double tau = 1.0;
  EXPECT_TRUE(std::isinf(ls::confidence_sequence(1, 0.5, 0.0, 0.05, tau).low));
  // Identical deltas: the point once (1 + n tau^2)^((n-1)/2) >= 1/alpha (n = 5 at tau = 1: 36 >= 20;
  // n = 4 gives 11.2), else everything.
  EXPECT_TRUE(std::isinf(ls::confidence_sequence(4, 0.5, 0.0, 0.05, tau).low));
  const auto point = ls::confidence_sequence(5, 0.5, 0.0, 0.05, tau);
  EXPECT_DOUBLE_EQ(point.low, 0.5);
  EXPECT_DOUBLE_EQ(point.high, 0.5);
  EXPECT_NEAR(ls::log_mixture_martingale(3, 1.5, 0.75, tau), std::log(4.0), 1e-12);  // (1 + 3)^((3 - 1) / 2)
  EXPECT_DOUBLE_EQ(ls::log_mixture_martingale(3, 0.0, 0.0, tau), 0.0);
  EXPECT_THROW(ls::confidence_sequence(5, 0, 1, 0.0, tau), std::invalid_argument);
  EXPECT_THROW(ls::confidence_sequence(5, 0, 1, 0.05, 0.0), std::invalid_argument);
}

TEST(Sequential, CoversTheTrueMeanAtEveryPairSimultaneously) {
  // 4000 Gaussian streams of 300 deltas with a non-zero mean: the fraction whose interval ever
  // misses the mean must be at most alpha (plus 3 binomial standard errors of the estimate).
  std::mt19937_64 rng(20261201);
  for (double alpha : {0.05, 0.10}) {
    const int streams = 4000;
    int missed = 0;
    for (int s = 0; s < streams; ++s) {
      std::normal_distribution<double> noise(0.7, 2.0);
      ls::ConfidenceSequence cs(alpha, ls::tau_for_pairs(10, alpha));
      for (int i = 0; i < 300; ++i) {
        cs.add(noise(rng));
        if (!cs.interval().contains(0.7)) {
          ++missed;
          break;
        }
      }
    }
    const double rate = static_cast<double>(missed) / streams;
    EXPECT_LE(rate, alpha + 3 * std::sqrt(alpha * (1 - alpha) / streams)) << "alpha=" << alpha;
    EXPECT_GT(missed, 0);  // not vacuous: the sequence is tight enough to miss now and then
  }
}

TEST(Sequential, RunningStateMatchesTheBatchFormula) {
  ls::ConfidenceSequence cs(0.05, 1.5);
  const std::vector<double> x{3.0, 1.0, 4.0, 1.0, 5.0};
  for (double v : x) cs.add(v);
  EXPECT_DOUBLE_EQ(cs.mean(), 2.8);
  EXPECT_NEAR(cs.sd(), std::sqrt(3.2), 1e-12);
  const auto a = cs.interval();
  const auto b = ls::confidence_sequence(5, 2.8, std::sqrt(3.2), 0.05, 1.5);
  ASSERT_TRUE(std::isfinite(b.low));
  EXPECT_NEAR(a.low, b.low, 1e-12);
  EXPECT_NEAR(a.high, b.high, 1e-12);
  EXPECT_THROW(cs.add(std::nan("")), std::invalid_argument);
}

TEST(Sequential, StopRuleFiresAtTheFirstPairAndIgnoresLaterOnes) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, 0.01);
  std::vector<double> base, faster, same;
  for (int i = 0; i < 200; ++i) {
    base.push_back(1.0 + noise(rng));
    faster.push_back(0.97 + noise(rng));
    same.push_back(1.0 + noise(rng));
  }
  ls::SequentialDesign d;
  d.alpha = 0.05;
  d.max_pairs = 150;
  d.equivalence = 0.05;  // 5% of the base mean
  const auto effect = ls::sequential_decision(base, faster, d);
  EXPECT_EQ(effect.stop, ls::SequentialStop::effect);
  EXPECT_LT(effect.interval.high, 0.0);  // candidate - base < 0: the candidate is lower
  EXPECT_LT(effect.pairs, 20u);
  // The same prefix gives the same stop: what a resumed study relies on.
  const std::span<const double> b(base), f(faster);
  const auto prefix = ls::sequential_decision(b.first(effect.pairs), f.first(effect.pairs), d);
  EXPECT_EQ(prefix.stop, effect.stop);
  EXPECT_EQ(prefix.pairs, effect.pairs);
  EXPECT_DOUBLE_EQ(prefix.interval.low, effect.interval.low);
  const auto shorter = ls::sequential_decision(b.first(effect.pairs - 1), f.first(effect.pairs - 1), d);
  EXPECT_EQ(shorter.stop, ls::SequentialStop::running);

  const auto eq = ls::sequential_decision(base, same, d);
  EXPECT_EQ(eq.stop, ls::SequentialStop::equivalence);
  EXPECT_GT(eq.interval.low, -eq.margin);
  EXPECT_LT(eq.interval.high, eq.margin);
  EXPECT_NEAR(eq.margin, 0.05 * eq.base_mean, 1e-15);

  d.equivalence = 0;  // no equivalence stop: an A/A study runs to the cap unless it errs
  d.max_pairs = 30;
  const auto capped = ls::sequential_decision(base, same, d);
  EXPECT_EQ(capped.stop, ls::SequentialStop::max_pairs);
  EXPECT_EQ(capped.pairs, 30u);

  d.equivalence = 0.001;  // absolute margin, in the metric's unit
  d.equivalence_relative = false;
  d.max_pairs = 0;
  const auto absolute = ls::sequential_decision(base, same, d);
  EXPECT_NE(absolute.stop, ls::SequentialStop::effect);
  EXPECT_DOUBLE_EQ(absolute.margin, 0.001);

  // An effect margin (a gate's threshold): the stop waits until the interval is wholly beyond it.
  ls::SequentialDesign gate;
  gate.effect_margin = 0.02;  // 2% of the base mean; the true effect is 3%
  gate.max_pairs = 200;
  const auto relevant = ls::sequential_decision(base, faster, gate);
  EXPECT_EQ(relevant.stop, ls::SequentialStop::effect);
  EXPECT_GE(relevant.pairs, effect.pairs);
  EXPECT_LT(relevant.interval.high, -relevant.effect_margin);
  EXPECT_NEAR(relevant.effect_margin, 0.02 * relevant.base_mean, 1e-15);

  EXPECT_THROW(ls::sequential_decision(b.first(3), f.first(4), d), std::invalid_argument);
  EXPECT_EQ(ls::parse_sequential_stop("equivalence"), ls::SequentialStop::equivalence);
  EXPECT_THROW(ls::parse_sequential_stop("maybe"), std::invalid_argument);
  EXPECT_NE(ls::sequential_summary(effect).find("effect"), std::string::npos);
}
