// The paired-study readers: study JSONL (through the one reader of study files, study/study.hpp),
// CSV with base and candidate columns, layerbench-ab's --csv (runs) and --json (analysis with its
// pairs), and why a file of another kind holds no pairs.
#include "reports/inputs.hpp"
#include "common/json_text.hpp"
#include "common/usage.hpp"
#include "reports/inputs_detail.hpp"

#include "common/text.hpp"
#include "study/study.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

namespace layerbench::reports {

using namespace detail;

namespace {

// One candidate arm of a study read once (study/study.hpp: its one reader and pairing rule), with
// the report's and the gate's checks.
PairedStudy paired_of(const ab::Study& s, const std::string& path, const std::string& metric,
                      const std::string& candidate_arm) {
  auto study = ab::paired_values(s, path, metric, candidate_arm);
  ab::require_non_negative(study, path);
  if (study.base.empty()) throw UsageError(path + ": no complete base/candidate pairs");
  if (study.unit.empty()) study.unit = unit_of_metric(study.metric);
  return study;
}

PairedStudy study_of_text(const std::string& text, const std::string& path, const std::string& metric);

}  // namespace

PairedStudy parse_study_jsonl(const std::string& text, const std::string& path, const std::string& metric,
                              const std::string& candidate_arm) {
  return paired_of(ab::parse_study(text, path, ab::Keep::values), path, metric, candidate_arm);
}

std::vector<PairedStudy> load_studies(const std::string& path, const std::string& metric) {
  const std::string text = read_text_file(path);  // read once: a large study is hundreds of MB
  if (sniff_text(text, path) != InputKind::study_jsonl) return {study_of_text(text, path, metric)};
  const auto s = ab::parse_study(text, path, ab::Keep::values);
  std::vector<PairedStudy> out{paired_of(s, path, metric, "candidate")};
  for (std::size_t k = 0; k < s.config.more_candidates.size() && s.journal; ++k)
    out.push_back(paired_of(s, path, out.front().metric, fmt::format("candidate{}", k + 2)));
  return out;
}

namespace {

// A cell of a CSV study: a finite number (a leading '+' allowed).
double csv_value(const std::string& cell, const std::string& where, const std::string& column) {
  double v = 0;
  const char* first = cell.data();
  const char* last = first + cell.size();
  if (first != last && *first == '+') ++first;
  const auto [ptr, ec] = std::from_chars(first, last, v);
  if (cell.empty() || ec != std::errc() || ptr != last)
    throw UsageError(fmt::format("{}: column '{}': '{}' is not a number", where, column, cell));
  if (!std::isfinite(v)) throw UsageError(fmt::format("{}: column '{}': '{}' is not finite", where, column, cell));
  return v;
}

}  // namespace

PairedStudy study_csv_pairs(const std::string& text_in, const std::string& path) {
  PairedStudy study;
  study.path = path;
  study.metric = "value";
  std::istringstream in(std::string(text::strip_bom(text_in)));
  std::string line;
  std::vector<std::string> header;
  int base_col = -1, cand_col = -1, pair_col = -1;
  std::map<long long, std::pair<double, double>> pairs;
  long long next_id = 0;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    const auto t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    const auto cells = split_csv_cells(t);
    const auto where = fmt::format("{}:{}", path, line_no);
    if (header.empty()) {
      header = cells;
      for (std::size_t c = 0; c < cells.size(); ++c) {
        const auto h = lower(cells[c]);
        if (h == "base") base_col = static_cast<int>(c);
        else if (h == "candidate") cand_col = static_cast<int>(c);
        else if (h == "pair") pair_col = static_cast<int>(c);
      }
      for (const auto& [col, name] : {std::pair{base_col, "base"}, std::pair{cand_col, "candidate"}})
        if (col < 0)
          throw UsageError(
              fmt::format("{}: missing column '{}' (the header must name base and candidate)", where, name));
      continue;
    }
    if (cells.size() != header.size())
      throw UsageError(
          fmt::format("{}: ragged row: {} fields, the header has {}", where, cells.size(), header.size()));
    const long long id = pair_col >= 0 ? static_cast<long long>(csv_value(cells[pair_col], where, "pair")) : next_id;
    ++next_id;
    if (pairs.count(id)) throw UsageError(fmt::format("{}: pair {} appears twice", where, id));
    pairs[id] = {csv_value(cells[base_col], where, "base"), csv_value(cells[cand_col], where, "candidate")};
  }
  if (header.empty())
    throw UsageError(path + ":1: empty file (expected a header naming base and candidate)");
  for (const auto& [id, v] : pairs) {
    study.pair_ids.push_back(id);
    study.base.push_back(v.first);
    study.candidate.push_back(v.second);
  }
  return study;
}

