#include "study/diagnostics.hpp"
#include "common/json_number.hpp"
#include "common/number_text.hpp"

#include <fmt/format.h>

#include <cmath>

namespace layerbench::ab {

StudyDiagnostics diagnose(const Study& study, const stats::PairedAnalysis& a) {
  StudyDiagnostics d;
  d.num_pairs_planned = study.config.pairs;
  const auto pairs = completed_pairs(study);
  d.num_completed = pairs.size();
  std::vector<double> ab, ba, base, candidate;
  for (const auto& p : pairs) {
    (p.base_first ? ab : ba).push_back(p.candidate - p.base);
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

namespace {
}  // namespace

reports::PairedBlock diagnostics_block(const StudyDiagnostics& d) {
  using nlohmann::json;
  reports::PairedBlock b;
  b.key = "diagnostics";
  b.json = {
      {"pairs_planned", d.num_pairs_planned},
      {"pairs_completed", d.num_completed},
      {"order", {{"base_first", d.num_ab}, {"candidate_first", d.num_ba},
                 {"mean_delta_base_first", finite_or_null(d.mean_delta_ab)},
                 {"mean_delta_candidate_first", finite_or_null(d.mean_delta_ba)},
                 {"p", d.order_test ? finite_or_null(d.order_test->p) : json(nullptr)}}},
      {"drift", {{"base_rho", finite_or_null(d.base_drift.rho)}, {"base_p", finite_or_null(d.base_drift.p)},
                 {"candidate_rho", finite_or_null(d.candidate_drift.rho)}, {"candidate_p", finite_or_null(d.candidate_drift.p)}}},
      {"failed_runs", d.failed_runs},
      {"excluded_pairs", d.excluded},
      {"inconclusive", d.inconclusive},
      {"plan", d.plan ? json{{"n_normal", d.plan->n_normal}, {"n_t", d.plan->n_t},
                             {"n_exact", d.plan->n_exact}, {"recommended", d.plan->recommended}}
                      : json(nullptr)},
      {"output_check", d.output_checked ? json{{"identical_pairs", d.identical_pairs},
                                               {"differing_pairs", d.differing_pairs},
                                               {"missing", d.missing_outputs}}
                                        : json(nullptr)},
      {"notes", d.notes},
  };
  b.lines.push_back(fmt::format(
      "Study: {} of {} pairs completed ({} base-first, {} candidate-first), {} failed runs, {} "
      "excluded pairs; order effect: base-first mean delta {}, candidate-first {}{}.",
      d.num_completed, d.num_pairs_planned, d.num_ab, d.num_ba, d.failed_runs, d.excluded.size(), text::signed_number(d.mean_delta_ab),
      text::signed_number(d.mean_delta_ba), d.order_test ? fmt::format(" (Welch p={:.4g})", d.order_test->p) : ""));
  b.notes = d.notes;
  return b;
}

}  // namespace layerbench::ab
