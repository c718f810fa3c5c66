#pragma once
// Readers for what the report and the gate consume: layerbench JSON result files and paired studies
// (the JSONL that `layerbench-ab run` writes, or a CSV with `base` and `candidate` columns).
// Every reader throws std::runtime_error naming the file and the line on malformed or truncated input,
// so the binaries can turn that into exit code 2 with a clear message.
#include "reports/prediction.hpp"
#include "reports/result.hpp"
#include "study/study.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace layerbench::reports {

// A paired study: the one type (study/study.hpp), read through the one reader of study files.
using ab::PairedStudy;

struct ResultFile {
  std::string path;
  std::string binary;                 // e.g. "layerbench-coll"
  nlohmann::json context = nlohmann::json::object();
  nlohmann::json config = nlohmann::json::object();
  std::vector<Measurement> results;
  // An advisor's predictions (layerbench-moe/-attn --advise: "advice"), one group per sequence
  // length where the entries name one ("seq"), in the file's order.
  struct AdviceGroup {
    std::string title;
    std::vector<Prediction> predictions;
  };
  std::vector<AdviceGroup> advice;
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
PairedStudy parse_study_jsonl(const std::string& text, const std::string& path, const std::string& metric = {},
                              const std::string& candidate_arm = "candidate");
// Every candidate arm of a study against its base (one for a two-arm study, a CSV included).
std::vector<PairedStudy> load_studies(const std::string& path, const std::string& metric = {});
// The one reader of CSV studies: a header naming base and candidate (any case; an optional pair
// column orders and names the pairs), one row per pair; blank and '#' lines skipped, a byte order
// mark accepted. Throws std::runtime_error naming the file and line: an empty file, a missing
// column, a ragged row, a cell that is not a finite number, a pair twice. study_csv_pairs gives
// every row (negative values included, possibly none: layerbench-ab warns and counts itself);
// parse_study_csv adds the report's and the gate's checks (no negative value, at least one pair).
PairedStudy study_csv_pairs(const std::string& text, const std::string& path);
PairedStudy parse_study_csv(const std::string& text, const std::string& path);

// "time_ms" -> "ms", "latency_s" -> "s", "x_us" -> "us"; otherwise "".
std::string unit_of_metric(const std::string& metric);

// What a file is, by content. Paired: study_jsonl (layerbench-ab run's journal, or JSON Lines of
// pair/arm records), study_csv (base and candidate columns), runs_csv (layerbench-ab --csv: one
// row per run), analysis_json (layerbench-ab --json: the analysis with its pairs). Unpaired:
// layerbench_json, gbench_json, hyperfine_json (hyperfine --export-json), results_csv.
enum class InputKind {
  layerbench_json, gbench_json, hyperfine_json, study_jsonl, study_csv, runs_csv, analysis_json, results_csv,
  trace_json,  // a --trace file (reports/trace.hpp)
  other_json, unknown
};
// The header layerbench-ab's --csv starts with (study/study_report.cpp runs_csv).
inline constexpr const char* kRunsCsvHeader = "pair,attempt,arm,name,position,start,status,exit,";
bool is_hyperfine_json(const nlohmann::json& doc);
// True for the journal `layerbench-ab run` writes (its first record is a "study" header): reads
// the first non-blank line of the file's text (as read by read_text_file, the input layer).
bool is_ab_study(std::string_view text);
// One line saying why `path` (of `kind`) holds no pairs and what reads it instead.
std::string not_paired_reason(const std::string& path, InputKind kind);
// layerbench-ab --csv: the runs paired by the study rule (study/study.hpp). `metric` is a
// column (wall, user, sys, peak_rss or a metric's name); empty = the first metric column after
// the times, else wall.
PairedStudy parse_runs_csv(const std::string& text, const std::string& path, const std::string& metric = {});
// layerbench-ab --json: the pairs it carries ("pairs": base, candidate, pair).
PairedStudy study_from_analysis_json(const nlohmann::json& doc, const std::string& path);
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
// The same for a file's text already read (`path` names it in messages): a reader that sniffs
// and then parses reads a large study once.
InputKind sniff_text(std::string_view text, const std::string& path);

std::string read_text_file(const std::string& path);

}  // namespace layerbench::reports
