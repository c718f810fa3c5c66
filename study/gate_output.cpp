#include "study/gate_output.hpp"
#include "common/json_number.hpp"

#include "reports/sequential.hpp"
#include "stats/bootstrap.hpp"

#include "reports/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <cmath>

namespace layerbench::gate {
namespace {

std::string pct(double fraction) { return reports::fmt_signed(100 * fraction, 2, "%"); }

std::string ci_text(const Finding& f) {
  if (std::isnan(f.ci.low)) return "—";
  return fmt::format("[{}, {}]", pct(f.ci.low), pct(f.ci.high));
}

std::string p_text(const Finding& f) {
  if (f.paired) return fmt::format("{} (worse) / {} (better)", reports::fmt_p(f.p_worse), reports::fmt_p(f.p_better));
  return reports::fmt_p(f.p_worse);
}

std::string sig4(double v) { return std::isfinite(v) ? fmt::format("{:.4g}", v) : "—"; }

std::string verdict_text(const Finding& f, const GateOptions& o) { return verdict_label(f, o); }

reports::Table table(const GateReport& r) {
  reports::Table t;
  t.headers = {r.paired ? "metric" : "benchmark", "verdict", "change", fmt::format("CI ({:.4g}%)", 100 * (r.paired ? 1 - 2 * r.options.alpha : 1 - r.options.alpha)),
               "p", r.paired ? "pairs" : "n base/cand",
               fmt::format("base {}{}", r.paired ? "mean" : "median", r.unit.empty() ? "" : " (" + r.unit + ")"),
               fmt::format("candidate {}{}", r.paired ? "mean" : "median", r.unit.empty() ? "" : " (" + r.unit + ")")};
  t.align = {reports::Align::left, reports::Align::left};
  for (const auto& f : r.findings)
    t.add_row({f.name, verdict_text(f, r.options), std::isnan(f.change) ? "—" : pct(f.change), ci_text(f), p_text(f),
               f.paired ? std::to_string(f.n_base) : fmt::format("{}/{}", f.n_base, f.n_candidate),
               sig4(f.base_center), sig4(f.candidate_center)});
  return t;
}

std::string rule_text(const GateReport& r) {
  const auto& o = r.options;
  const std::string worse = o.higher_is_better ? "lower" : "higher";
  if (!r.findings.empty() && r.findings.front().sequential) {
    const auto& d = r.findings.front().sequential->design;
    return fmt::format(
        "Rule (paired, sequential): the always-valid {:.4g}% confidence sequence of the mean delta (Lai 1976), "
        "replayed pair by pair, stops at the first of: it lies wholly beyond +-{} of the base mean, it lies inside "
        "+-{}, or {}; regressed iff it stopped with its interval of the relative change wholly beyond {}{}. "
        "Exit 3 while it has not stopped (add pairs and run again).",
        100 * (1 - d.alpha), reports::fmt_percent(d.effect_margin, 2), reports::fmt_percent(d.equivalence, 2),
        d.max_pairs ? fmt::format("{} pairs", d.max_pairs) : std::string("no cap"), worse == "higher" ? "+" : "-",
        reports::fmt_percent(o.threshold, 2));
  }
  if (r.paired) {
    // What the finding used: the exact Wilcoxon up to 200 pairs, and above stats::kBootstrapMaxPairs
    // pairs the delta-method (normal-limit) bound instead of the bootstrap.
    const auto* f = r.findings.empty() ? nullptr : &r.findings.front();
    const bool exact = !f || f->test.find("exact") != std::string::npos;
    const bool normal_limit = f && f->normal_limit;
    return fmt::format(
        "Rule (paired): regressed iff the one-sided {} p < {} and the one-sided {:.4g}% {} of the relative change of "
        "the means is {} than {}{}; improvements likewise in the other direction. {}",
        exact ? "exact Wilcoxon signed-rank" : "Wilcoxon signed-rank (normal approximation)", o.alpha,
        100 * (1 - o.alpha), normal_limit ? "delta-method (normal-limit) bound" : "bootstrap bound",
        worse == "higher" ? "more" : "less", worse == "higher" ? "+" : "-", reports::fmt_percent(o.threshold, 2),
        normal_limit ? fmt::format("{} pairs, more than {}: the normal limit replaces the bootstrap.", f->n_base,
                                   stats::kBootstrapMaxPairs)
                     : fmt::format("{} resamples, seed {}.", o.resamples, o.seed));
  }
  return fmt::format(
      "Rule (unpaired): regressed iff the two-sided Mann-Whitney U p < {} and the whole {:.4g}% bootstrap interval of "
      "the ratio of medians is beyond {}{} in the worse ({}) direction; improvements likewise. {} resamples, seed {}.",
      o.alpha, 100 * (1 - o.alpha), worse == "higher" ? "+" : "-", reports::fmt_percent(o.threshold, 2), worse,
      o.resamples, o.seed);
}

std::size_t count(const GateReport& r, Verdict v) {
  return static_cast<std::size_t>(std::count_if(r.findings.begin(), r.findings.end(), [v](const auto& f) { return f.verdict == v; }));
}

std::string headline(const GateReport& r) {
  std::map<std::string, std::size_t> by_label;
  for (const auto& f : r.findings) ++by_label[verdict_label(f, r.options)];
  std::string counts;
  for (const auto& label : {std::string("regressed beyond the threshold"), std::string("improved beyond the threshold"),
                            std::string("significant, size not resolved"),
                            "no change larger than " + fmt::format("{:g}%", 100 * r.options.threshold)}) {
    counts += fmt::format("{}{} {}", counts.empty() ? "" : "; ", by_label[label], label);
    by_label.erase(label);
  }
  std::size_t rest = 0;  // inconclusive, with or without a note
  for (const auto& [label, n] : by_label) rest += n;
  return fmt::format("{}: {}; {} inconclusive",
                     exit_code(r) == kExitRegression ? "FAIL" : exit_code(r) == kExitUndecided ? "UNDECIDED" : "PASS",
                     counts, rest);
}

}  // namespace

int exit_code(const GateReport& report) {
  if (count(report, Verdict::regressed) > 0) return kExitRegression;
  for (const auto& f : report.findings) {
    if (f.undecided) return kExitUndecided;
  }
  return kExitPass;
}

reports::Section gate_section(const GateReport& r) {
  reports::Section s;
  s.title = "Performance gate: " + headline(r);
  s.intro = fmt::format("Baseline `{}`, candidate `{}`, metric `{}`{}.", r.base_source, r.candidate_source, r.metric,
                        r.options.higher_is_better ? " (higher is better)" : " (lower is better)");
  s.tables.push_back(table(r));
  for (const auto& k : r.only_base) s.notes.push_back("only in baseline (not gated): `" + k + "`");
  for (const auto& k : r.only_candidate) s.notes.push_back("only in candidate (not gated): `" + k + "`");
  for (const auto& f : r.findings) {
    if (f.sequential) s.notes.push_back(stats::sequential_summary(*f.sequential));
  }
  for (const auto& w : r.warnings) s.notes.push_back("Warning: " + w);
  s.notes.push_back(rule_text(r));
  return s;
}

nlohmann::json to_json(const GateReport& r) {
  nlohmann::json j;
  j["schema"] = "layerbench-gate/1";
  j["result"] = exit_code(r) == kExitRegression ? "fail" : exit_code(r) == kExitUndecided ? "undecided" : "pass";
  j["paired"] = r.paired;
  j["base"] = r.base_source;
  j["candidate"] = r.candidate_source;
  j["metric"] = r.metric;
  j["unit"] = r.unit;
  j["options"] = {{"threshold", r.options.threshold}, {"alpha", r.options.alpha},
                  {"higher_is_better", r.options.higher_is_better}, {"resamples", r.options.resamples},
                  {"seed", r.options.seed}};
  j["findings"] = nlohmann::json::array();
  for (const auto& f : r.findings)
    j["findings"].push_back({{"name", f.name}, {"verdict", std::string(to_string(f.verdict))},
                             {"label", verdict_label(f, r.options)}, {"note", f.note},
                             {"test", f.test}, {"n_base", f.n_base}, {"n_candidate", f.n_candidate},
                             {"base_center", finite_or_null(f.base_center)}, {"candidate_center", finite_or_null(f.candidate_center)},
                             {"change", finite_or_null(f.change)}, {"ci", {finite_or_null(f.ci.low), finite_or_null(f.ci.high)}},
                             {"ci_level", f.ci_level}, {"p_worse", finite_or_null(f.p_worse)}, {"p_better", finite_or_null(f.p_better)},
                             {"need", f.need}});
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    if (r.findings[i].sequential) j["findings"][i]["sequential"] = reports::sequential_json(*r.findings[i].sequential);
  }
  j["only_base"] = r.only_base;
  j["only_candidate"] = r.only_candidate;
  j["warnings"] = r.warnings;
  return j;
}

}  // namespace layerbench::gate
