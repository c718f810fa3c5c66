#include "stats/power.hpp"

#include <algorithm>
#include <boost/math/distributions/non_central_t.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <boost/math/special_functions/binomial.hpp>
#include <boost/math/tools/roots.hpp>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace layerbench::stats {
namespace {

void validate(double sd, double effect, double alpha, double power) {
  if (!(effect != 0) || !std::isfinite(effect)) throw std::invalid_argument("effect must be finite and non-zero");
  if (!(sd > 0) || !std::isfinite(sd)) throw std::invalid_argument("sd must be finite and positive");
  if (!(alpha > 0 && alpha < 1)) throw std::invalid_argument("alpha must be in (0, 1)");
  if (!(power > 0 && power < 1)) throw std::invalid_argument("power must be in (0, 1)");
}

double df_of(double n, TDesign design) { return design == TDesign::paired ? n - 1 : 2 * (n - 1); }
double ncp_of(double n, double ratio, TDesign design) {
  return (design == TDesign::paired ? std::sqrt(n) : std::sqrt(n / 2)) * ratio;
}

}  // namespace

double t_test_power(double n, double effect, double sd, double alpha, TDesign design) {
  validate(sd, effect, alpha, 0.5);
  if (!(n > 1)) throw std::invalid_argument("power needs n > 1");
  const double df = df_of(n, design);
  const double critical = boost::math::quantile(boost::math::students_t(df), 1 - alpha / 2);
  const boost::math::non_central_t dist(df, ncp_of(n, std::abs(effect) / sd, design));
  return boost::math::cdf(boost::math::complement(dist, critical));
}

double t_test_sample_size(double effect, double sd, double alpha, double power, TDesign design) {
  validate(sd, effect, alpha, power);
  auto f = [&](double n) { return t_test_power(n, effect, sd, alpha, design) - power; };
  // R searches n in [2, 1e7]; power grows with n, so bracket and solve with TOMS 748.
  double lo = 2, hi = 4;
  if (f(lo) >= 0) return lo;
  while (f(hi) < 0) {
    lo = hi;
    hi *= 2;
    if (hi > 1e9) throw std::invalid_argument("effect too small relative to sd: n exceeds 1e9");
  }
  std::uintmax_t iterations = 200;
  const auto root = boost::math::tools::toms748_solve(
      f, lo, hi, boost::math::tools::eps_tolerance<double>(45), iterations);
  return 0.5 * (root.first + root.second);
}

SamplePlan plan_paired(double sd, double effect, double alpha, double power) {
  validate(sd, effect, alpha, power);
  const double ratio = sd / std::abs(effect);
  SamplePlan plan;
  const boost::math::normal normal;
  const double z = boost::math::quantile(normal, 1 - alpha / 2) + boost::math::quantile(normal, power);
  plan.n_normal = z * z * ratio * ratio;
  double n = std::max(plan.n_normal, 2.0);
  for (int i = 0; i < 1000; ++i) {
    const boost::math::students_t t(std::max(n - 1, 1.0));
    const double q = boost::math::quantile(t, 1 - alpha / 2) + boost::math::quantile(t, power);
    const double next = std::max(q * q * ratio * ratio, 2.0);
    const bool converged = std::abs(next - n) < 1e-10 * std::max(1.0, n);
    n = next;
    if (converged) break;
  }
  plan.n_t = n;
  plan.n_exact = t_test_sample_size(effect, sd, alpha, power, TDesign::paired);
  plan.recommended = std::max<std::size_t>(static_cast<std::size_t>(std::ceil(plan.n_exact - 1e-9)),
                                           std::max<std::size_t>(6, min_pairs_for_alpha(alpha)));
  return plan;
}

double min_p_signed_rank(std::size_t n) { return std::min(1.0, 2.0 / std::ldexp(1.0, static_cast<int>(n))); }

double min_p_rank_sum(std::size_t n1, std::size_t n2) {
  return std::min(1.0, 2.0 / boost::math::binomial_coefficient<double>(static_cast<unsigned>(n1 + n2),
                                                                        static_cast<unsigned>(n1)));
}

std::size_t min_pairs_for_alpha(double alpha) {
  std::size_t n = 1;
  while (min_p_signed_rank(n) >= alpha && n < 64) ++n;
  return n;
}

}  // namespace layerbench::stats
