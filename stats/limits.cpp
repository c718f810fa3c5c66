#include "stats/limits.hpp"

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

#include <cmath>
#include <stdexcept>

namespace layerbench::stats {

namespace {
void check_boundary(double boundary) {
  if (!(boundary > 0.0 && boundary < 1.0)) throw std::invalid_argument("boundary must be in (0, 1)");
}
}  // namespace

double z_score_upper_limit(double mean, double sd, double boundary) {
  check_boundary(boundary);
  return mean + boost::math::quantile(boost::math::normal(), boundary) * sd;
}

double t_test_upper_limit(double mean, double sd, std::size_t n, double boundary) {
  check_boundary(boundary);
  if (n < 2) throw std::invalid_argument("a t limit needs a history of at least 2 values");
  const boost::math::students_t t(static_cast<double>(n - 1));
  // Prediction interval for one new value: the history's mean is itself estimated.
  return mean + boost::math::quantile(t, boundary) * sd * std::sqrt(1.0 + 1.0 / static_cast<double>(n));
}

}  // namespace layerbench::stats
