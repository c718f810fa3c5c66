#include "tools/history_anchors.hpp"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <vector>

namespace layerbench::tools {
namespace {

struct Moments {
  double mean = 0, var = 0;
  std::size_t n = 0;
};
Moments moments(std::span<const double> x) {
  Moments m;
  m.n = x.size();
  for (double v : x) m.mean += v;
  m.mean /= double(m.n);
  for (double v : x) m.var += (v - m.mean) * (v - m.mean);
  m.var = m.n > 1 ? m.var / double(m.n - 1) : 0;
  return m;
}

// Two-sided p of Student's pooled two-sample t test.
double student_p(std::span<const double> a, std::span<const double> b) {
  const auto ma = moments(a), mb = moments(b);
  const double df = double(ma.n + mb.n - 2);
  const double sp2 = ((double(ma.n) - 1) * ma.var + (double(mb.n) - 1) * mb.var) / df;
  const double se = std::sqrt(sp2 * (1.0 / double(ma.n) + 1.0 / double(mb.n)));
  if (!(se > 0)) return ma.mean == mb.mean ? 1.0 : 0.0;
  const double t = std::abs(ma.mean - mb.mean) / se;
  return 2 * boost::math::cdf(boost::math::complement(boost::math::students_t(df), t));
}

}  // namespace

std::optional<AnchorAlert> otava_online(std::span<const double> x, std::size_t after) {
  constexpr std::size_t window = 50, min_segment = 3;
  const std::size_t n = x.size();
  const std::size_t begin = std::max(after, n > window ? n - window : 0);
  const std::size_t len = n - begin;
  if (len < 2 * min_segment) return std::nullopt;
  const auto w = x.subspan(begin, len);
  // Q-hat(tau) = tau (N - tau) / N * (2/(tau (N - tau)) S_between - 2/(tau (tau - 1)) S_left
  //              - 2/((N - tau)(N - tau - 1)) S_right) with S over |x_i - x_j| (alpha = 1).
  std::vector<double> d(len * len);
  for (std::size_t i = 0; i < len; ++i)
    for (std::size_t j = 0; j < len; ++j) d[i * len + j] = std::abs(w[i] - w[j]);
  // Incremental sums over the split (O(N^2) per window): moving point t from right to left.
  double between = 0, left = 0, right = 0;
  for (std::size_t i = 0; i < len; ++i)
    for (std::size_t k = i + 1; k < len; ++k) right += d[i * len + k];
  double best = -1;
  std::size_t best_t = 0;
  for (std::size_t t = 1; t + 1 < len; ++t) {
    const std::size_t moved = t - 1;  // joins the left segment
    double to_left = 0, to_right = 0;
    for (std::size_t i = 0; i < moved; ++i) to_left += d[i * len + moved];
    for (std::size_t j = moved + 1; j < len; ++j) to_right += d[moved * len + j];
    left += to_left;
    right -= to_right;
    between += to_right - to_left;
    if (t < min_segment || t + min_segment > len) continue;
    const double a = double(t), b = double(len - t);
    const double e = 2 * between / (a * b) - 2 * left / (a * (a - 1)) - 2 * right / (b * (b - 1));
    const double q = a * b / double(len) * e;
    if (q > best) {
      best = q;
      best_t = t;
    }
  }
  if (best_t == 0) return std::nullopt;
  if (student_p(w.subspan(0, best_t), w.subspan(best_t)) >= 0.001) return std::nullopt;
  return AnchorAlert{begin + best_t};
}

std::optional<AnchorAlert> perfherder_online(std::span<const double> x, std::size_t after) {
  constexpr std::size_t fore = 12, back_min = 12, back_max = 24;
  const std::size_t n = x.size();
  if (n < fore + back_min) return std::nullopt;
  const std::size_t t = n - fore;
  if (t < after + back_min) return std::nullopt;
  const std::size_t b0 = std::max(after, t > back_max ? t - back_max : 0);
  const auto mb = moments(x.subspan(b0, t - b0)), mf = moments(x.subspan(t, fore));
  const double se = std::sqrt(mb.var / double(mb.n) + mf.var / double(mf.n));
  if (!(se > 0)) return std::nullopt;
  const double tv = std::abs(mf.mean - mb.mean) / se;
  if (tv > 7 && std::abs(mf.mean - mb.mean) / mb.mean >= 0.02) return AnchorAlert{t};
  return std::nullopt;
}

std::optional<AnchorAlert> bencher_online(std::span<const double> x) {
  constexpr std::size_t max_sample = 64;
  const std::size_t n = x.size();
  if (n < 3) return std::nullopt;
  const std::size_t k = std::min(max_sample, n - 1);
  const auto m = moments(x.subspan(n - 1 - k, k));
  const double tq = boost::math::quantile(boost::math::students_t(double(k - 1)), 0.99);
  const double upper = m.mean + tq * std::sqrt(m.var) * std::sqrt(1 + 1.0 / double(k));
  if (x[n - 1] > upper) return AnchorAlert{n - 1};
  return std::nullopt;
}

std::optional<AnchorAlert> gab_online(std::span<const double> x) {
  const std::size_t n = x.size();
  if (n >= 2 && x[n - 1] / x[n - 2] > 2.0) return AnchorAlert{n - 1};
  return std::nullopt;
}

}  // namespace layerbench::tools
