#pragma once
// The one place `layerbench-history confirm` touches the A/B engine: an interleaved, sequential,
// resumable study of two commands through the runner `layerbench-ab run --sequential` uses
// (study/runner: journal, metrics, the stop rule of stats/sequential).
#include "stats/sequential.hpp"

#include <string>

namespace layerbench::history {

struct PairStudy {
  std::string base_command, candidate_command;
  std::string metric = "wall";  // layerbench-ab's metric grammar
  std::string journal;          // the study JSONL; resumed when it exists
  stats::SequentialDesign design;
  double timeout = 0;  // seconds per run, 0 = none
  std::size_t warmup = 0;
};

// Runs (or resumes) the study until the sequential rule stops and returns its state. The A/B's
// runs also go to JOURNAL.csv. Throws layerbench::UsageError on bad input (a command that never
// succeeds, a metric never found) and std::runtime_error when interrupted.
stats::SequentialResult run_pair_study(const PairStudy& study);

}  // namespace layerbench::history
