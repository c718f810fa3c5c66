#pragma once
// `layerbench-ab run`: an interleaved, resumable A/B study of two or more shell commands.
#include <string>

#include "bench/ab/study.hpp"
#include "bench/ab/study_report.hpp"
#include "stats/paired.hpp"

namespace layerbench::ab {

struct RunOptions {
  StudyConfig config;
  std::string out = "study.jsonl";
  bool resume = false;
  stats::PairedOptions analysis;
  OutputFormat format = OutputFormat::text;
  ExportPaths exports;
};

// Runs (or resumes) the study and prints the analysis on stdout. Returns the exit status:
// 0, or 130 after Ctrl-C. Throws InputError for bad input (exit 2).
int run_study(const RunOptions& options);

}  // namespace layerbench::ab
