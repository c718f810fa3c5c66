#include "stats/ranks.hpp"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "stats/common.hpp"

namespace layerbench::stats {
namespace {

std::vector<std::size_t> sorted_order(std::span<const double> x) {
  std::vector<std::size_t> order(x.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return x[a] < x[b]; });
  return order;
}

}  // namespace

std::vector<double> mid_ranks(std::span<const double> x) {
  const auto order = sorted_order(x);
  std::vector<double> ranks(x.size());
  std::size_t i = 0;
  while (i < order.size()) {
    std::size_t j = i + 1;
    while (j < order.size() && x[order[j]] == x[order[i]]) ++j;
    // Positions i..j-1 (0-based) share ranks i+1..j; their mean is (i + 1 + j) / 2.
    const double rank = 0.5 * static_cast<double>(i + 1 + j);
    for (std::size_t k = i; k < j; ++k) ranks[order[k]] = rank;
    i = j;
  }
  return ranks;
}

std::vector<std::size_t> tie_group_sizes(std::span<const double> x) {
  std::vector<double> s(x.begin(), x.end());
  std::sort(s.begin(), s.end());
  std::vector<std::size_t> sizes;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t j = i + 1;
    while (j < s.size() && s[j] == s[i]) ++j;
    sizes.push_back(j - i);
    i = j;
  }
  return sizes;
}

std::vector<double> round_for_ranking(std::span<const double> x, int significant_digits) {
  std::vector<double> out(x.begin(), x.end());
  if (significant_digits <= 0) return out;
  double max_abs = 0;
  for (double v : x) max_abs = std::max(max_abs, std::abs(v));
  if (max_abs == 0 || !std::isfinite(max_abs)) return out;
  const int exponent = static_cast<int>(std::floor(std::log10(max_abs))) - significant_digits + 1;
  // Divide by a power of ten rather than multiplying by its inverse: 10^-k is inexact.
  const double scale = std::pow(10.0, std::abs(exponent));
  for (double& v : out) {
    v = exponent < 0 ? std::round(v * scale) / scale : std::round(v / scale) * scale;
  }
  return out;
}

Correlation spearman(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size()) throw std::invalid_argument("spearman: length mismatch");
  const std::size_t n = x.size();
  if (n < 3) return {nan_value, nan_value};
  const auto rx = mid_ranks(x);
  const auto ry = mid_ranks(y);
  const double mean = 0.5 * static_cast<double>(n + 1);
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  if (sxx == 0 || syy == 0) return {nan_value, nan_value};
  double rho = sxy / std::sqrt(sxx * syy);
  rho = std::clamp(rho, -1.0, 1.0);
  const double df = static_cast<double>(n - 2);
  if (std::abs(rho) >= 1.0) return {rho, 0.0};
  const double t = rho * std::sqrt(df / ((1.0 - rho) * (1.0 + rho)));
  const boost::math::students_t dist(df);
  const double p = 2.0 * boost::math::cdf(boost::math::complement(dist, std::abs(t)));
  return {rho, std::min(1.0, p)};
}

Correlation spearman_trend(std::span<const double> x) {
  std::vector<double> index(x.size());
  std::iota(index.begin(), index.end(), 0.0);
  return spearman(index, x);
}

}  // namespace layerbench::stats
