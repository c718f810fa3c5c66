#pragma once
// What the gate reads. Paired: a study (layerbench-ab JSONL or CSV). Unpaired: per-benchmark sample sets from a layerbench JSON result file
// (samples_ms of every result, plus layerbench-moe components) or a Google Benchmark JSON file
// (the per-repetition values of one field, real_time by default).
#include "reports/inputs.hpp"

#include <map>
#include <string>
#include <vector>

namespace layerbench::gate {

struct SampleSet {
  std::string display;  // human name: "all_gather [bytes=1024, in_place=false]"
  std::vector<double> values;
};

struct SampleFile {
  std::string path;
  std::string kind;    // "layerbench", "gbench" or "hyperfine"
  std::string metric;  // what the values are, e.g. "samples_ms", "real_time"
  std::string unit;    // e.g. "ms", "ns"
  std::map<std::string, SampleSet> sets;  // matching key -> samples
  std::vector<std::string> warnings;      // e.g. the machine was loaded while it ran
};

// metric empty: samples_ms (layerbench) / real_time (gbench) / times (hyperfine, in s). A hyperfine
// file of one command matches the other file's one command whatever their names. Throws std::runtime_error naming the file
// on unreadable, truncated or unsupported input, and on a metric no benchmark carries.
SampleFile load_samples(const std::string& path, const std::string& metric);

// A paired study (reports::load_study: a study JSONL through the one reader of study files,
// study/study.hpp; CSV; layerbench-ab --csv and --json). Throws std::runtime_error naming the
// file (and line).
reports::PairedStudy load_paired_study(const std::string& path, const std::string& metric);

struct Matched {
  std::vector<std::string> keys;                 // in both files, sorted
  std::vector<std::string> only_base, only_candidate;
};
Matched match(const SampleFile& base, const SampleFile& candidate);

}  // namespace layerbench::gate
