#pragma once
// Checking a prediction against a measured paired delta. The prediction is X with its own
// uncertainty E, the half-width of its interval at the analysis' confidence level (0 = exact).
//   difference = measured - X, its interval = the measured mean's interval shifted by X with E
//     added in quadrature to each side (normal propagation of two independent errors);
//   ratio = measured / X, its interval by Fieller's theorem (t quantile; E as a normal error),
//     unbounded when X is not clearly away from zero;
//   verdict: the prediction holds when the difference's interval contains 0, fails otherwise.
#include <string>

#include "stats/common.hpp"

namespace layerbench::stats {

struct PredictionCheck {
  double predicted = nan_value;
  double half_width = 0;   // E
  double confidence = 0.95;
  double measured = nan_value;  // mean delta
  double difference = nan_value;
  Interval difference_ci;
  double ratio = nan_value;
  Interval ratio_ci;       // +-inf ends when Fieller's set is not a bounded interval
  bool ratio_bounded = false;
  bool holds = false;
  // One sentence: the verdict, and when the measured delta's own interval contains 0 a caution
  // that a prediction of no effect would hold as well.
  std::string verdict;
};

// `mean_ci` is the measured mean's interval at `confidence` (e.g. the bootstrap percentile over
// pairs); `se` and `df` its standard error and degrees of freedom (Fieller).
PredictionCheck check_prediction(double mean, Interval mean_ci, double se, double df, double predicted,
                                 double half_width, double confidence);

// Fieller's interval for mu_a / mu_b from independent estimates a (se sa) and b (se sb), with
// the critical value q. Sets `bounded` false (and returns +-inf) when the set is unbounded.
Interval fieller_ratio(double a, double sa, double b, double sb, double q, bool* bounded);

}  // namespace layerbench::stats
