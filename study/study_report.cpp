#include "study/study_report.hpp"
#include "common/json_number.hpp"
#include "common/number_text.hpp"
#include "common/text.hpp"

#include <atomic>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "study/diagnostics.hpp"
#include "study/errors.hpp"
#include "study/metric.hpp"
#include "reports/inputs.hpp"
#include "reports/paired.hpp"
#include "reports/table.hpp"
#include "study/telemetry.hpp"
#include "stats/multiplicity.hpp"
#include "stats/sequential.hpp"

namespace layerbench::ab {
namespace {

using nlohmann::json;


std::vector<MetricSpec> study_metrics(const StudyConfig& c) {
  std::vector<std::string> texts{c.metric};
  texts.insert(texts.end(), c.metrics.begin(), c.metrics.end());
  try {
    return parse_metrics(texts);
  } catch (const InputError&) {
    // A file written by another version may name a metric this one cannot parse: keep its name.
    std::vector<MetricSpec> specs;
    for (const auto& t : texts) {
      MetricSpec m;
      m.name = m.text = t;
      specs.push_back(m);
    }
    return specs;
  }
}

void holm(std::vector<Comparison*>& family) {
  std::vector<double> p;
  for (const auto* c : family) p.push_back(c->p);
  const auto adjusted = stats::holm_adjust(p);
  for (std::size_t i = 0; i < family.size(); ++i) family[i]->p_holm = adjusted[i];
}

json comparison_json(const Comparison& c, const stats::PairedOptions& o) {
  const auto& a = c.analysis;
  return {{"candidate", c.candidate.key},
          {"name", c.candidate.name},
          {"metric", c.metric},
          {"unit", c.unit},
          {"n", a.n},
          {"base_median", finite_or_null(a.base.median)},
          {"candidate_median", finite_or_null(a.candidate.median)},
          {"delta_mean", finite_or_null(a.delta.mean)},
          {"delta_mean_pct", finite_or_null(a.delta.mean_pct)},
          {"t_ci", {{"confidence", o.confidence}, {"low", finite_or_null(a.t.ci.low)}, {"high", finite_or_null(a.t.ci.high)}}},
          {"p_t", finite_or_null(a.t.p)},
          {"p_wilcoxon", finite_or_null(c.p)},
          {"p_holm", finite_or_null(c.p_holm)},
          {"significant", c.p_holm < a.alpha}};
}

reports::Table comparisons_table(const std::vector<Comparison>& cs) {
  const int level = cs.empty() ? 95 : static_cast<int>(std::lround(100 * (1 - cs.front().analysis.alpha)));
  reports::Table t;
  t.headers = {"arm", "metric", "n", "base median", "arm median", "mean delta (arm - base)",
               fmt::format("{}% CI (t)", level), "Wilcoxon p", "Holm p"};
  t.align = {reports::Align::left, reports::Align::left};
  for (const auto& c : cs) {
    const auto& a = c.analysis;
    t.add_row({c.candidate.name, c.unit.empty() ? c.metric : fmt::format("{} ({})", c.metric, c.unit),
               std::to_string(a.n), text::number(a.base.median), text::number(a.candidate.median),
               fmt::format("{} ({})", text::signed_number(a.delta.mean), text::signed_percent(a.delta.mean_pct)),
               fmt::format("[{}, {}]", text::signed_number(a.t.ci.low), text::signed_number(a.t.ci.high)),
               text::number(c.p), text::number(c.p_holm)});
  }
  return t;
}

std::string multiplicity_sentence(const std::vector<Comparison>& cs, std::size_t candidates) {
  return fmt::format("Multiplicity: each metric compares {} candidate{} against the base; the Holm p-values "
                     "(step-down over the {} candidate{} of a metric) control the family-wise error rate at alpha "
                     "= {:.3g}; metrics other than the first are descriptive.",
                     candidates, candidates == 1 ? "" : "s", candidates, candidates == 1 ? "" : "s",
                     cs.empty() ? 0.05 : cs.front().analysis.alpha);
}


}  // namespace

std::vector<Comparison> compare_arms(const Study& study, const stats::PairedOptions& options) {
  const auto arms = arms_of(study.config);
  const auto metrics = study_metrics(study.config);
  std::vector<Comparison> out;
  for (std::size_t a = 1; a < arms.size(); ++a) {
    const auto pairs = completed_pairs(study, arms[a].key);
    for (std::size_t m = 0; m < metrics.size(); ++m) {
      std::vector<double> base, candidate;
      for (const auto& p : pairs) {
        if (m == 0) {
          base.push_back(p.base);
          candidate.push_back(p.candidate);
          continue;
        }
        const auto& bm = p.base_run->metrics;
        const auto& cm = p.candidate_run->metrics;
        const auto bi = bm.find(metrics[m].name), ci = cm.find(metrics[m].name);
        if (bi != bm.end() && ci != cm.end()) {
          base.push_back(bi->second);
          candidate.push_back(ci->second);
        }
      }
      if (base.size() < 2) continue;
      Comparison c{arms[a], metrics[m].name, metrics[m].unit, stats::analyze_paired(base, candidate, options)};
      c.p = c.analysis.wilcoxon.p_exact.value_or(c.analysis.wilcoxon.p_normal);
      out.push_back(std::move(c));
    }
  }
  for (const auto& m : metrics) {
    std::vector<Comparison*> family;
    for (auto& c : out) {
      if (c.metric == m.name) family.push_back(&c);
    }
    holm(family);
  }
  return out;
}

namespace {
std::atomic<std::size_t> g_analyses{0};
}  // namespace

std::size_t study_analyses_run() { return g_analyses.load(); }

StudyAnalysis analyze_study(const Study& full, const stats::PairedOptions& options) {
  ++g_analyses;
  StudyAnalysis r;
  r.options = options;
  // A sequential study is analysed on the pairs up to its stop (later ones, if any, are ignored).
  r.sequential = sequential_state(full);
  r.study = r.sequential ? truncated_at_stop(full, *r.sequential) : full;
  const Study& study = r.study;
  const auto pairs = completed_pairs(study);
  for (const auto& p : pairs) {
    r.pair_ids.push_back(static_cast<long long>(p.pair));
    r.base.push_back(p.base);
    r.candidate.push_back(p.candidate);
  }
  if (r.base.size() < 2) throw InputError(fmt::format("only {} completed pairs; need at least 2", r.base.size()));
  r.analysis = stats::analyze_paired(r.base, r.candidate, options);
  r.diagnostics = diagnose(study, r.analysis);
  if (!study.config.telemetry.empty()) {
    std::vector<RunCovariates> cb, cc;
    for (const auto& p : pairs) {
      cb.push_back(covariates_of(p.base_telemetry));
      cc.push_back(covariates_of(p.candidate_telemetry));
    }
    r.telemetry = compare_telemetry(cb, cc, r.base, r.candidate, options);
    r.telemetry->status = study.config.telemetry_status;
  }
  r.arms = arms_of(study.config);
  r.metrics = study_metrics(study.config);
  // The table of every arm and metric, when there is more than the primary comparison to show.
  r.table = r.arms.size() > 2 || r.metrics.size() > 1;
  if (r.table) r.comparisons = compare_arms(study, options);
  return r;
}

namespace {
// The context of the primary comparison: names, unit, sequential stop, diagnostics.
reports::PairedContext primary_context(const StudyAnalysis& r) {
  reports::PairedContext ctx;
  ctx.metric = r.metrics.front().name;
  ctx.unit = r.metrics.front().unit;
  if (r.arms.size() >= 2) {
    ctx.base_label = r.arms[0].name;
    ctx.candidate_label = r.arms[1].name;
  }
  ctx.sequential = r.sequential ? &*r.sequential : nullptr;
  ctx.blocks.push_back(diagnostics_block(r.diagnostics));
  return ctx;
}
}  // namespace

nlohmann::json study_json(const StudyAnalysis& r) {
  auto j = reports::paired_json(r.analysis, r.options, primary_context(r));
  if (r.telemetry) j["telemetry"] = telemetry_json(*r.telemetry);
  const auto& metric = r.metrics.front();
  j["metric"] = {{"name", metric.name}, {"unit", metric.unit}, {"spec", metric.text}};
  json ja = json::array();
  for (const auto& a : r.arms) ja.push_back({{"key", a.key}, {"name", a.name}, {"command", a.command}});
  j["arms"] = ja;
  // The pairs themselves, so that every tool reads this file back as a paired study.
  j["pairs"] = reports::pairs_json(r.pair_ids, r.base, r.candidate);
  if (r.table) {
    json jc = json::array();
    for (const auto& c : r.comparisons) jc.push_back(comparison_json(c, r.options));
    j["comparisons"] = jc;
    j["multiplicity"] = {{"method", "holm"},
                         {"family", "the candidates of one metric"},
                         {"family_size", r.arms.size() - 1},
                         {"alpha", r.analysis.alpha},
                         {"note", multiplicity_sentence(r.comparisons, r.arms.size() - 1)}};
  }
  return j;
}

std::vector<reports::Section> study_sections(const StudyAnalysis& r) {
  std::string arms_line = "Arms:";
  for (const auto& a : r.arms) arms_line += fmt::format(" {} = '{}';", a.name, a.command);
  arms_line.back() = '.';
  const auto& primary = r.metrics.front();
  arms_line += fmt::format(" Primary metric: {}{}.", primary.name, primary.unit.empty() ? "" : " (" + primary.unit + ")");
  auto sections = reports::paired_sections(r.analysis, r.options, primary_context(r));
  sections.front().intro = arms_line + " " + sections.front().intro;
  if (r.telemetry) sections.push_back(telemetry_section(*r.telemetry));
  if (r.table) {
    reports::Section every;
    every.title = "Every arm against the base";
    every.tables.push_back(comparisons_table(r.comparisons));
    every.notes.push_back(multiplicity_sentence(r.comparisons, r.arms.size() - 1));
    sections.push_back(std::move(every));
  }
  return sections;
}

std::string runs_csv(const Study& study) {
  // Columns for the metrics read from the output or a file; times and peak RSS have their own.
  std::vector<MetricSpec> metrics;
  for (auto& m : study_metrics(study.config)) {
    using K = MetricSpec::Kind;
    if (m.kind != K::wall && m.kind != K::user && m.kind != K::sys && m.kind != K::peak_rss) metrics.push_back(m);
  }
  const bool primary_is_column = !metrics.empty() && metrics.front().text == study.config.metric;
  const auto arms = arms_of(study.config);
  std::string out = "pair,attempt,arm,name,position,start,status,exit,wall_s,user_s,sys_s,peak_rss_kib";
  for (const auto& m : metrics) out += "," + text::csv_cell(m.unit.empty() ? m.name : fmt::format("{}_{}", m.name, m.unit));
  out += "\n";
  for (const auto& r : study.runs) {
    std::string name = r.arm;
    for (const auto& a : arms) {
      if (a.key == r.arm) name = a.name;
    }
    out += fmt::format("{},{},{},{},{},{:.6f},{},{},{:.9g},{:.9g},{:.9g},{:.0f}", r.pair, r.attempt, r.arm,
                       text::csv_cell(name), r.position, r.start, r.status, r.exit_code, r.wall, r.user, r.sys,
                       r.peak_rss_kib);
    for (std::size_t i = 0; i < metrics.size(); ++i) {
      const auto it = r.metrics.find(metrics[i].name);
      const std::optional<double> v = i == 0 && primary_is_column ? r.metric
                                      : it != r.metrics.end()     ? std::optional(it->second)
                                                                  : std::nullopt;
      out += v ? fmt::format(",{:.12g}", *v) : ",";
    }
    out += "\n";
  }
  return out;
}

}  // namespace layerbench::ab