PairedStudy parse_study_csv(const std::string& text, const std::string& path) {
  auto study = study_csv_pairs(text, path);
  std::map<long long, std::pair<double, double>> pairs;
  for (std::size_t i = 0; i < study.base.size(); ++i) pairs[study.pair_ids[i]] = {study.base[i], study.candidate[i]};
  study.pair_ids.clear();
  study.base.clear();
  study.candidate.clear();
  return assemble(std::move(pairs), std::move(study));
}

namespace {

// load_study of a file already read.
PairedStudy study_of_text(const std::string& text, const std::string& path, const std::string& metric) {
  const auto kind = sniff_text(text, path);
  switch (kind) {
    case InputKind::study_jsonl: return parse_study_jsonl(text, path, metric);
    case InputKind::study_csv: return parse_study_csv(text, path);
    case InputKind::runs_csv: return parse_runs_csv(text, path, metric);
    case InputKind::analysis_json: {
      auto study = study_from_analysis_json(read_json_file(path), path);
      if (!metric.empty() && metric != study.metric)
        throw UsageError(fmt::format("{}: the analysis holds the pairs of metric '{}' only, not '{}'", path,
                                             study.metric, metric));
      return study;
    }
    default: throw UsageError(not_paired_reason(path, kind));
  }
}

}  // namespace

PairedStudy load_study(const std::string& path, const std::string& metric) {
  return study_of_text(read_text_file(path), path, metric);
}

bool is_hyperfine_json(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains("results") || !doc["results"].is_array() || doc["results"].empty()) return false;
  for (const auto& r : doc["results"])
    if (!r.is_object() || !r.contains("command") || !r.contains("times")) return false;
  return true;
}

bool is_ab_study(std::string_view text) {
  text = text::strip_bom(text);
  while (!text.empty()) {
    const auto end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      return j.is_object() && j.value("type", std::string{}) == "study";
    }
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return false;
}

std::string not_paired_reason(const std::string& path, InputKind kind) {
  switch (kind) {
    case InputKind::hyperfine_json:
      return path + ": hyperfine --export-json: independent runs of each command, not interleaved pairs, so a paired "
                    "analysis does not apply; compare two such files with layerbench-gate --baseline/--candidate "
                    "(unpaired) or show them with layerbench-report, or measure pairs with layerbench-ab run";
    case InputKind::gbench_json:
      return path + ": Google Benchmark JSON: repetitions of each benchmark, not interleaved pairs; compare two such "
                    "files with layerbench-gate --baseline/--candidate (unpaired) or show them with layerbench-report";
    case InputKind::layerbench_json:
      return path + ": a layerbench result file (schema layerbench/N): per-iteration samples, not pairs; compare two "
                    "with layerbench-gate --baseline/--candidate or show it with layerbench-report";
    case InputKind::results_csv:
      return path + ": a layerbench results CSV (one row per measurement): summaries, not pairs; show it with "
                    "layerbench-report";
    case InputKind::trace_json:
      return path + ": a layerbench trace (--trace): slices on a time line, not pairs; show it with layerbench-report "
                    "or open it in Perfetto's UI";
    case InputKind::other_json:
      return path + ": a JSON document of another tool: neither a paired study, layerbench JSON, Google Benchmark "
                    "nor hyperfine JSON";
    default: break;
  }
  return path + ": not a paired study (JSONL with pair/arm records, CSV with base,candidate columns, or "
                "layerbench-ab --json/--csv)";
}

