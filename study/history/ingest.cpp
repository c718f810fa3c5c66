#include "study/history/ingest.hpp"
#include "common/json_text.hpp"

#include "common/text.hpp"
#include "common/usage.hpp"
#include "reports/inputs.hpp"
#include "reports/gbench_json.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

namespace layerbench::history {
namespace {

using nlohmann::json;

std::string params_text(const json& params, const std::string& name) {
  std::string out;
  for (const auto& [k, v] : params.items())
    if (!(k == "op" && v == name)) out += fmt::format("{}{}={}", out.empty() ? "" : ", ", k, v.is_string() ? v.get<std::string>() : json_text(v));
  return out;
}

std::string display_name(const std::string& name, const std::string& group, const std::string& params) {
  std::string d = name;
  if (!group.empty()) d += " (" + group + ")";
  if (!params.empty()) d += " [" + params + "]";
  return d;
}

std::string layerbench_machine(const json& context) {
  if (!context.contains("ranks") || !context["ranks"].is_array() || context["ranks"].empty()) return {};
  const auto& r = context["ranks"][0];
  std::string m = r.value("host", std::string{});
  const std::string dev = r.value("device", std::string{});
  if (!dev.empty() && dev != "host") m += " (" + dev + ")";
  if (context.contains("world_size") && context["world_size"].is_number_integer())
    m += fmt::format(" x{}", context["world_size"].get<long long>());
  return m;
}

ResultSamples from_layerbench(const json& doc, const std::string& path) {
  const auto file = reports::result_file_from_json(doc, path);
  ResultSamples r{path, "layerbench", layerbench_machine(file.context), {}};
  for (const auto& m : file.results)
    r.series.push_back({display_name(m.name, m.group, params_text(m.params, m.name)), "time", "ms", m.samples_ms});
  return r;
}

ResultSamples from_gbench(const json& doc, const std::string& path) {
  ResultSamples r{path, "gbench", {}, {}};
  if (doc.contains("context") && doc["context"].is_object()) r.machine = doc["context"].value("host_name", std::string{});
  std::map<std::string, std::size_t> index;
  for (const auto& e : reports::read_gbench_entries(doc, path)) {
    if (e.aggregate || e.error) continue;
    const auto v = e.value_ns("real_time");
    if (!v) continue;
    auto [it, added] = index.try_emplace(e.run_name, r.series.size());
    if (added) r.series.push_back({e.run_name, "real_time", "ns", {}});
    r.series[it->second].samples.push_back(*v);
  }
  return r;
}

bool is_hyperfine(const json& doc) {
  if (!doc.is_object() || !doc.contains("results") || !doc["results"].is_array() || doc["results"].empty()) return false;
  const auto& first = doc["results"][0];
  return first.is_object() && first.contains("command") && first.contains("times");
}

ResultSamples from_hyperfine(const json& doc, const std::string& path) {
  ResultSamples r{path, "hyperfine", {}, {}};
  for (const auto& res : doc["results"]) {
    if (!res.is_object() || !res.contains("command") || !res["command"].is_string() || !res.contains("times") ||
        !res["times"].is_array())
      throw std::runtime_error("a results[] entry without a command and its times");
    SampleSeries s{res["command"].get<std::string>(), "time", "s", {}};
    for (const auto& t : res["times"]) {
      if (!t.is_number()) throw std::runtime_error(fmt::format("'{}': a time that is not a number", s.benchmark));
      s.samples.push_back(t.get<double>());
    }
    r.series.push_back(std::move(s));
  }
  return r;
}

bool is_ab_analysis(const json& doc) {
  if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_string()) return false;
  const auto s = doc["schema"].get<std::string>();
  return s == "layerbench-ab-analysis/1" || s == "layerbench-ab-analyses/1";
}

void add_analysis(const json& a, ResultSamples& r) {
  // "metric" is {"name", "spec", "unit"} in layerbench-ab's analysis, a plain name elsewhere.
  std::string metric = "value", unit = a.contains("unit") && a["unit"].is_string() ? a["unit"].get<std::string>() : "";
  if (a.contains("metric") && a["metric"].is_string()) metric = a["metric"].get<std::string>();
  if (a.contains("metric") && a["metric"].is_object()) {
    metric = a["metric"].value("name", metric);
    unit = a["metric"].value("unit", unit);
  }
  const json labels = a.value("labels", json::object());
  for (const char* arm : {"base", "candidate"}) {
    if (!a.contains(arm) || !a[arm].is_object() || !a[arm].contains("median") || !a[arm]["median"].is_number())
      throw std::runtime_error(fmt::format("analysis without the {} arm's median", arm));
    const std::string label = labels.value(arm, std::string{arm});
    r.series.push_back({"ab " + label, metric, unit, {a[arm]["median"].get<double>()}});
  }
}

ResultSamples from_ab_analysis(const json& doc, const std::string& path) {
  ResultSamples r{path, "ab-analysis", {}, {}};
  if (doc["schema"] == "layerbench-ab-analyses/1") {
    for (const auto& a : doc.value("analyses", json::array())) add_analysis(a, r);
  } else {
    add_analysis(doc, r);
  }
  return r;
}

ResultSamples from_study(const std::string& text, const std::string& path, bool jsonl) {
  ResultSamples r{path, "study", {}, {}};
  auto study = jsonl ? reports::parse_study_jsonl(text, path) : reports::parse_study_csv(text, path);
  std::string metric = study.metric;
  const std::vector<std::string> names{study.base_label, study.candidate_label};
  auto& base = study.base;
  auto& candidate = study.candidate;
  if (metric.empty()) metric = "value";
  // A study's metric is its --metric spec ("time_ms=regex:..."): the name is what precedes '='.
  if (const auto eq = metric.find('='); eq != std::string::npos && eq > 0) metric.resize(eq);
  const std::string unit = reports::unit_of_metric(metric);
  r.series.push_back({"ab " + names[0], metric, unit, std::move(base)});
  r.series.push_back({"ab " + names[1], metric, unit, std::move(candidate)});
  return r;
}

constexpr std::string_view kAbRunsHeader = "pair,attempt,arm,name,position,start,status,exit,wall_s,";

ResultSamples from_ab_runs(const std::string& text, const std::string& path) {
  ResultSamples r{path, "ab-runs", {}, {}};
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  std::map<std::string, std::size_t> index;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto cells = reports::split_csv_line(line);
    if (header.empty()) {
      header = cells;
      continue;
    }
    if (cells.size() != header.size())
      throw std::runtime_error(fmt::format("line {}: {} cells, the header has {}", line_no, cells.size(), header.size()));
    if (cells[6] != "ok") continue;
    for (std::size_t c = 8; c < cells.size(); ++c) {
      if (header[c] == "user_s" || header[c] == "sys_s" || header[c] == "peak_rss_kib" || cells[c].empty()) continue;
      std::size_t used = 0;
      double v = 0;
      try {
        v = std::stod(cells[c], &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != cells[c].size())
        throw std::runtime_error(fmt::format("line {}: column {}: '{}' is not a number", line_no, header[c], cells[c]));
      const std::string& col = header[c];
      const auto us = col.rfind('_');
      const std::string metric = col == "wall_s" ? "wall" : col;
      const std::string unit = col == "wall_s" ? "s" : us == std::string::npos ? "" : col.substr(us + 1);
      auto [it, added] = index.try_emplace(cells[3] + "\x1f" + col, r.series.size());
      if (added) r.series.push_back({"ab " + cells[3], metric, unit, {}});
      r.series[it->second].samples.push_back(v);
    }
  }
  return r;
}

// The params cell of each row ("k=v;k=v"), in row order: the CSV reader keeps the figures only.
std::vector<std::string> csv_params(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> out;
  std::size_t col = std::string::npos;
  bool header = true;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const auto cells = reports::split_csv_line(line);
    if (header) {
      col = static_cast<std::size_t>(std::find(cells.begin(), cells.end(), "params") - cells.begin());
      header = false;
      continue;
    }
    std::string p = col < cells.size() ? cells[col] : "";
    std::string shown;  // "k=v, k=v" as the JSON reader names them, without the op
    std::istringstream kv(p);
    for (std::string item; std::getline(kv, item, ';');)
      if (item.rfind("op=", 0) != 0) shown += (shown.empty() ? "" : ", ") + item;
    out.push_back(shown);
  }
  return out;
}

