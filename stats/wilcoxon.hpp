#pragma once
// Wilcoxon signed-rank test: normal approximation with tie correction, and the exact
// conditional null distribution (shift algorithm on doubled mid-ranks) even with ties.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "stats/common.hpp"

namespace layerbench::stats {

// How zero deltas enter the test (statistics.md 2.3).
enum class ZeroMethod { wilcox, pratt, zsplit };
ZeroMethod parse_zero_method(std::string_view text);  // throws std::invalid_argument
std::string_view to_string(ZeroMethod method);

struct WilcoxonOptions {
  ZeroMethod zero_method = ZeroMethod::wilcox;
  bool continuity = false;  // 0.5 continuity correction of z
  Alternative alternative = Alternative::two_sided;
  // The exact p is computed when n_nonzero <= max_exact_n; O(n^3) time, O(n^2) memory.
  std::size_t max_exact_n = 200;
};

struct WilcoxonResult {
  double w_plus = 0;   // R+: rank sum of the positive deltas (plus half the zeros for zsplit)
  double w_minus = 0;  // R-
  std::size_t n_nonzero = 0;
  std::size_t n_zero = 0;
  double mean = 0;      // E[R+] under H0
  double variance = 0;  // tie-corrected Var[R+] under H0
  double z = nan_value;  // positive when R+ is above its mean; NaN when variance is 0
  Alternative alternative = Alternative::two_sided;
  double p_normal = nan_value;    // p of z for `alternative`
  std::optional<double> p_exact;  // exact conditional p for `alternative`; empty when n is too large
};

WilcoxonResult wilcoxon_signed_rank(std::span<const double> d, const WilcoxonOptions& options = {});

// Shift algorithm (Streitberg & Roehmel): the distribution of sum(s_k * B_k) for independent fair
// signs B_k in {0, 1} and non-negative integer scores s_k. Returns P(S = s) for s = 0..sum(scores).
std::vector<double> shift_distribution(std::span<const std::uint32_t> scores);

// Exact counts c_n(s) of the untied signed-rank statistic, s = 0..n(n+1)/2 (n <= 62).
std::vector<std::uint64_t> signed_rank_counts(std::size_t n);

struct TailProbabilities {
  double less = 0;       // P(S <= observed)
  double greater = 0;    // P(S >= observed)
  double two_sided = 0;  // min(1, 2 * min(less, greater))
  double for_alternative(Alternative alternative) const;
};
// Each tail is summed directly from its own end (never 1 - the other tail) and clipped to [0, 1].
TailProbabilities tail_probabilities(std::span<const double> distribution, std::size_t observed);

}  // namespace layerbench::stats