PairedStudy study_from_analysis_json(const nlohmann::json& doc, const std::string& path) {
  const auto& pairs = doc.contains("pairs") ? doc["pairs"] : nlohmann::json();
  if (!pairs.is_object() || !pairs.contains("base") || !pairs.contains("candidate"))
    throw UsageError(path + ": a layerbench-ab analysis without its pairs (written before analyses carried "
                                    "them): analyse the study file itself");
  PairedStudy st;
  st.path = path;
  try {
    st.base = pairs["base"].get<std::vector<double>>();
    st.candidate = pairs["candidate"].get<std::vector<double>>();
    if (pairs.contains("pair")) st.pair_ids = pairs["pair"].get<std::vector<long long>>();
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("{}: pairs: {}", path, e.what()));
  }
  if (st.base.size() != st.candidate.size() || (!st.pair_ids.empty() && st.pair_ids.size() != st.base.size()))
    throw UsageError(fmt::format("{}: pairs: {} base and {} candidate values", path, st.base.size(),
                                         st.candidate.size()));
  if (st.pair_ids.empty())
    for (std::size_t i = 0; i < st.base.size(); ++i) st.pair_ids.push_back(static_cast<long long>(i));
  const auto& m = doc.value("metric", nlohmann::json());
  st.metric = m.is_object() ? m.value("name", std::string("value")) : m.is_string() ? m.get<std::string>() : "value";
  st.unit = m.is_object() ? m.value("unit", std::string{}) : doc.value("unit", std::string{});
  if (doc.contains("labels") && doc["labels"].is_object()) {
    st.base_label = doc["labels"].value("base", std::string("base"));
    st.candidate_label = doc["labels"].value("candidate", std::string("candidate"));
  }
  for (double v : st.base)
    if (!std::isfinite(v)) throw UsageError(path + ": pairs: a value that is not finite");
  if (st.base.empty()) throw UsageError(path + ": no complete base/candidate pairs");
  return st;
}

PairedStudy parse_runs_csv(const std::string& text, const std::string& path, const std::string& metric) {
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  std::string jsonl;  // the rows as run records: the JSONL reader pairs them (one pairing rule)
  std::size_t column = 0;
  std::string name;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    const auto t = trim(line);
    if (t.empty()) continue;
    const auto cells = split_csv_cells(t);
    const auto where = fmt::format("{}:{}", path, line_no);
    if (header.empty()) {
      header = cells;
      const auto times_end = std::find(header.begin(), header.end(), "peak_rss_kib");
      const std::string want = metric == "wall" || metric == "user" || metric == "sys" ? metric + "_s"
                               : metric == "peak_rss"                                    ? "peak_rss_kib"
                                                                                         : metric;
      std::size_t c = header.size();
      for (std::size_t i = 0; i < header.size(); ++i) {
        const auto& h = header[i];
        if (!want.empty() && (h == want || h.rfind(want + "_", 0) == 0)) c = i;
      }
      if (want.empty())
        c = times_end != header.end() && times_end + 1 != header.end()
                ? static_cast<std::size_t>(times_end - header.begin()) + 1
                : static_cast<std::size_t>(std::find(header.begin(), header.end(), "wall_s") - header.begin());
      if (c >= header.size())
        throw UsageError(fmt::format("{}: no column for metric '{}' in the runs CSV", where, metric));
      column = c;
      name = header[c];
      continue;
    }
    if (cells.size() != header.size())
      throw UsageError(fmt::format("{}: {} cells, the header has {}", where, cells.size(), header.size()));
    const auto& v = cells[column];
    nlohmann::json rec = {{"type", "run"}, {"pair", static_cast<long long>(parse_number(cells[0], where))},
                          {"attempt", static_cast<long long>(parse_number(cells[1], where))},
                          {"arm", cells[2]}, {"status", cells[6]},
                          {"value", v.empty() ? nlohmann::json(nullptr) : nlohmann::json(parse_number(v, where))}};
    jsonl += json_text(rec) + "\n";
  }
  if (header.empty()) throw UsageError(path + ": empty CSV");
  auto study = parse_study_jsonl(jsonl, path, "");
  // "lat_ms" names the metric lat in ms; the built-in columns carry their unit the same way.
  const auto us = name.rfind('_');
  study.metric = us == std::string::npos ? name : name.substr(0, us);
  study.unit = us == std::string::npos ? "" : name.substr(us + 1);
  if (study.unit == "kib") study.unit = "KiB";
  return study;
}

}  // namespace layerbench::reports
