#include "bench/ab/report.hpp"

#include "reports/sequential.hpp"

#include <cmath>
#include <fmt/format.h>
#include <vector>

namespace layerbench::ab {
namespace {

using nlohmann::json;

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json interval(const stats::Interval& i) { return {{"low", num(i.low)}, {"high", num(i.high)}}; }

json arm(const stats::Summary& s) {
  return {{"mean", s.mean}, {"median", s.median}, {"sd", s.sd}, {"min", s.min}, {"max", s.max}};
}

std::string g(double v) { return std::isnan(v) ? "n/a" : fmt::format("{:.5g}", v); }
std::string sg(double v) { return std::isnan(v) ? "n/a" : fmt::format("{:+.5g}", v); }
std::string pct(double v) { return std::isnan(v) ? "n/a" : fmt::format("{:+.3f}%", v); }
std::string pv(double v) { return std::isnan(v) ? "n/a" : fmt::format("{:.4g}", v); }
std::string ci(const stats::Interval& i) { return fmt::format("[{}, {}]", sg(i.low), sg(i.high)); }
std::string resamples_text(std::size_t b) {
  return b % 1000 == 0 ? fmt::format("{}k", b / 1000) : fmt::format("{}", b);
}

}  // namespace

json prediction_json(const stats::PredictedResult& p) {
  const auto& c = p.check;
  return {{"value", p.value},
          {"half_width", c.half_width},
          {"ratio_mean", num(p.ratio_mean)},
          {"ratio_median", num(p.ratio_median)},
          {"difference", num(c.difference)},
          {"difference_ci", interval(c.difference_ci)},
          {"ratio", num(c.ratio)},
          {"ratio_ci", c.ratio_bounded ? interval(c.ratio_ci) : json(nullptr)},
          {"ratio_ci_method", "fieller"},
          {"holds", c.holds},
          {"verdict", c.verdict}};
}

namespace {

// Rows of (label, value) shared by the text and markdown renderers.
using Rows = std::vector<std::pair<std::string, std::string>>;

Rows delta_rows(const stats::PairedAnalysis& a, const stats::PairedOptions& o) {
  const int level = static_cast<int>(std::lround(100 * o.confidence));
  const auto& b = a.bootstrap;
  Rows rows{
      {"mean", fmt::format("{} ({})", sg(a.delta.mean), pct(a.delta.mean_pct))},
      {"median", fmt::format("{} ({})", sg(a.delta.median), pct(a.delta.median_pct))},
      {fmt::format("{:g}% trimmed mean", 100 * a.delta.trim),
       fmt::format("{} ({})", sg(a.delta.trimmed_mean), pct(a.delta.trimmed_mean_pct))},
      {"sd / se", fmt::format("{} / {}", g(a.delta.sd), g(a.delta.se))},
      {fmt::format("{}% CI of the mean (t)", level), ci(a.t.ci)},
  };
  if (a.normal_limit) {  // n > kBootstrapMaxPairs: no resampling (stats/bootstrap.hpp)
    rows.push_back({fmt::format("{}% CI of the median (order statistics, normal limit: n > {})", level,
                                stats::kBootstrapMaxPairs),
                    ci(b.median.percentile)});
    return rows;
  }
  rows.push_back({fmt::format("{}% CI of the mean (bootstrap percentile, {})", level, resamples_text(b.mean.resamples)),
                  ci(b.mean.percentile)});
  rows.push_back({fmt::format("{}% CI of the mean (bootstrap BCa)", level), ci(b.mean.bca)});
  rows.push_back({fmt::format("{}% CI of the median (bootstrap percentile)", level), ci(b.median.percentile)});
  rows.push_back({fmt::format("{}% CI of the median (bootstrap BCa)", level), ci(b.median.bca)});
  return rows;
}

Rows test_rows(const stats::PairedAnalysis& a) {
  const auto& w = a.wilcoxon;
  Rows rows{
      {"paired t", fmt::format("t={:.4g}, df={:g}, two-sided p={}", a.t.t, a.t.df, pv(a.t.p))},
      {"Wilcoxon signed-rank",
       fmt::format("W+={:g}, W-={:g}, n={}, z={:.3f}, p(normal)={}, p(exact)={}", w.w_plus, w.w_minus, w.n_nonzero,
                   w.z, pv(w.p_normal), w.p_exact ? pv(*w.p_exact) : "n/a")},
      {"sign test", fmt::format("{}/{} pairs positive, two-sided p={}", a.sign.positive, a.sign.n, pv(a.sign.p))},
  };
  std::string outliers = a.outliers.empty() ? "none" : "";
  for (std::size_t i = 0; i < a.outliers.size(); ++i) {
    const auto& x = a.outliers[i];
    outliers += fmt::format("{}{} (pair {}, {} {})", i ? ", " : "", sg(x.value), x.index,
                            stats::to_string(x.side), stats::to_string(x.severity));
  }
  rows.emplace_back("Tukey outliers of the delta", outliers);
  rows.emplace_back("drift (Spearman vs pair index)",
                    fmt::format("base rho={:+.3f} p={}; delta rho={:+.3f} p={}", a.drift.base.rho,
                                pv(a.drift.base.p), a.drift.delta.rho, pv(a.drift.delta.p)));
  if (a.predicted) {
    const auto& c = a.predicted->check;
    const std::string pm = c.half_width > 0 ? fmt::format(" +- {}", g(c.half_width)) : "";
    rows.emplace_back("predicted delta", sg(a.predicted->value) + pm);
    rows.emplace_back("measured - predicted", fmt::format("{}, CI {}", sg(c.difference), ci(c.difference_ci)));
    rows.emplace_back("measured / predicted (Fieller)",
                      c.ratio_bounded ? fmt::format("{:.3f}x, CI [{:.3f}, {:.3f}]", c.ratio, c.ratio_ci.low,
                                                    c.ratio_ci.high)
                                      : fmt::format("{:.3f}x, CI unbounded", c.ratio));
    rows.emplace_back("prediction verdict", c.holds ? "holds (the difference's CI contains 0)"
                                                    : "fails (the difference's CI excludes 0)");
  }
  return rows;
}

std::string text_rows(const Rows& rows) {
  std::size_t width = 0;
  for (const auto& r : rows) width = std::max(width, r.first.size());
  std::string out;
  for (const auto& [k, v] : rows) out += fmt::format("  {:<{}}  {}\n", k, width, v);
  return out;
}

std::string md_rows(const std::string& head, const Rows& rows) {
  std::string out = fmt::format("| {} | Value |\n|---|---|\n", head);
  for (const auto& [k, v] : rows) out += fmt::format("| {} | {} |\n", k, v);
  return out;
}

std::vector<std::string> notes_of(const stats::PairedAnalysis& a, const StudyDiagnostics* d) {
  std::vector<std::string> notes = a.guidance;
  if (d) notes.insert(notes.end(), d->notes.begin(), d->notes.end());
  return notes;
}

std::string study_line(const StudyDiagnostics& d) {
  return fmt::format("Study: {} of {} pairs completed ({} base-first, {} candidate-first), {} failed runs, {} "
                     "excluded pairs; order effect: base-first mean delta {}, candidate-first {}{}.",
                     d.num_completed, d.num_pairs_planned, d.num_ab, d.num_ba, d.failed_runs, d.excluded.size(),
                     sg(d.mean_delta_ab), sg(d.mean_delta_ba),
                     d.order_test ? fmt::format(" (Welch p={})", pv(d.order_test->p)) : "");
}

std::vector<std::string> sequential_lines(const stats::SequentialResult* s) {
  if (!s) return {};
  return {stats::sequential_summary(*s), stats::sequential_fixed_n_note()};
}

}  // namespace

json analysis_json(const stats::PairedAnalysis& a, const stats::PairedOptions& o, const StudyDiagnostics* d,
                   const stats::SequentialResult* seq) {
  const auto& b = a.bootstrap;
  json outliers = json::array();
  for (const auto& x : a.outliers) {
    outliers.push_back({{"index", x.index}, {"value", x.value}, {"kind", stats::to_string(x.side)},
                        {"severity", stats::to_string(x.severity)}});
  }
  json j = {
      {"schema", "layerbench-ab-analysis/1"},
      {"n", a.n},
      {"base", arm(a.base)},
      {"candidate", arm(a.candidate)},
      {"delta",
       {{"mean", a.delta.mean}, {"median", a.delta.median}, {"trimmed_mean", a.delta.trimmed_mean},
        {"trim", a.delta.trim}, {"sd", a.delta.sd}, {"se", a.delta.se}, {"mean_pct", num(a.delta.mean_pct)},
        {"median_pct", num(a.delta.median_pct)}, {"trimmed_mean_pct", num(a.delta.trimmed_mean_pct)}}},
      {"t_test", {{"t", num(a.t.t)}, {"df", a.t.df}, {"p", num(a.t.p)}}},
      {"t_ci", {{"confidence", o.confidence}, {"low", num(a.t.ci.low)}, {"high", num(a.t.ci.high)}}},
      {"bootstrap",
       {{"method", a.normal_limit ? "normal_limit" : "bootstrap"}, {"resamples", b.mean.resamples}, {"seed", b.mean.seed}, {"percentile", interval(b.mean.percentile)},
        {"bca", interval(b.mean.bca)}, {"median_percentile", interval(b.median.percentile)},
        {"median_bca", interval(b.median.bca)}}},
      {"wilcoxon",
       {{"w_plus", a.wilcoxon.w_plus}, {"w_minus", a.wilcoxon.w_minus}, {"n_nonzero", a.wilcoxon.n_nonzero},
        {"z", num(a.wilcoxon.z)}, {"p_normal", num(a.wilcoxon.p_normal)},
        {"p_exact", a.wilcoxon.p_exact ? num(*a.wilcoxon.p_exact) : json(nullptr)},
        {"zero_method", stats::to_string(o.zero_method)}, {"continuity", o.continuity}}},
      {"sign_test", {{"positive", a.sign.positive}, {"negative", a.sign.negative}, {"n", a.sign.n}, {"p", a.sign.p}}},
      {"outliers", outliers},
      {"drift",
       {{"base_rho", num(a.drift.base.rho)}, {"base_p", num(a.drift.base.p)}, {"delta_rho", num(a.drift.delta.rho)},
        {"delta_p", num(a.drift.delta.p)}}},
      {"predicted", a.predicted ? prediction_json(*a.predicted) : json(nullptr)},
      {"warnings", a.warnings},
      {"guidance", a.guidance},
  };
  if (d) {
    j["diagnostics"] = {
        {"pairs_planned", d->num_pairs_planned},
        {"pairs_completed", d->num_completed},
        {"order", {{"base_first", d->num_ab}, {"candidate_first", d->num_ba},
                   {"mean_delta_base_first", num(d->mean_delta_ab)},
                   {"mean_delta_candidate_first", num(d->mean_delta_ba)},
                   {"p", d->order_test ? num(d->order_test->p) : json(nullptr)}}},
        {"drift", {{"base_rho", num(d->base_drift.rho)}, {"base_p", num(d->base_drift.p)},
                   {"candidate_rho", num(d->candidate_drift.rho)}, {"candidate_p", num(d->candidate_drift.p)}}},
        {"failed_runs", d->failed_runs},
        {"excluded_pairs", d->excluded},
        {"inconclusive", d->inconclusive},
        {"plan", d->plan ? json{{"n_normal", d->plan->n_normal}, {"n_t", d->plan->n_t},
                                {"n_exact", d->plan->n_exact}, {"recommended", d->plan->recommended}}
                         : json(nullptr)},
        {"output_check", d->output_checked ? json{{"identical_pairs", d->identical_pairs},
                                                  {"differing_pairs", d->differing_pairs},
                                                  {"missing", d->missing_outputs}}
                                           : json(nullptr)},
        {"notes", d->notes},
    };
  }
  if (seq) j["sequential"] = reports::sequential_json(*seq);
  return j;
}

std::string analysis_text(const stats::PairedAnalysis& a, const stats::PairedOptions& o, const StudyDiagnostics* d,
                          const stats::SequentialResult* seq) {
  std::string out = fmt::format("{:<10} {:>12} {:>12} {:>12} {:>12} {:>12}\n", "Arm", "median", "mean", "sd",
                                "min", "max");
  for (const auto& [name, s] : {std::pair{"base", a.base}, std::pair{"candidate", a.candidate}}) {
    out += fmt::format("{:<10} {:>12} {:>12} {:>12} {:>12} {:>12}\n", name, g(s.median), g(s.mean), g(s.sd),
                       g(s.min), g(s.max));
  }
  out += fmt::format("\nPaired delta (base minus candidate; positive = candidate lower), n={}:\n", a.n);
  out += text_rows(delta_rows(a, o));
  out += "\nTests:\n" + text_rows(test_rows(a));
  if (d) out += "\n" + study_line(*d) + "\n";
  if (seq) {
    out += "\nSequential:\n";
    for (const auto& s : sequential_lines(seq)) out += "  " + s + "\n";
  }
  out += "\nReading guidance:\n";
  for (const auto& s : notes_of(a, d)) out += "  - " + s + "\n";
  if (!a.warnings.empty()) {
    out += "\nWarnings:\n";
    for (const auto& w : a.warnings) out += "  - " + w + "\n";
  }
  return out;
}

std::string analysis_markdown(const stats::PairedAnalysis& a, const stats::PairedOptions& o,
                              const StudyDiagnostics* d, const stats::SequentialResult* seq) {
  std::string out = "| Arm | median | mean | sd | min | max |\n|---|---|---|---|---|---|\n";
  for (const auto& [name, s] : {std::pair{"base", a.base}, std::pair{"candidate", a.candidate}}) {
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", name, g(s.median), g(s.mean), g(s.sd), g(s.min),
                       g(s.max));
  }
  out += fmt::format("\nPaired delta (base minus candidate), n={}:\n\n", a.n);
  out += md_rows("Statistic", delta_rows(a, o));
  out += "\n" + md_rows("Test", test_rows(a));
  if (d) out += "\n" + study_line(*d) + "\n";
  if (seq) {
    out += "\n**Sequential:** " + sequential_lines(seq)[0] + "\n\n_" + sequential_lines(seq)[1] + "_\n";
  }
  out += "\n**How to read this:**\n\n";
  for (const auto& s : notes_of(a, d)) out += "- " + s + "\n";
  for (const auto& w : a.warnings) out += "- Warning: " + w + "\n";
  return out;
}

}  // namespace layerbench::ab
