#include "stats/summary.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace layerbench::stats {

double quantile_sorted(std::span<const double> sorted, double p) {
  if (sorted.empty()) throw std::invalid_argument("quantile of an empty sample");
  const double h = p * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const auto hi = static_cast<std::size_t>(std::ceil(h));
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

double quantile(std::span<const double> x, double p) {
  std::vector<double> s(x.begin(), x.end());
  std::sort(s.begin(), s.end());
  return quantile_sorted(s, p);
}

Summary summarize(std::span<const double> x) {
  if (x.empty()) throw std::invalid_argument("summary of an empty sample");
  std::vector<double> s(x.begin(), x.end());
  std::sort(s.begin(), s.end());
  Summary r;
  r.n = s.size();
  r.mean = std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(r.n);
  r.median = quantile_sorted(s, 0.5);
  r.min = s.front();
  r.max = s.back();
  r.p10 = quantile_sorted(s, 0.10);
  r.p90 = quantile_sorted(s, 0.90);
  if (r.n > 1) {
    double ss = 0;
    for (double v : s) ss += (v - r.mean) * (v - r.mean);
    r.sd = std::sqrt(ss / static_cast<double>(r.n - 1));
  }
  r.cv = r.mean != 0 ? r.sd / r.mean : 0.0;
  return r;
}

}  // namespace layerbench::stats
