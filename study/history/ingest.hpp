#pragma once
// What `layerbench-history add` reads: every result file a layerbench binary writes and the two
// foreign formats CI jobs commonly keep, turned into named sample sets.
//   layerbench JSON (layerbench/1 and /2): one series per result, samples_ms (every sample)
//   a binary's --csv (results CSV): one series per row, its median_ms (the file has no samples)
//   layerbench-ab study JSONL and study CSV (base,candidate): one series per arm, every pair
//   layerbench-ab run --csv (the runs): one series per arm and metric column, runs that succeeded
//   layerbench-ab --json (the analysis): one series per arm, the arm's median (no samples)
//   Google Benchmark JSON: one series per benchmark, its repetitions of real_time (ns)
//   hyperfine --export-json: one series per command, its times (s)
//
// NOTE: read_results() is the one adapter from file formats to series. It is built on the
// project's readers (reports/inputs, reports/legacy through result_file_from_json, and the one
// reader of study files, study/study.hpp, through reports::parse_study_jsonl).
#include <string>
#include <vector>

namespace layerbench::history {

struct SampleSeries {
  std::string benchmark;  // e.g. "all_reduce [bytes=1024, in_place=false]"
  std::string metric;     // e.g. "time"
  std::string unit;       // e.g. "ms"
  std::vector<double> samples;
};

struct ResultSamples {
  std::string path;
  std::string kind;     // "layerbench", "results-csv", "study", "ab-runs", "ab-analysis", "gbench", "hyperfine"
  std::string machine;  // from the file's context ("" when it has none)
  std::vector<SampleSeries> series;
};

// Throws layerbench::UsageError naming the file on unreadable, truncated or unsupported input
// (a file that is no result, a result without any sample, a non-positive or non-finite sample).
ResultSamples read_results(const std::string& path);

}  // namespace layerbench::history
