#include "stats/wilcoxon.hpp"

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <stdexcept>
#include <string>

#include "stats/ranks.hpp"

namespace layerbench::stats {
namespace {

double normal_p(double z, Alternative alternative) {
  if (std::isnan(z)) return nan_value;
  const boost::math::normal normal;
  switch (alternative) {
    case Alternative::less: return boost::math::cdf(normal, z);
    case Alternative::greater: return boost::math::cdf(boost::math::complement(normal, z));
    case Alternative::two_sided:
      return std::min(1.0, 2.0 * boost::math::cdf(normal, -std::abs(z)));
  }
  return nan_value;
}

double continuity_shift(double w_plus, double mean, Alternative alternative) {
  switch (alternative) {
    case Alternative::greater: return 0.5;
    case Alternative::less: return -0.5;
    case Alternative::two_sided:
      return w_plus > mean ? 0.5 : (w_plus < mean ? -0.5 : 0.0);
  }
  return 0.0;
}

}  // namespace

ZeroMethod parse_zero_method(std::string_view text) {
  if (text == "wilcox") return ZeroMethod::wilcox;
  if (text == "pratt") return ZeroMethod::pratt;
  if (text == "zsplit") return ZeroMethod::zsplit;
  throw std::invalid_argument("unknown zero method '" + std::string(text) +
                              "' (expected wilcox, pratt or zsplit)");
}

std::string_view to_string(ZeroMethod method) {
  switch (method) {
    case ZeroMethod::wilcox: return "wilcox";
    case ZeroMethod::pratt: return "pratt";
    case ZeroMethod::zsplit: return "zsplit";
  }
  return "wilcox";
}

double TailProbabilities::for_alternative(Alternative alternative) const {
  switch (alternative) {
    case Alternative::less: return less;
    case Alternative::greater: return greater;
    case Alternative::two_sided: return two_sided;
  }
  return two_sided;
}

std::vector<double> shift_distribution(std::span<const std::uint32_t> scores) {
  std::size_t total = 0;
  for (auto s : scores) total += s;
  // Probabilities halve at every step instead of counting up to 2^n: no overflow for n = 200.
  std::vector<double> h(total + 1, 0.0);
  h[0] = 1.0;
  std::size_t running = 0;
  for (auto s : scores) {
    running += s;
    if (s == 0) continue;  // a zero score adds the same mass to both halves: unchanged
    for (std::size_t i = running; i >= s; --i) h[i] = 0.5 * (h[i] + h[i - s]);
    for (std::size_t i = std::min<std::size_t>(s, running + 1); i-- > 0;) h[i] *= 0.5;
  }
  return h;
}

std::vector<std::uint64_t> signed_rank_counts(std::size_t n) {
  if (n > 62) throw std::invalid_argument("signed_rank_counts: n > 62 overflows 64-bit counts");
  const std::size_t total = n * (n + 1) / 2;
  std::vector<std::uint64_t> c(total + 1, 0);
  c[0] = 1;
  std::size_t running = 0;
  for (std::size_t k = 1; k <= n; ++k) {
    running += k;
    for (std::size_t s = running; s >= k; --s) c[s] += c[s - k];
  }
  return c;
}

TailProbabilities tail_probabilities(std::span<const double> distribution, std::size_t observed) {
  TailProbabilities t;
  const std::size_t size = distribution.size();
  observed = std::min(observed, size == 0 ? 0 : size - 1);
  // Sum each tail from its far end so that the small terms are added first.
  for (std::size_t i = size; i-- > observed;) t.greater += distribution[i];
  for (std::size_t i = 0; i <= observed && i < size; ++i) t.less += distribution[i];
  t.less = std::clamp(t.less, 0.0, 1.0);
  t.greater = std::clamp(t.greater, 0.0, 1.0);
  t.two_sided = std::min(1.0, 2.0 * std::min(t.less, t.greater));
  return t;
}

WilcoxonResult wilcoxon_signed_rank(std::span<const double> d, const WilcoxonOptions& options) {
  WilcoxonResult r;
  r.alternative = options.alternative;
  for (double v : d) {
    if (!std::isfinite(v)) throw std::invalid_argument("wilcoxon: non-finite delta");
  }
  const bool keep_zeros = options.zero_method != ZeroMethod::wilcox;
  std::vector<double> magnitudes;
  std::vector<int> signs;
  for (double v : d) {
    if (v == 0 && !keep_zeros) {
      ++r.n_zero;
      continue;
    }
    if (v == 0) ++r.n_zero;
    magnitudes.push_back(std::abs(v));
    signs.push_back(v > 0 ? 1 : (v < 0 ? -1 : 0));
  }
  r.n_nonzero = d.size() - r.n_zero;
  const auto ranks = mid_ranks(magnitudes);

  // Doubled mid-ranks are integers: 2R+ is an exact integer for every method.
  std::uint64_t twice_plus = 0, twice_minus = 0, twice_zero = 0;
  std::vector<std::uint32_t> scores;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const auto twice = static_cast<std::uint32_t>(std::lround(2.0 * ranks[i]));
    if (signs[i] > 0) twice_plus += twice;
    if (signs[i] < 0) twice_minus += twice;
    if (signs[i] == 0) twice_zero += twice;
    if (signs[i] != 0) scores.push_back(twice);
  }
  // zsplit hands half of the zeros' rank sum to each side; twice_zero is n0(n0+1), even.
  const std::uint64_t zero_half = options.zero_method == ZeroMethod::zsplit ? twice_zero / 2 : 0;
  r.w_plus = 0.5 * static_cast<double>(twice_plus + zero_half);
  r.w_minus = 0.5 * static_cast<double>(twice_minus + zero_half);

  // Null moments (statistics.md 2.3).
  const double n = static_cast<double>(ranks.size());
  const double n0 = static_cast<double>(r.n_zero);
  double tie_sum = 0;  // sum over tie groups of t^3 - t
  std::vector<double> nonzero_magnitudes;
  for (std::size_t i = 0; i < magnitudes.size(); ++i) {
    if (options.zero_method != ZeroMethod::pratt || signs[i] != 0) {
      nonzero_magnitudes.push_back(magnitudes[i]);
    }
  }
  for (auto t : tie_group_sizes(nonzero_magnitudes)) {
    const double tt = static_cast<double>(t);
    tie_sum += tt * tt * tt - tt;
  }
  if (options.zero_method == ZeroMethod::pratt) {
    r.mean = (n * (n + 1) - n0 * (n0 + 1)) / 4.0;
    r.variance = (n * (n + 1) * (2 * n + 1) - n0 * (n0 + 1) * (2 * n0 + 1)) / 24.0 - tie_sum / 48.0;
  } else {
    r.mean = n * (n + 1) / 4.0;
    r.variance = n * (n + 1) * (2 * n + 1) / 24.0 - tie_sum / 48.0;
  }
  if (r.variance > 0) {
    const double c = options.continuity ? continuity_shift(r.w_plus, r.mean, options.alternative) : 0.0;
    r.z = (r.w_plus - r.mean - c) / std::sqrt(r.variance);
  }
  r.p_normal = normal_p(r.z, options.alternative);

  if (r.n_nonzero <= options.max_exact_n) {
    // Only the non-zero deltas carry a random sign; zeros (pratt) or half-zeros (zsplit) are fixed.
    const auto distribution = shift_distribution(scores);
    const auto tails = tail_probabilities(distribution, static_cast<std::size_t>(twice_plus));
    r.p_exact = tails.for_alternative(options.alternative);
  }
  return r;
}

}  // namespace layerbench::stats
