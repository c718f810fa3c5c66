#include "study/gate.hpp"

#include "stats/bootstrap.hpp"
#include "stats/mann_whitney.hpp"
#include "stats/ranks.hpp"
#include "stats/ratio.hpp"
#include "stats/summary.hpp"
#include "stats/wilcoxon.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace layerbench::gate {
namespace {

void check_finite(std::span<const double> x, const char* what) {
  for (double v : x)
    if (!std::isfinite(v)) throw std::invalid_argument(fmt::format("{} sample holds a non-finite value", what));
}

double mean(std::span<const double> x) {
  double s = 0;
  for (double v : x) s += v;
  return s / static_cast<double>(x.size());
}

// Worse/better in terms of the relative change, for either orientation of the metric.
struct Direction {
  bool higher_is_better;
  bool worse(const stats::Interval& ci, double threshold) const {
    return higher_is_better ? ci.high < -threshold : ci.low > threshold;
  }
  bool better(const stats::Interval& ci, double threshold) const {
    return higher_is_better ? ci.low > threshold : ci.high < -threshold;
  }
};

void decide(Finding& f, const GateOptions& o) { f.verdict = verdict_for(f, o); }

}  // namespace

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::improved: return "improved";
    case Verdict::regressed: return "regressed";
    case Verdict::no_change: return "no significant change";
    case Verdict::inconclusive: return "inconclusive";
  }
  return "?";
}

Verdict verdict_for(const Finding& f, const GateOptions& o) {
  if (f.verdict == Verdict::inconclusive) return Verdict::inconclusive;
  if (f.sequential) {
    const Direction dir{o.higher_is_better};
    if (f.sequential->stop != stats::SequentialStop::effect) return f.verdict;
    return dir.worse(f.ci, o.threshold) ? Verdict::regressed : dir.better(f.ci, o.threshold) ? Verdict::improved
                                                                                            : Verdict::no_change;
  }
  const Direction dir{o.higher_is_better};
  if (f.p_worse < o.alpha && dir.worse(f.ci, o.threshold)) return Verdict::regressed;
  if (f.p_better < o.alpha && dir.better(f.ci, o.threshold)) return Verdict::improved;
  return Verdict::no_change;
}

std::string verdict_label(const Finding& f, const GateOptions& o) {
  switch (f.verdict) {
    case Verdict::regressed: return "regressed beyond the threshold";
    case Verdict::improved: return "improved beyond the threshold";
    case Verdict::inconclusive: return f.note.empty() ? "inconclusive" : f.note;
    case Verdict::no_change: break;
  }
  const std::string e = fmt::format("{:g}%", 100 * o.threshold);
  if (f.sequential) {
    if (f.sequential->stop == stats::SequentialStop::equivalence) return "no change larger than " + e;
    if (f.sequential->stop == stats::SequentialStop::effect) return "significant, size not resolved";
    return "inconclusive";
  }
  if (f.p_worse < o.alpha || f.p_better < o.alpha) return "significant, size not resolved";
  if (std::isfinite(f.ci.low) && std::isfinite(f.ci.high) && f.ci.low > -o.threshold && f.ci.high < o.threshold)
    return "no change larger than " + e;
  return "inconclusive";
}

std::size_t min_pairs(double alpha) {
  std::size_t n = 1;
  while (std::ldexp(1.0, -static_cast<int>(n)) >= alpha) ++n;
  return n;
}

std::size_t min_per_arm(double alpha) {
  std::size_t n = 1;
  while (stats::mann_whitney_min_p(n, n) >= alpha) ++n;
  return n;
}

Finding gate_paired(std::string name, std::span<const double> base, std::span<const double> candidate,
                    const GateOptions& o) {
  if (base.size() != candidate.size()) throw std::invalid_argument("paired study: arms differ in length");
  check_finite(base, "base");
  check_finite(candidate, "candidate");
  Finding f;
  f.name = std::move(name);
  f.paired = true;
  f.n_base = f.n_candidate = base.size();
  f.need = min_pairs(o.alpha);
  f.test = "Wilcoxon signed-rank, one-sided, exact";
  f.ci_level = 1 - 2 * o.alpha;
  if (base.size() < f.need) {
    f.verdict = Verdict::inconclusive;
    f.note = fmt::format("inconclusive: need ≥ {} pairs (have {}); the smallest exact one-sided p with n pairs is "
                         "2^-n", f.need, base.size());
    if (!base.empty()) {
      f.base_center = mean(base);
      f.candidate_center = mean(candidate);
      f.change = f.candidate_center / f.base_center - 1;
    }
    return f;
  }
  f.base_center = mean(base);
  f.candidate_center = mean(candidate);
  f.change = f.candidate_center / f.base_center - 1;

  // d = candidate - base, rounded so that round-off does not split ties (statistics.md 2.1).
  std::vector<double> d(base.size());
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = candidate[i] - base[i];
  d = stats::round_for_ranking(d, 10);
  stats::WilcoxonOptions wo;
  wo.alternative = stats::Alternative::greater;
  const auto up = stats::wilcoxon_signed_rank(d, wo);
  wo.alternative = stats::Alternative::less;
  const auto down = stats::wilcoxon_signed_rank(d, wo);
  const double p_up = up.p_exact ? *up.p_exact : up.p_normal;
  const double p_down = down.p_exact ? *down.p_exact : down.p_normal;
  if (!up.p_exact) f.test = "Wilcoxon signed-rank, one-sided, normal approximation";
  // All deltas zero: nothing moved.
  f.p_worse = std::isnan(p_up) ? 1.0 : (o.higher_is_better ? p_down : p_up);
  f.p_better = std::isnan(p_up) ? 1.0 : (o.higher_is_better ? p_up : p_down);

  if (base.size() > stats::kBootstrapMaxPairs) {
    // Normal limit (stats/bootstrap.hpp): the delta-method interval of the ratio of the means.
    f.ci = stats::paired_mean_change_normal(base, candidate, o.alpha);
    f.note = fmt::format("normal-limit interval (delta method: more than {} pairs)", stats::kBootstrapMaxPairs);
    f.normal_limit = true;
    decide(f, o);
    return f;
  }
  // [Q(alpha), Q(1 - alpha)] of the paired bootstrap: each end is a one-sided (1 - alpha) bound.
  f.ci = stats::paired_mean_change_bootstrap(base, candidate, o.resamples, o.seed, f.ci_level);
  decide(f, o);
  return f;
}