ResultSamples from_results_csv(const std::string& text, const std::string& path) {
  ResultSamples r{path, "results-csv", {}, {}};
  const auto rows = reports::parse_results_csv(text, path);
  const auto params = csv_params(text);
  for (std::size_t i = 0; i < rows.size(); ++i)
    r.series.push_back({display_name(rows[i].name, rows[i].group, i < params.size() ? params[i] : ""), "time", "ms",
                        {rows[i].median_ms}});
  return r;
}

ResultSamples dispatch(const std::string& path, const std::string& text) {
  const auto t = text::strip_bom(text);
  if (t.rfind(kAbRunsHeader, 0) == 0) return from_ab_runs(std::string(t), path);
  switch (reports::sniff_input(path)) {
    case reports::InputKind::results_csv: return from_results_csv(std::string(t), path);
    case reports::InputKind::study_jsonl: return from_study(std::string(t), path, true);
    case reports::InputKind::study_csv: return from_study(std::string(t), path, false);
    case reports::InputKind::layerbench_json: return from_layerbench(reports::read_json_file(path), path);
    case reports::InputKind::gbench_json: return from_gbench(reports::read_json_file(path), path);
    case reports::InputKind::hyperfine_json:
    case reports::InputKind::analysis_json:
    case reports::InputKind::other_json: {
      const auto doc = reports::read_json_file(path);
      if (is_hyperfine(doc)) return from_hyperfine(doc, path);
      if (is_ab_analysis(doc)) return from_ab_analysis(doc, path);
      break;
    }
    default: break;
  }
  throw std::runtime_error(
      "not a result file (expected layerbench JSON or CSV, a layerbench-ab study, runs CSV or analysis JSON, Google "
      "Benchmark JSON or hyperfine JSON)");
}

}  // namespace

ResultSamples read_results(const std::string& path) {
  const auto text = text::read_file(path);
  if (!text) throw UsageError(path + ": cannot open file");
  ResultSamples r;
  try {
    r = dispatch(path, *text);
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    throw UsageError(what.rfind(path, 0) == 0 ? what : path + ": " + what);
  }
  std::size_t total = 0;
  for (const auto& s : r.series) {
    for (double v : s.samples)
      if (!(v > 0) || !std::isfinite(v))
        throw UsageError(fmt::format("{}: '{}' has the sample {}: only positive finite values are kept", path, s.benchmark, v));
    total += s.samples.size();
  }
  if (total == 0) throw UsageError(path + ": no samples in this result file");
  return r;
}

}  // namespace layerbench::history
