#pragma once
// Change points of every series in a history, with what users and confirmations said of them.
//   status "suspected":  found in the history, no paired confirmation yet (or one without a
//                        verdict): CI exit 3 until `confirm` decides
//   status "confirmed":  an interleaved A/B of the commits around it found the change
//   status "refuted":    the A/B found no change beyond the margin: listed, never an alert
//   status "expected":   a user mark says a change at a commit in its range was intended
// Sign convention: relative > 0 = the metric rose (slower, for times): a regression.
#include "stats/changepoint.hpp"
#include "study/history/store.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace layerbench::history {

// One series as the detector sees it: the commits where it has samples.
struct SeriesPoints {
  Series series;
  std::vector<std::size_t> commit_pos;  // position in the history of each point
  std::vector<stats::CommitPoint> points;
};

struct Finding {
  std::size_t series = 0;  // index into Analysis::series
  stats::StepEstimate step;  // indices into that series' points
  std::string before_sha;    // the last commit before the range
  std::string first_after_sha;  // the detector's first commit after the change
  std::vector<std::string> range_shas;  // commits where the change may have come in, in order
  std::size_t before_pos = 0, range_low_pos = 0, range_high_pos = 0;  // history positions
  std::string status = "suspected";
  std::optional<Confirmation> confirmation;  // the one that decided it
  std::vector<std::string> moved_together;   // other series with a change in an overlapping range
  bool regression() const { return step.relative > 0; }
};

struct Analysis {
  std::vector<Commit> commits;
  std::vector<SeriesPoints> series;
  std::vector<Finding> findings;
  std::vector<Mark> marks;
  stats::ChangePointOptions options;
};

Analysis analyze(Store& store, const stats::ChangePointOptions& options);

// 1: a confirmed regression (not marked expected); else 3: a suspicion awaiting confirmation;
// else 0.
int exit_code(const Analysis& a);

// One line per finding for the terminal; JSON (schema layerbench-history-detect/1).
std::string findings_text(const Analysis& a);
nlohmann::json findings_json(const Analysis& a);

}  // namespace layerbench::history
