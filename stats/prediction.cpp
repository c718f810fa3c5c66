#include "stats/prediction.hpp"

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>

namespace layerbench::stats {

Interval fieller_ratio(double a, double sa, double b, double sb, double q, bool* bounded) {
  // {theta : (a - theta b)^2 <= q^2 (sa^2 + theta^2 sb^2)}: A theta^2 - 2 a b theta + C <= 0.
  const double inf = std::numeric_limits<double>::infinity();
  const double A = b * b - q * q * sb * sb;
  const double C = a * a - q * q * sa * sa;
  const double disc = a * a * b * b - A * C;
  if (!(A > 0) || !(disc >= 0)) {
    if (bounded) *bounded = false;
    return {-inf, inf};
  }
  if (bounded) *bounded = true;
  const double r = std::sqrt(disc);
  return {(a * b - r) / A, (a * b + r) / A};
}

PredictionCheck check_prediction(double mean, Interval mean_ci, double se, double df, double predicted,
                                 double half_width, double confidence) {
  if (!std::isfinite(predicted)) throw std::invalid_argument("the prediction must be finite");
  if (!(half_width >= 0) || !std::isfinite(half_width)) {
    throw std::invalid_argument("the prediction's uncertainty must be finite and >= 0");
  }
  PredictionCheck c;
  c.predicted = predicted;
  c.half_width = half_width;
  c.confidence = confidence;
  c.measured = mean;
  c.difference = mean - predicted;
  const double lo = mean - mean_ci.low, hi = mean_ci.high - mean;  // the measured interval's sides
  c.difference_ci = {c.difference - std::hypot(lo, half_width), c.difference + std::hypot(hi, half_width)};

  const double z = boost::math::quantile(boost::math::normal(), 0.5 + confidence / 2);
  const double q = df > 0 ? boost::math::quantile(boost::math::students_t(df), 0.5 + confidence / 2) : z;
  const double sp = half_width / z;  // the prediction's standard error
  c.ratio = predicted != 0 ? mean / predicted : nan_value;
  c.ratio_ci = fieller_ratio(mean, se, predicted, sp, q, &c.ratio_bounded);

  c.holds = c.difference_ci.contains(0.0);
  const int level = static_cast<int>(std::lround(100 * confidence));
  c.verdict = fmt::format("prediction {}: measured - predicted = {:+.4g}, {}% CI [{:+.4g}, {:+.4g}] {} 0",
                          c.holds ? "holds" : "fails", c.difference, level, c.difference_ci.low,
                          c.difference_ci.high, c.holds ? "contains" : "excludes");
  // A prediction that holds only because the study cannot see the effect at all: a prediction
  // of no effect would hold as well.
  if (c.holds && predicted != 0 && mean_ci.contains(0.0)) {
    c.verdict += " (the measured delta's CI also contains 0: a prediction of no effect would hold too)";
  }
  return c;
}

}  // namespace layerbench::stats
