#pragma once
// `layerbench-history confirm`: re-measures suspected steps with interleaved pairs of the commits
// on either side (a user's command template with {commit}), stopping as soon as the
// always-valid sequential rule decides, and records the verdict in the store. With bisect, a
// confirmed range of several commits is narrowed to one commit with the same paired rule
// (log2(range) more studies, each deciding which side of the step a commit lies on).
#include "stats/changepoint.hpp"
#include "study/history/store.hpp"

#include <string>

namespace layerbench::history {

struct ConfirmOptions {
  std::string run;             // command template; {commit} becomes the sha
  std::string metric = "wall";
  std::string journal_dir;     // where the A/B journals go ("" = beside the database)
  std::string benchmark;       // the benchmark the command measures ("" = every one in the range)
  std::string before, after;   // an explicit bracket; empty = every suspected finding
  bool bisect = false;
  double alpha = 0.001;
  double equivalence = 0.01;   // relative no-change margin
  std::size_t max_pairs = 60;
  double timeout = 0;
  std::size_t warmup = 0;
};

// Returns the exit code: 1 a confirmed regression, 3 an A/B that reached its cap undecided,
// 0 otherwise. Throws layerbench::UsageError on bad input.
int confirm(Store& store, const ConfirmOptions& options, const stats::ChangePointOptions& detector);

// "cmd {commit}" with the sha put in; UsageError when the template has no {commit}.
std::string expand_template(const std::string& templ, const std::string& sha);

}  // namespace layerbench::history
