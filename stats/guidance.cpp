// Reading guidance: plain sentences that say which figures to trust and why, modelled on the
// seeds' study ("rank tests significant, mean CI includes zero because of 2 outliers ...").
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

#include "common/number_text.hpp"
#include "stats/paired.hpp"
#include "stats/power.hpp"

namespace layerbench::stats {
namespace {

// Numbers go through the one formatter (common/number_text.hpp): what is not finite prints "—".
std::string p_text(double p) { return p < 1e-4 ? text::number(p, 2) : text::number(p, 3); }

std::string signed_text(double v) { return text::signed_number(v, 4); }

std::string pct_text(double v) { return std::isfinite(v) ? text::signed_number(v, 3) + "%" : text::kNotAvailable; }

// A size without its sign (the direction is in the words), in percent.
std::string size_pct_text(double v) {
  return std::isfinite(v) ? text::number(std::fabs(v), 3) + "%" : text::kNotAvailable;
}

}  // namespace

std::vector<std::string> reading_guidance(const PairedAnalysis& a) {
  std::vector<std::string> g;
  if (a.normal_limit)
    g.push_back(fmt::format("With {} pairs (more than {}) the intervals are normal-limit ones (t for the mean, order "
                            "statistics for the median) instead of the bootstrap, which would take minutes here and "
                            "agree to within its own resampling error.", a.n, kBootstrapMaxPairs));
  const double alpha = a.alpha;
  const double w_p = a.wilcoxon.p_exact.value_or(a.wilcoxon.p_normal);
  const bool rank_sig = w_p < alpha || a.sign.p < alpha;
  const bool both_rank_sig = w_p < alpha && a.sign.p < alpha;
  const bool t_sig = a.t.p < alpha;
  const auto& boot = a.bootstrap.mean.percentile;
  const bool boot_excludes_zero = !std::isnan(boot.low) && !boot.contains(0.0);
  const std::string direction =
      a.delta.median > 0 ? "the candidate is higher (slower, for times)" : "the candidate is lower (faster, for times)";
  const std::string tests = fmt::format("Wilcoxon p={}, sign test: candidate {} in {}/{} pairs, p={}", p_text(w_p),
                                        a.delta.median > 0 ? "higher" : "lower",
                                        a.delta.median > 0 ? a.sign.positive : a.sign.negative, a.sign.n,
                                        p_text(a.sign.p));
  const int level = static_cast<int>(std::lround(100 * (1 - alpha)));

  if (min_p_signed_rank(a.wilcoxon.n_nonzero) >= alpha) {
    g.push_back(fmt::format("Too few pairs: with {} non-zero deltas no two-sided rank test can reach p < {}; "
                            "need >= {} pairs.", a.wilcoxon.n_nonzero, fmt::format("{:.3g}", alpha), min_pairs_for_alpha(alpha)));
  }
  if (t_sig && both_rank_sig && (boot_excludes_zero || std::isnan(boot.low))) {
    // The size is a magnitude (the direction is in the words); the CI is of candidate - base.
    g.push_back(fmt::format("All tests agree: {} by {} ({}) on average; t p={}, {}; {}% CI of the mean delta "
                            "(candidate - base) [{}, {}].",
                            a.delta.mean > 0 ? "the candidate is higher" : "the candidate is lower",
                            fmt::format("{:.4g}", std::fabs(a.delta.mean)),
                            size_pct_text(a.delta.mean_pct),
                            p_text(a.t.p), tests, level, signed_text(a.t.ci.low), signed_text(a.t.ci.high)));
  } else if (rank_sig && !t_sig) {
    std::string why;
    if (!a.outliers.empty()) {
      const bool one = a.outliers.size() == 1;
      why = fmt::format(" because of {} Tukey outlier{} (", a.outliers.size(), one ? "" : "s");
      for (std::size_t i = 0; i < a.outliers.size(); ++i) {
        why += (i ? ", " : "") + signed_text(a.outliers[i].value);
      }
      why += one ? ") that inflates the variance" : ") that inflate the variance";
    }
    const std::string which = both_rank_sig      ? "Rank tests significant"
                              : w_p < alpha      ? "Wilcoxon signed-rank significant (the sign test is not)"
                                                 : "Sign test significant (the Wilcoxon test is not)";
    g.push_back(fmt::format("{} ({}), mean CI includes zero{}; trimmed mean {} ({}), median {} ({}); {}.", which,
                            tests, why, signed_text(a.delta.trimmed_mean), pct_text(a.delta.trimmed_mean_pct),
                            signed_text(a.delta.median), pct_text(a.delta.median_pct), direction));
    g.push_back("Under outliers the rank tests and the robust estimates (median, trimmed mean) are the ones to "
                "read; the mean CI bounds the effect from above.");
  } else if (t_sig && !rank_sig) {
    g.push_back(fmt::format("The mean CI excludes zero (t p={}) but the rank tests do not ({}): the mean may be "
                            "carried by a few pairs; check the outliers before trusting it.",
                            p_text(a.t.p), tests));
  } else if (!t_sig && !rank_sig) {
    std::string plan;
    if (a.delta.sd > 0 && a.delta.mean != 0) {
      try {
        const auto p = plan_paired(a.delta.sd, a.delta.mean, alpha, 0.8);
        plan = fmt::format("; to resolve the observed mean {} with power 0.8 a plan needs about {} pairs",
                           signed_text(a.delta.mean), p.recommended);
      } catch (const std::invalid_argument&) {
      }
    }
    g.push_back(fmt::format("Inconclusive at alpha={:.3g}: no test is significant (t p={}, {}){}.", alpha,
                            p_text(a.t.p), tests, plan));
  } else if (t_sig && rank_sig) {
    // Not every test agrees: say which one does not.
    const std::string which = !both_rank_sig ? (w_p < alpha ? "the Wilcoxon test (the sign test is not significant)"
                                                             : "the sign test (the Wilcoxon test is not significant)")
                                             : "both rank tests";
    const std::string boot_note =
        both_rank_sig ? "; the bootstrap CI of the mean includes zero" : "";
    g.push_back(fmt::format("Significant by the t test and {} ({}; t p={}), {}{}.", which, tests, p_text(a.t.p),
                            direction, boot_note));
  }
  if ((a.delta.mean > 0) != (a.delta.median > 0) && a.delta.mean != 0 && a.delta.median != 0) {
    g.push_back("Mean and median deltas have opposite signs: the distribution of deltas is skewed; report both.");
  }
  if (a.predicted) {
    const auto& c = a.predicted->check;
    const std::string pm = c.half_width > 0 ? fmt::format(" +- {:.4g}", c.half_width) : "";
    const std::string ratio =
        c.ratio_bounded ? fmt::format("{:.2f}x, CI [{:.2f}, {:.2f}]", c.ratio, c.ratio_ci.low, c.ratio_ci.high)
                        : fmt::format("{:.2f}x with an unbounded CI (the prediction is not clearly away from 0 at "
                                      "this precision)", c.ratio);
    g.push_back(fmt::format("Predicted delta {}{}: {}; measured/predicted = {}.", signed_text(a.predicted->value), pm,
                            c.verdict, ratio));
  }
  if (a.drift.base.p < alpha || a.drift.delta.p < alpha) {
    g.push_back("Drift over the study: an ordering or warm-up artifact can fake or hide an effect; interleave, "
                "warm up, and check the order-effect diagnostics.");
  }
  return g;
}

}  // namespace layerbench::stats
