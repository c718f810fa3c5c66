#pragma once
// Readers for what the report and the gate consume: layerbench JSON result files and paired studies
// (the JSONL that `layerbench-ab run` writes, or a CSV with `base` and `candidate` columns).
// Every reader throws std::runtime_error naming the file and the line on malformed or truncated input,
// so the binaries can turn that into exit code 2 with a clear message.
#include "reports/result.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace layerbench::reports {

struct PairedStudy {
  std::string path;
  std::string metric;                 // name of the measured quantity, e.g. "time_ms"
  std::string unit;                   // derived from the metric name suffix (_ms, _s, _us), else ""
  std::vector<long long> pair_ids;    // one per complete pair, ascending
  std::vector<double> base, candidate;  // kept by position: base[i] and candidate[i] are pair i
  nlohmann::json header = nlohmann::json::object();
  // A prediction of the delta with its own uncertainty (layerbench-moe --ab: the what-if's).
  std::optional<double> predicted;
  double predicted_half_width = 0;
  std::string predicted_source;
};

struct ResultFile {
  std::string path;
  std::string binary;                 // e.g. "layerbench-coll"
  nlohmann::json context = nlohmann::json::object();
  nlohmann::json config = nlohmann::json::object();
  std::vector<Measurement> results;
  // An in-process A/B the binary ran (layerbench-moe --ab: "ab" with base_ms / candidate_ms).
  std::optional<PairedStudy> study;
};


// Parses the whole file; throws on unreadable or truncated JSON.
nlohmann::json read_json_file(const std::string& path);

bool is_layerbench_json(const nlohmann::json& doc);
bool is_gbench_json(const nlohmann::json& doc);

ResultFile result_file_from_json(const nlohmann::json& doc, const std::string& path);
ResultFile load_result_file(const std::string& path);

// A study from JSONL (one record per line; a record with "pair" and "arm" is a run) or CSV.
// `metric` selects the value when runs carry several; empty picks the study's own (header "metric",
// the run's "metric" field, or the only numeric metric). Incomplete pairs are dropped.
PairedStudy load_study(const std::string& path, const std::string& metric = {});
PairedStudy parse_study_jsonl(const std::string& text, const std::string& path, const std::string& metric = {});
PairedStudy parse_study_csv(const std::string& text, const std::string& path);

// "time_ms" -> "ms", "latency_s" -> "s", "x_us" -> "us"; otherwise "".
std::string unit_of_metric(const std::string& metric);

enum class InputKind { layerbench_json, gbench_json, study_jsonl, study_csv, results_csv, other_json, unknown };
// The header every binary's --csv starts with (reports::results_to_csv).
inline constexpr const char* kResultsCsvHeader = "name,group,role,parent,instances,params,n,median_ms,";
// A row of a binary's --csv: the summary and the rates it carries (NaN where a cell is empty).
struct ResultsCsvRow {
  std::string name, group, role, parent, n;
  double median_ms = 0, min_ms = 0, max_ms = 0;
  Rates rates;
};
// Throws std::runtime_error naming the file and line: a missing column, a row of the wrong
// width, a cell that is not a number, no rows.
std::vector<ResultsCsvRow> parse_results_csv(const std::string& text, const std::string& path);

// One RFC 4180 line split into its cells (quotes removed, doubled quotes kept once).
std::vector<std::string> split_csv_line(const std::string& line);
// Decides by content (first non-blank character and, for JSON, its keys), not by extension.
InputKind sniff_input(const std::string& path);

std::string read_text_file(const std::string& path);

}  // namespace layerbench::reports
