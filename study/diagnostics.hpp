#pragma once
// Study diagnostics on top of the paired analysis: order effect, drift of each arm, failed
// pairs, output identity, and a plan when the study is inconclusive.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "study/study.hpp"
#include "reports/paired.hpp"
#include "stats/paired.hpp"
#include "stats/power.hpp"

namespace layerbench::ab {

struct StudyDiagnostics {
  std::size_t num_pairs_planned = 0;
  std::size_t num_completed = 0;
  std::size_t num_ab = 0, num_ba = 0;  // pairs that ran base first / candidate first
  double mean_delta_ab = 0, mean_delta_ba = 0;
  std::optional<stats::WelchResult> order_test;  // needs 2 pairs of each order
  stats::Correlation base_drift, candidate_drift;  // against pair index
  std::vector<std::size_t> excluded;
  std::size_t failed_runs = 0;
  bool inconclusive = false;
  std::optional<stats::SamplePlan> plan;  // when inconclusive and the effect is non-zero
  // --check-output
  bool output_checked = false;
  std::size_t identical_pairs = 0, differing_pairs = 0, missing_outputs = 0;
  std::vector<std::string> notes;  // sentences for the text report
};

StudyDiagnostics diagnose(const Study& study, const stats::PairedAnalysis& analysis);

// The "diagnostics" block of the paired report (JSON, the study line, the notes).
reports::PairedBlock diagnostics_block(const StudyDiagnostics& d);

}  // namespace layerbench::ab
