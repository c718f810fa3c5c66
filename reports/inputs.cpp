#include "reports/inputs.hpp"
#include "common/json_text.hpp"
#include "common/usage.hpp"

#include "common/input_file.hpp"

#include "reports/inputs_detail.hpp"
#include "reports/legacy.hpp"
#include "reports/trace.hpp"


#include "common/text.hpp"
#include "stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <cctype>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace layerbench::reports {
namespace detail {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> split_csv_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.push_back(trim(cell));
      cell.clear();
    } else {
      cell += c;
    }
  }
  cells.push_back(trim(cell));
  return cells;
}

double parse_number(const std::string& cell, const std::string& where) {
  double v = 0;
  const char* b = cell.data();
  const char* e = b + cell.size();
  const auto [ptr, ec] = std::from_chars(b, e, v);
  if (ec != std::errc{} || ptr != e || !std::isfinite(v))
    throw UsageError(fmt::format("{}: '{}' is not a finite number", where, cell));
  return v;
}

PairedStudy assemble(std::map<long long, std::pair<double, double>> pairs, PairedStudy study) {
  for (const auto& [id, v] : pairs) {
    if (std::isnan(v.first) || std::isnan(v.second)) continue;  // incomplete or failed pair
    if (v.first < 0 || v.second < 0)
      throw UsageError(fmt::format("{}: pair {}: negative value {} (relative changes need non-negative "
                                           "measurements)", study.path, id, v.first < 0 ? v.first : v.second));
    study.pair_ids.push_back(id);
    study.base.push_back(v.first);
    study.candidate.push_back(v.second);
  }
  if (study.base.empty()) throw UsageError(study.path + ": no complete base/candidate pairs");
  study.unit = unit_of_metric(study.metric);
  return study;
}

}  // namespace detail
using namespace detail;

std::string read_text_file(const std::string& path) {
  std::string text = input::read_text(input::Origin{"", path}, input::kMaxDataBytes);
  text::strip_bom_in_place(text);  // a UTF-8 byte order mark is accepted, as CRLF is
  return text;
}

nlohmann::json read_json_file(const std::string& path) {
  return input::parse_json(read_text_file(path), input::Origin{"", path});
}

bool is_layerbench_json(const nlohmann::json& doc) {
  return doc.is_object() && doc.contains("schema") && doc["schema"].is_string() &&
         doc["schema"].get<std::string>().rfind("layerbench/", 0) == 0 && doc.contains("results");
}

bool is_gbench_json(const nlohmann::json& doc) {
  return doc.is_object() && doc.contains("benchmarks") && doc["benchmarks"].is_array();
}

ResultFile result_file_from_json(const nlohmann::json& doc, const std::string& path) {
  if (!is_layerbench_json(doc)) throw UsageError(path + ": not a layerbench result file (schema layerbench/N)");
  if (doc["schema"] != kSchema && doc["schema"] != kSchemaV1)
    throw UsageError(fmt::format("{}: unsupported schema {} (expected {} or {})", path, json_text(doc["schema"]),
                                         kSchema, kSchemaV1));
  ResultFile f;
  f.path = path;
  f.binary = doc.value("binary", std::string{});
  f.context = doc.value("context", nlohmann::json::object());
  f.config = doc.value("config", nlohmann::json::object());
  if (!doc["results"].is_array()) throw UsageError(path + ": \"results\" is not an array");
  for (std::size_t i = 0; i < doc["results"].size(); ++i) {
    try {
      f.results.push_back(measurement_from_json(doc["results"][i]));
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("{}: results[{}]: {}", path, i, e.what()));
    }
  }
  if (doc["schema"] == kSchemaV1) infer_v1_roles(f, doc);
  if (doc.contains("advice") && doc["advice"].is_array())
    for (std::size_t i = 0; i < doc["advice"].size(); ++i) {
      const auto& a = doc["advice"][i];
      const std::string title = a.is_object() && a.contains("seq") ? "S = " + json_text(a["seq"]) : std::string();
      if (f.advice.empty() || f.advice.back().title != title) f.advice.push_back({title, {}});
      try {
        f.advice.back().predictions.push_back(prediction_from_json(a));
      } catch (const std::exception& e) {
        throw UsageError(fmt::format("{}: advice[{}]: {}", path, i, e.what()));
      }
    }
  // An embedded paired study: "ab": {"base_ms": [...], "candidate_ms": [...], ...}.
  if (doc.contains("ab") && doc["ab"].is_object() && doc["ab"].contains("base_ms") &&
      doc["ab"].contains("candidate_ms")) {
    const auto& ab = doc["ab"];
    PairedStudy st;
    st.path = path;
    try {
      st.base = ab["base_ms"].get<std::vector<double>>();
      st.candidate = ab["candidate_ms"].get<std::vector<double>>();
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("{}: ab: {}", path, e.what()));
    }
    if (st.base.size() != st.candidate.size())
      throw UsageError(fmt::format("{}: ab: {} base and {} candidate samples", path, st.base.size(),
                                           st.candidate.size()));
    for (std::size_t i = 0; i < st.base.size(); ++i) st.pair_ids.push_back(static_cast<long long>(i));
    st.unit = "ms";
    const std::string what = ab.value("study", std::string("A/B"));
    st.metric = ab.contains("layers")
                    ? fmt::format("{} A/B, {}-layer stack time", what, ab["layers"].get<long long>())
                    : what + " A/B time";
    st.header = {{"base", ab.value("base", std::string("base"))},
                 {"candidate", ab.value("candidate", std::string("candidate"))}};
    if (ab.contains("predictions") && ab["predictions"].is_array() && !ab["predictions"].empty()) {
      const auto& p = ab["predictions"][0];
      if (p.contains("predicted_ms") && p["predicted_ms"].is_number()) {
        st.predicted = p["predicted_ms"].get<double>();
        // Files written before the one sign convention predicted base - candidate (a saving).
        if (ab.value("delta", std::string{}) != "candidate - base") st.predicted = -*st.predicted;
        st.predicted_half_width = p.value("half_width_ms", 0.0);
        st.predicted_source = p.value("source", std::string("prediction"));
      }
    }
    if (st.base.size() >= 2) f.study = std::move(st);
  }
  return f;
}

