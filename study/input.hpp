#pragma once
// Loading paired measurements for `analyze`: CSV with `base` and `candidate` columns, or a study
// JSONL written by `run`. Every problem is an InputError naming the file and line.
#include <optional>
#include <string>
#include <vector>

#include "study/study.hpp"

namespace layerbench::ab {

struct PairedInput {
  std::vector<double> base;
  std::vector<double> candidate;
  std::vector<long long> pair_ids;
  std::string metric, unit;    // what the values are, where the file says
  std::optional<Study> study;  // set when the file is a layerbench-ab study JSONL
};

PairedInput load_csv(const std::string& path);
PairedInput load_study(const std::string& path);
// Chooses by content (reports::sniff_input, the one rule): a layerbench-ab study JSONL (read with
// its header, runs and diagnostics), a CSV with base and candidate columns, and every other
// paired file a layerbench tool writes (layerbench-ab --json and --csv, other JSON Lines) through
// reports::load_study. A file that holds no pairs (Google Benchmark, hyperfine, a result file) is
// an InputError saying why a paired analysis does not apply.
PairedInput load_pairs(const std::string& path);

}  // namespace layerbench::ab