Finding gate_unpaired(std::string name, std::span<const double> base, std::span<const double> candidate,
                      const GateOptions& o) {
  check_finite(base, "base");
  check_finite(candidate, "candidate");
  Finding f;
  f.name = std::move(name);
  f.n_base = base.size();
  f.n_candidate = candidate.size();
  f.need = min_per_arm(o.alpha);
  f.test = "Mann-Whitney U, two-sided";
  f.ci_level = 1 - o.alpha;
  if (base.empty() || candidate.empty() || stats::mann_whitney_min_p(base.size(), candidate.size()) >= o.alpha) {
    f.verdict = Verdict::inconclusive;
    f.note = fmt::format("inconclusive: need ≥ {} samples per arm (have {} and {})", f.need, base.size(),
                         candidate.size());
    if (!base.empty() && !candidate.empty()) {
      f.base_center = stats::quantile(base, 0.5);
      f.candidate_center = stats::quantile(candidate, 0.5);
      f.change = f.candidate_center / f.base_center - 1;
    }
    return f;
  }
  f.base_center = stats::quantile(base, 0.5);
  f.candidate_center = stats::quantile(candidate, 0.5);
  f.change = f.candidate_center / f.base_center - 1;
  const auto mw = stats::mann_whitney_u(candidate, base);
  if (!mw.exact) f.test = "Mann-Whitney U, two-sided, normal approximation";
  f.p_worse = f.p_better = mw.p;

  // The arms are independent, so each is resampled on its own (unlike the paired bootstrap).
  f.ci = stats::independent_median_change_bootstrap(base, candidate, o.resamples, o.seed, o.alpha);
  decide(f, o);
  return f;
}

double parse_threshold(const std::string& text) {
  std::string s;
  for (char c : text)
    if (c != ' ') s += c;
  const bool percent = !s.empty() && s.back() == '%';
  if (percent) s.pop_back();
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size() || !std::isfinite(v))
    throw std::invalid_argument(fmt::format("threshold '{}' is not a percentage (e.g. 2%) or a number (e.g. 0.02)", text));
  if (v < 0) throw std::invalid_argument(fmt::format("threshold '{}' is negative", text));
  if (percent) return v / 100;
  if (v >= 1)
    throw std::invalid_argument(fmt::format("threshold '{}' is a fraction >= 1; write '{}%' for {} percent", text, text, text));
  return v;
}

Finding gate_sequential(std::string name, std::span<const double> base, std::span<const double> candidate,
                        const GateOptions& o, const stats::SequentialDesign& design) {
  if (base.size() != candidate.size()) throw std::invalid_argument("base and candidate differ in length");
  check_finite(base, "base");
  check_finite(candidate, "candidate");
  Finding f;
  f.name = std::move(name);
  f.paired = true;
  const auto s = stats::sequential_decision(base, candidate, design);
  f.sequential = s;
  f.n_base = f.n_candidate = s.pairs;
  f.test = "confidence sequence (Lai 1976)";
  f.ci_level = 1 - design.alpha;
  if (s.pairs == 0) {
    f.verdict = Verdict::inconclusive;
    f.undecided = true;
    f.note = "sequential: no pairs yet";
    return f;
  }
  f.base_center = s.base_mean;
  f.candidate_center = s.base_mean + s.mean;
  f.change = s.mean / s.base_mean;  // candidate / base - 1 of the means
  // The interval of candidate - base over the base mean, as a change (+ = the candidate is larger).
  f.ci = {s.interval.low / s.base_mean, s.interval.high / s.base_mean};
  if (s.base_mean < 0) std::swap(f.ci.low, f.ci.high);
  switch (s.stop) {
    case stats::SequentialStop::effect:
      f.verdict = verdict_for(f, o);
      if (f.verdict == Verdict::no_change) {
        f.note = fmt::format("sequential: a change after {} pairs, but not wholly beyond the threshold", s.pairs);
      } else {
        f.note = fmt::format("sequential: stopped after {} pairs on an effect", s.pairs);
      }
      break;
    case stats::SequentialStop::equivalence:
      f.verdict = Verdict::no_change;
      f.note = fmt::format("sequential: equivalent within +-{:.3g}% after {} pairs", 100 * design.equivalence, s.pairs);
      break;
    case stats::SequentialStop::max_pairs:
      f.verdict = Verdict::inconclusive;
      f.note = fmt::format("sequential: undecided at the cap of {} pairs", s.pairs);
      break;
    case stats::SequentialStop::running:
      f.verdict = Verdict::inconclusive;
      f.undecided = true;
      f.note = fmt::format("sequential: undecided after {} pairs; add pairs and run the gate again", s.pairs);
      break;
  }
  return f;
}

}  // namespace layerbench::gate
