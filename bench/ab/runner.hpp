#pragma once
// `layerbench-ab run`: an interleaved, resumable A/B study of two shell commands.
#include <string>

#include "bench/ab/study.hpp"
#include "stats/paired.hpp"

namespace layerbench::ab {

enum class OutputFormat { text, json, markdown };

struct RunOptions {
  StudyConfig config;
  std::string out = "study.jsonl";
  bool resume = false;
  stats::PairedOptions analysis;
  std::string json;      // the analysis as JSON to FILE ('-': standard output)
  std::string markdown;  // the analysis as markdown to FILE ('-': standard output)
};

// Runs (or resumes) the study, prints the analysis on stdout (as text, unless --json - or
// --markdown - took stdout) and writes the requested files. Returns the exit status:
// 0, or 130 after Ctrl-C. Throws InputError for bad input (exit 2).
int run_study(const RunOptions& options);

// Analysis of a study file as printed by `run` at the end and by `analyze FILE.jsonl`.
std::string render_study(const Study& study, const stats::PairedOptions& options, OutputFormat format);

}  // namespace layerbench::ab
