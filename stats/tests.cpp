#include "stats/tests.hpp"

#include <algorithm>
#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <boost/math/special_functions/beta.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace layerbench::stats {

TTestResult t_test(std::span<const double> x, double confidence, Alternative alternative, double mu) {
  if (x.size() < 2) throw std::invalid_argument("t test needs at least 2 values");
  if (!(confidence > 0 && confidence < 1)) throw std::invalid_argument("confidence must be in (0, 1)");
  TTestResult r;
  r.alternative = alternative;
  r.confidence = confidence;
  const double n = static_cast<double>(x.size());
  r.mean = std::accumulate(x.begin(), x.end(), 0.0) / n;
  double ss = 0;
  for (double v : x) ss += (v - r.mean) * (v - r.mean);
  r.se = std::sqrt(ss / (n - 1)) / std::sqrt(n);
  r.df = n - 1;
  const double diff = r.mean - mu;
  const double inf = std::numeric_limits<double>::infinity();
  if (r.se > 0) {
    r.t = diff / r.se;
  } else if (diff != 0) {
    r.t = diff > 0 ? inf : -inf;
  }
  const boost::math::students_t dist(r.df);
  if (!std::isnan(r.t)) {
    // Boost's cdf accepts +-inf and returns 0 or 1.
    const double lower = std::isinf(r.t) ? (r.t < 0 ? 0.0 : 1.0) : boost::math::cdf(dist, r.t);
    const double upper = std::isinf(r.t) ? (r.t > 0 ? 0.0 : 1.0)
                                         : boost::math::cdf(boost::math::complement(dist, r.t));
    switch (alternative) {
      case Alternative::less: r.p = lower; break;
      case Alternative::greater: r.p = upper; break;
      case Alternative::two_sided: r.p = std::min(1.0, 2.0 * std::min(lower, upper)); break;
    }
  }
  const double alpha = 1 - confidence;
  switch (alternative) {
    case Alternative::two_sided: {
      const double q = boost::math::quantile(dist, 1 - alpha / 2);
      r.ci = {r.mean - q * r.se, r.mean + q * r.se};
      break;
    }
    case Alternative::less:
      r.ci = {-inf, r.mean + boost::math::quantile(dist, 1 - alpha) * r.se};
      break;
    case Alternative::greater:
      r.ci = {r.mean - boost::math::quantile(dist, 1 - alpha) * r.se, inf};
      break;
  }
  return r;
}

WelchResult welch_t_test(std::span<const double> x, std::span<const double> y) {
  if (x.size() < 2 || y.size() < 2) throw std::invalid_argument("Welch t test needs 2 values per group");
  auto moments = [](std::span<const double> v) {
    const double n = static_cast<double>(v.size());
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
    double ss = 0;
    for (double e : v) ss += (e - mean) * (e - mean);
    return std::pair{mean, ss / (n - 1) / n};  // mean and squared standard error
  };
  const auto [mx, vx] = moments(x);
  const auto [my, vy] = moments(y);
  WelchResult r;
  r.difference = mx - my;
  const double v = vx + vy;
  if (v <= 0) return r;
  r.t = r.difference / std::sqrt(v);
  r.df = v * v / (vx * vx / static_cast<double>(x.size() - 1) + vy * vy / static_cast<double>(y.size() - 1));
  const boost::math::students_t dist(r.df);
  r.p = std::min(1.0, 2.0 * boost::math::cdf(boost::math::complement(dist, std::abs(r.t))));
  return r;
}

BinomialResult binomial_test(std::size_t k, std::size_t n, double p_null, Alternative alternative,
                             double confidence) {
  if (k > n) throw std::invalid_argument("binomial test: k > n");
  if (!(p_null >= 0 && p_null <= 1)) throw std::invalid_argument("binomial test: p outside [0, 1]");
  BinomialResult r{k, n, p_null, alternative, nan_value, {}};
  if (n == 0) {
    r.p = 1.0;
    r.ci = {0.0, 1.0};
    return r;
  }
  const boost::math::binomial_distribution<double> dist(static_cast<double>(n), p_null);
  const double kd = static_cast<double>(k);
  const double p_less = boost::math::cdf(dist, kd);
  const double p_greater = k == 0 ? 1.0 : boost::math::cdf(boost::math::complement(dist, kd - 1));
  switch (alternative) {
    case Alternative::less: r.p = p_less; break;
    case Alternative::greater: r.p = p_greater; break;
    case Alternative::two_sided: {
      // Minlike: every outcome no more likely than the observed one, with R/scipy's 1e-7 fuzz. The
      // pmf rises to the mode and falls after it, so those outcomes are two tails [0, a] and
      // [b, n], found by bisection (O(log n) pmf terms, not n).
      const double threshold = boost::math::pdf(dist, kd) * (1 + 1e-7);
      const auto small = [&](std::size_t i) { return boost::math::pdf(dist, static_cast<double>(i)) <= threshold; };
      const auto mode = std::min(n, static_cast<std::size_t>(std::floor(static_cast<double>(n + 1) * p_null)));
      std::size_t lo = 0, hi = mode + 1;  // the left tail is [0, lo): small() holds below lo only
      while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if (small(mid)) lo = mid + 1;
        else hi = mid;
      }
      const std::size_t left_end = lo;  // outcomes 0 .. left_end - 1
      lo = mode;
      hi = n + 1;  // the right tail is [lo, n]: small() holds from lo on
      while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if (small(mid)) hi = mid;
        else lo = mid + 1;
      }
      const std::size_t right_begin = std::max(lo, left_end);  // the mode can be small (then one tail is all)
      double sum = 0;
      if (left_end > 0) sum += boost::math::cdf(dist, static_cast<double>(left_end - 1));
      if (right_begin <= n)
        sum += right_begin == 0 ? 1.0 : boost::math::cdf(boost::math::complement(dist, static_cast<double>(right_begin - 1)));
      // Below the smallest normal double the tails are rounding residue (the terms underflow).
      r.p = sum < std::numeric_limits<double>::min() ? 0.0 : std::min(1.0, sum);
      break;
    }
  }
  r.p = std::clamp(r.p, 0.0, 1.0);
  const double alpha = 1 - confidence;
  const double tail = alternative == Alternative::two_sided ? alpha / 2 : alpha;
  const double lower = k == 0 ? 0.0 : boost::math::ibeta_inv(kd, static_cast<double>(n - k) + 1, tail);
  const double upper = k == n ? 1.0 : boost::math::ibeta_inv(kd + 1, static_cast<double>(n - k), 1 - tail);
  switch (alternative) {
    case Alternative::two_sided: r.ci = {lower, upper}; break;
    case Alternative::greater: r.ci = {lower, 1.0}; break;
    case Alternative::less: r.ci = {0.0, upper}; break;
  }
  return r;
}

SignTestResult sign_test(std::span<const double> d, Alternative alternative) {
  SignTestResult r;
  for (double v : d) {
    if (v > 0) ++r.positive;
    else if (v < 0) ++r.negative;
    else ++r.zeros;
  }
  r.n = r.positive + r.negative;
  r.p = binomial_test(r.positive, r.n, 0.5, alternative).p;
  return r;
}

}  // namespace layerbench::stats
