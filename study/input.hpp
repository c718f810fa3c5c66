#pragma once
// Loading paired measurements for `analyze` (the one PairedStudy type of study/study.hpp): CSV with
// `base` and `candidate` columns, or a study JSONL written by `run` (its journal kept: `journal`).
// Every problem is an InputError naming the file and line.
#include <string>
#include <vector>

#include "study/study.hpp"

namespace layerbench::ab {

PairedStudy load_csv(const std::string& path);
PairedStudy load_study(const std::string& path);
// Chooses by content (reports::sniff_input, the one rule): a layerbench-ab study JSONL (read with
// its header, runs and diagnostics), a CSV with base and candidate columns, and every other
// paired file a layerbench tool writes (layerbench-ab --json and --csv, other JSON Lines) through
// reports::load_study. A file that holds no pairs (Google Benchmark, hyperfine, a result file) is
// an InputError saying why a paired analysis does not apply.
PairedStudy load_pairs(const std::string& path);

}  // namespace layerbench::ab