ResultFile load_result_file(const std::string& path) { return result_file_from_json(read_json_file(path), path); }

std::string unit_of_metric(const std::string& metric) {
  if (metric == "wall" || metric == "user") return "s";  // layerbench-ab's built-in metrics are seconds
  for (const char* suffix : {"_ms", "_us", "_ns", "_s"}) {
    const std::string s = suffix;
    if (metric.size() > s.size() && metric.compare(metric.size() - s.size(), s.size(), s) == 0) return s.substr(1);
  }
  return {};
}

std::vector<std::string> split_csv_line(const std::string& line) { return split_csv_cells(line); }

std::vector<ResultsCsvRow> parse_results_csv(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  std::vector<ResultsCsvRow> rows;
  auto col = [&](const char* name) {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) throw UsageError(fmt::format("{}: results CSV without column '{}'", path, name));
    return static_cast<std::size_t>(it - header.begin());
  };
  std::size_t c_name = 0, c_group = 0, c_role = 0, c_parent = 0, c_n = 0, c_med = 0, c_min = 0, c_max = 0,
              c_flop = 0, c_alg = 0, c_bus = 0;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    const auto t = trim(line);
    if (t.empty()) continue;
    const auto cells = split_csv_cells(t);
    if (header.empty()) {
      header = cells;
      c_name = col("name"), c_group = col("group"), c_role = col("role"), c_parent = col("parent"), c_n = col("n");
      c_med = col("median_ms"), c_min = col("min_ms"), c_max = col("max_ms");
      c_flop = col("rate_flop_per_s"), c_alg = col("algbw_bytes_per_s"), c_bus = col("busbw_bytes_per_s");
      continue;
    }
    const auto where = fmt::format("{}:{}", path, line_no);
    if (cells.size() != header.size())
      throw UsageError(fmt::format("{}: {} cells, the header has {}", where, cells.size(), header.size()));
    auto number = [&](std::size_t c) {
      return cells[c].empty() ? std::numeric_limits<double>::quiet_NaN() : parse_number(cells[c], where);
    };
    ResultsCsvRow r{cells[c_name], cells[c_group], cells[c_role], cells[c_parent], cells[c_n],
                    number(c_med), number(c_min), number(c_max), {}};
    r.rates.median_ms = r.median_ms;
    r.rates.flop_per_s = number(c_flop);
    r.rates.algbw_bytes_per_s = number(c_alg);
    r.rates.busbw_bytes_per_s = number(c_bus);
    rows.push_back(std::move(r));
  }
  if (rows.empty()) throw UsageError(path + ": a results CSV without rows");
  return rows;
}

InputKind sniff_input(const std::string& path) { return sniff_text(read_text_file(path), path); }

InputKind sniff_text(std::string_view text, const std::string& path) {
  // Trimmed as a view: no copy of a large study.
  const auto b = text.find_first_not_of(" \t\r\n");
  const std::string_view t = b == std::string_view::npos ? std::string_view{}
                                                         : text.substr(b, text.find_last_not_of(" \t\r\n") - b + 1);
  if (t.empty()) throw UsageError(path + ": file is empty");
  if (t.find('\0') != std::string::npos)
    throw UsageError(path + ": a binary file, not a layerbench output, a paired study, Google Benchmark or "
                                    "hyperfine JSON");
  if (t.rfind(kResultsCsvHeader, 0) == 0) return InputKind::results_csv;
  if (t.rfind(kRunsCsvHeader, 0) == 0) return InputKind::runs_csv;
  // Markdown (a heading or a table first) is for reading, not a CSV study however many commas it has.
  if (t[0] == '#' || t[0] == '|') return InputKind::unknown;
  if (t[0] != '{' && t[0] != '[') return t.find(',') != std::string::npos ? InputKind::study_csv : InputKind::unknown;
  try {
    const auto doc = nlohmann::json::parse(t);
    if (is_layerbench_json(doc)) return InputKind::layerbench_json;
    if (is_gbench_json(doc)) return InputKind::gbench_json;
    if (is_hyperfine_json(doc)) return InputKind::hyperfine_json;
    if (is_trace_json(doc)) return InputKind::trace_json;
    if (doc.is_object() && doc.value("schema", std::string{}).rfind("layerbench-ab-analys", 0) == 0)
      return InputKind::analysis_json;
    if (doc.is_object() && doc.contains("pair") && doc.contains("arm")) return InputKind::study_jsonl;
    // A study of its header alone (nothing recorded yet, or a broken header): still a study.
    if (doc.is_object() && doc.contains("type") && doc["type"] == "study") return InputKind::study_jsonl;
    return InputKind::other_json;
  } catch (const nlohmann::json::exception&) {
  }
  // Not one JSON document: JSON Lines if the first line is a complete object.
  const auto first = t.substr(0, t.find('\n'));
  try {
    if (nlohmann::json::parse(first).is_object()) return InputKind::study_jsonl;
  } catch (const nlohmann::json::exception&) {
  }
  // Neither: the strict parser names what is wrong (and where: a NaN, a truncation).
  input::parse_json(t, input::Origin{"", path});
  throw UsageError(path + ": invalid or truncated JSON");
}

}  // namespace layerbench::reports
