#include "bench/ab/diagnostics.hpp"

#include <fmt/format.h>

namespace layerbench::ab {

StudyDiagnostics diagnose(const Study& study, const stats::PairedAnalysis& a) {
  StudyDiagnostics d;
  d.num_pairs_planned = study.config.pairs;
  const auto pairs = completed_pairs(study);
  d.num_completed = pairs.size();
  std::vector<double> ab, ba, base, candidate;
  for (const auto& p : pairs) {
    (p.base_first ? ab : ba).push_back(p.base - p.candidate);
    base.push_back(p.base);
    candidate.push_back(p.candidate);
    if (!study.config.check_output.empty()) {
      d.output_checked = true;
      if (p.base_hash == "missing" || p.candidate_hash == "missing" || p.base_hash.empty()) {
        ++d.missing_outputs;
      } else if (p.base_hash == p.candidate_hash) {
        ++d.identical_pairs;
      } else {
        ++d.differing_pairs;
      }
    }
  }
  d.num_ab = ab.size();
  d.num_ba = ba.size();
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? stats::nan_value : s / static_cast<double>(v.size());
  };
  d.mean_delta_ab = mean(ab);
  d.mean_delta_ba = mean(ba);
  if (ab.size() >= 2 && ba.size() >= 2) d.order_test = stats::welch_t_test(ab, ba);
  d.base_drift = stats::spearman_trend(base);
  d.candidate_drift = stats::spearman_trend(candidate);
  d.excluded = study.excluded;
  for (const auto& r : study.runs) d.failed_runs += r.status != "ok";

  const double alpha = a.alpha;
  const double w_p = a.wilcoxon.p_exact.value_or(a.wilcoxon.p_normal);
  d.inconclusive = !(w_p < alpha) && !(a.t.p < alpha);
  if (d.inconclusive && a.delta.sd > 0 && a.delta.mean != 0) {
    try {
      d.plan = stats::plan_paired(a.delta.sd, a.delta.mean, alpha, 0.8);
    } catch (const std::invalid_argument&) {
    }
  }

  if (d.order_test && d.order_test->p < alpha) {
    d.notes.push_back(fmt::format("Order effect: pairs run base-first average {:+.4g}, candidate-first {:+.4g} "
                                  "(Welch p={:.3g}); whichever arm runs first is systematically favoured.",
                                  d.mean_delta_ab, d.mean_delta_ba, d.order_test->p));
  }
  for (const auto& [name, c] : {std::pair{"base", d.base_drift}, std::pair{"candidate", d.candidate_drift}}) {
    if (c.p < alpha) {
      d.notes.push_back(fmt::format("Drift: the {} arm trends over the study (Spearman rho={:+.3f}, p={:.3g}).",
                                    name, c.rho, c.p));
    }
  }
  if (!d.excluded.empty()) {
    d.notes.push_back(fmt::format("{} pair{} excluded after failing every retry.", d.excluded.size(),
                                  d.excluded.size() == 1 ? "" : "s"));
  }
  // An inconclusive study's plan is in the reading guidance already (and in d.plan for the JSON).
  if (d.output_checked) {
    d.notes.push_back(d.differing_pairs == 0 && d.missing_outputs == 0
                          ? fmt::format("Output check: identical bytes in all {} pairs.", d.identical_pairs)
                          : fmt::format("Output check: {} pairs identical, {} differ, {} missing an output.",
                                        d.identical_pairs, d.differing_pairs, d.missing_outputs));
  }
  return d;
}

}  // namespace layerbench::ab
