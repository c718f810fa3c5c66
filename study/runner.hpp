#pragma once
// `layerbench-ab run`: an interleaved, resumable A/B study of two or more shell commands.
#include <string>

#include "study/study.hpp"
#include "study/study_report.hpp"
#include "stats/paired.hpp"

namespace layerbench::ab {

struct RunOptions {
  StudyConfig config;
  std::string out = "study.jsonl";
  bool resume = false;
  bool force = false;  // an existing study file is started afresh
  stats::PairedOptions analysis;
  std::string json;      // the analysis as JSON to FILE ('-': standard output)
  std::string markdown;  // the analysis as markdown to FILE ('-': standard output)
  std::string csv;       // every recorded run as CSV to FILE ('-': standard output)
};

// Runs (or resumes) the study, prints the analysis on stdout (as text, unless --json - or
// --markdown - took stdout) and writes the requested files. Returns the exit status:
// 0, or 130 after Ctrl-C. Throws InputError for bad input (exit 2).
int run_study(const RunOptions& options);

}  // namespace layerbench::ab
