#include "study/history/ab_adapter.hpp"

#include "study/runner.hpp"
#include "study/study.hpp"
#include "common/usage.hpp"

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <unistd.h>

namespace layerbench::history {

stats::SequentialResult run_pair_study(const PairStudy& s) {
  ab::RunOptions o;
  o.config.base = s.base_command;
  o.config.candidate = s.candidate_command;
  o.config.metric = s.metric;
  o.config.pairs = s.design.max_pairs;
  o.config.warmup = s.warmup;
  o.config.timeout = s.timeout;
  o.config.order = "alternate";
  o.config.sequential = s.design;
  o.out = s.journal;
  o.resume = std::filesystem::exists(s.journal);
  o.csv = s.journal + ".csv";  // the runs beside the journal (and no A/B text on stdout)
  // The A/B's own analysis goes to standard error: standard output carries the history's verdicts.
  std::fflush(stdout);
  const int saved = ::dup(STDOUT_FILENO);
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  int rc = 0;
  try {
    rc = ab::run_study(o);
  } catch (...) {
    std::fflush(stdout);
    ::dup2(saved, STDOUT_FILENO);
    ::close(saved);
    throw;
  }
  std::fflush(stdout);
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  if (rc == kExitInterrupted) throw std::runtime_error("interrupted: run confirm again to resume " + s.journal);
  const auto study = ab::read_study(s.journal);
  const auto state = ab::sequential_state(study);
  if (!state) throw std::runtime_error(s.journal + ": not a sequential study");
  return *state;
}

}  // namespace layerbench::history
