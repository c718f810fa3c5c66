#pragma once
// Parametric and counting tests on paired deltas: one-sample t and the exact binomial/sign test.
#include <cstddef>
#include <span>

#include "stats/common.hpp"

namespace layerbench::stats {

struct TTestResult {
  double mean = nan_value;
  double se = nan_value;
  double t = nan_value;  // mean / se; +-inf when se == 0 and mean != 0, NaN when both are 0
  double df = nan_value;
  Alternative alternative = Alternative::two_sided;
  double p = nan_value;
  double confidence = 0.95;
  Interval ci;  // one-sided alternatives give an infinite end
};
// One-sample t test of the mean against mu (paired t when x are the deltas); n >= 2.
TTestResult t_test(std::span<const double> x, double confidence = 0.95,
                   Alternative alternative = Alternative::two_sided, double mu = 0.0);

struct WelchResult {
  double difference = nan_value;  // mean(x) - mean(y)
  double t = nan_value;
  double df = nan_value;  // Welch-Satterthwaite
  double p = nan_value;   // two-sided
};
// Unpaired Welch t test of mean(x) - mean(y) (scipy ttest_ind(equal_var=False)); each size >= 2.
WelchResult welch_t_test(std::span<const double> x, std::span<const double> y);

struct BinomialResult {
  std::size_t k = 0;
  std::size_t n = 0;
  double p_null = 0.5;
  Alternative alternative = Alternative::two_sided;
  double p = nan_value;  // two-sided by the minlike rule with relative fuzz 1e-7
  Interval ci;           // Clopper-Pearson for the success probability
};
BinomialResult binomial_test(std::size_t k, std::size_t n, double p_null = 0.5,
                             Alternative alternative = Alternative::two_sided,
                             double confidence = 0.95);

struct SignTestResult {
  std::size_t positive = 0;  // deltas > 0
  std::size_t negative = 0;  // deltas < 0
  std::size_t zeros = 0;     // dropped
  std::size_t n = 0;         // positive + negative
  double p = nan_value;      // exact binomial p for the requested alternative (1 when n == 0)
};
SignTestResult sign_test(std::span<const double> d, Alternative alternative = Alternative::two_sided);

}  // namespace layerbench::stats
