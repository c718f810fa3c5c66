#include "stats/mann_whitney.hpp"

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "stats/ranks.hpp"

namespace layerbench::stats {
namespace {

double normal_p(double z, Alternative alternative) {
  if (std::isnan(z)) return 1.0;  // no variance: every arrangement is the same, nothing to reject
  const boost::math::normal normal;
  switch (alternative) {
    case Alternative::less: return boost::math::cdf(normal, z);
    case Alternative::greater: return boost::math::cdf(boost::math::complement(normal, z));
    case Alternative::two_sided: return std::min(1.0, 2.0 * boost::math::cdf(normal, -std::abs(z)));
  }
  return nan_value;
}

}  // namespace

std::vector<double> subset_sum_distribution(std::span<const std::uint32_t> scores, std::size_t k) {
  if (k > scores.size()) throw std::invalid_argument("subset_sum_distribution: k exceeds the number of scores");
  std::size_t total = 0;
  for (auto s : scores) total += s;
  // ways[j][s]: number of j-subsets of the scores seen so far summing to s. Held as doubles because
  // C(100, 50) ~ 1e29 overflows any integer type; the relative rounding (~1e-16) is harmless, and the
  // counts are normalised by their own total at the end.
  std::vector<std::vector<double>> ways(k + 1, std::vector<double>(total + 1, 0.0));
  ways[0][0] = 1.0;
  std::size_t running = 0;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const std::size_t s_i = scores[i];
    running += s_i;
    for (std::size_t j = std::min(k, i + 1); j >= 1; --j) {
      auto& row = ways[j];
      const auto& prev = ways[j - 1];
      for (std::size_t s = running + 1; s-- > s_i;) row[s] += prev[s - s_i];  // s = running .. s_i
    }
  }
  double sum = 0;
  for (double c : ways[k]) sum += c;
  std::vector<double> p(total + 1);
  for (std::size_t s = 0; s <= total; ++s) p[s] = ways[k][s] / sum;
  return p;
}

double mann_whitney_min_p(std::size_t n1, std::size_t n2) {
  // C(n1 + n2, n1) in floating point: the exact integer overflows long before the p underflows.
  double log_c = std::lgamma(static_cast<double>(n1 + n2 + 1)) - std::lgamma(static_cast<double>(n1 + 1)) -
                 std::lgamma(static_cast<double>(n2 + 1));
  return std::min(1.0, 2.0 * std::exp(-log_c));
}

MannWhitneyResult mann_whitney_u(std::span<const double> x, std::span<const double> y,
                                 const MannWhitneyOptions& options) {
  if (x.empty() || y.empty()) throw std::invalid_argument("mann_whitney_u: both samples must be non-empty");
  std::vector<double> all(x.begin(), x.end());
  all.insert(all.end(), y.begin(), y.end());
  for (double v : all)
    if (!std::isfinite(v)) throw std::invalid_argument("mann_whitney_u: non-finite value");

  MannWhitneyResult r;
  r.n1 = x.size();
  r.n2 = y.size();
  r.alternative = options.alternative;
  const double n1 = static_cast<double>(r.n1), n2 = static_cast<double>(r.n2), n = n1 + n2;
  const auto ranks = mid_ranks(all);
  double r1 = 0;
  for (std::size_t i = 0; i < r.n1; ++i) r1 += ranks[i];
  r.u1 = r1 - n1 * (n1 + 1) / 2;
  r.u2 = n1 * n2 - r.u1;
  r.mean = n1 * n2 / 2;
  double tie_term = 0;
  for (auto t : tie_group_sizes(all)) {
    const double td = static_cast<double>(t);
    tie_term += td * td * td - td;
    if (t > 1) r.ties = true;
  }
  r.variance = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)));
  if (r.variance > 0) {
    double c = 0;
    if (options.continuity) {
      switch (options.alternative) {
        case Alternative::greater: c = 0.5; break;
        case Alternative::less: c = -0.5; break;
        case Alternative::two_sided: c = r.u1 > r.mean ? 0.5 : (r.u1 < r.mean ? -0.5 : 0.0); break;
      }
    }
    r.z = (r.u1 - r.mean - c) / std::sqrt(r.variance);
  }

  const bool exact = options.method == MannWhitneyMethod::exact ||
                     (options.method == MannWhitneyMethod::automatic && r.n1 + r.n2 <= options.max_exact_total);
  if (!exact) {
    r.p = normal_p(r.z, options.alternative);
    return r;
  }
  // Exact conditional distribution given the ties: draw the smaller sample's doubled mid-ranks as a
  // subset of all doubled mid-ranks (integers, so 2 R is looked up exactly).
  const bool x_smaller = r.n1 <= r.n2;
  const std::size_t k = x_smaller ? r.n1 : r.n2;
  std::vector<std::uint32_t> scores(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) scores[i] = static_cast<std::uint32_t>(std::lround(2 * ranks[i]));
  const auto dist = subset_sum_distribution(scores, k);
  double r_small = 0;
  for (std::size_t i = 0; i < k; ++i) r_small += ranks[x_smaller ? i : r.n1 + i];
  const auto observed = static_cast<std::size_t>(std::lround(2 * r_small));
  // Sum each tail from its own end (never 1 - the other tail), then clip.
  double le = 0, ge = 0;
  for (std::size_t s = 0; s <= observed && s < dist.size(); ++s) le += dist[s];
  for (std::size_t s = observed; s < dist.size(); ++s) ge += dist[s];
  le = std::min(1.0, le);
  ge = std::min(1.0, ge);
  // The rank sum of the smaller sample moves with U of that sample; map it back onto x.
  const double p_x_greater = x_smaller ? ge : le;
  const double p_x_less = x_smaller ? le : ge;
  r.exact = true;
  switch (options.alternative) {
    case Alternative::greater: r.p = p_x_greater; break;
    case Alternative::less: r.p = p_x_less; break;
    case Alternative::two_sided: r.p = std::min(1.0, 2.0 * std::min(le, ge)); break;
  }
  return r;
}

}  // namespace layerbench::stats
