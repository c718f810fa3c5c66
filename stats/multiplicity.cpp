#include "stats/multiplicity.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace layerbench::stats {

std::vector<double> holm_adjust(std::span<const double> p) {
  std::vector<std::size_t> order(p.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  // NaN sorts last: it never lowers the running maximum of the others.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return !std::isnan(p[a]) && (std::isnan(p[b]) || p[a] < p[b]);
  });
  const double m = static_cast<double>(p.size());
  std::vector<double> out(p.size(), std::numeric_limits<double>::quiet_NaN());
  double running = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const double v = p[order[i]];
    if (std::isnan(v)) continue;
    running = std::max(running, std::min(1.0, (m - static_cast<double>(i)) * v));
    out[order[i]] = running;
  }
  return out;
}

}  // namespace layerbench::stats
