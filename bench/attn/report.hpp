#pragma once
// What layerbench-attn prints, derived from its measurements' declared roles and work only:
// per sequence length a comparison of the topologies' totals (their forwards timed round-robin in
// the same iterations; each against the first as the median of the per-iteration ratios with its
// bootstrap interval, and the fastest one marked only where the intervals resolve it; with
// --repeat, each run's ratio and the run-to-run spread), then per case the composition of the forward (reports::composition: parts nested
// under the total, share of it, rates from the declared work, "other / unaccounted", and a
// warning where a part exceeds its parent).
#include "reports/result.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace layerbench::attention {

// One timed (topology, length) case: its group in the results holds the `total` and its parts.
struct CaseRef {
  std::string group;  // "usp2+cp2/S=16384"
  std::string topology;
  long long seq = 0;
};

// The composition of one case as markdown: a table, then one "- warning: ..." line per part
// larger than its parent. `note`, when not empty, follows the warnings (a reason that holds for
// the whole run, e.g. oversubscribed host ranks).
std::string case_markdown(const std::vector<reports::Measurement>& results, const CaseRef& c,
                          const std::string& note = {});

// The forwards of one length's cases timed round-robin: samples[c][i] is case c's forward in
// iteration i (harness::Runner::time_round_robin); one per --repeat run.
using RoundRobin = std::vector<std::vector<double>>;

// Per case of one length (cases in run order, the first is the baseline): its forward against the
// first case's, from `runs` (the first run gives the figure; later ones their own ratios and the
// spread), as JSON (reports::Estimate plus "repeats" and "spread") and as a markdown table; the
// fastest topology (lowest interleaved median) is named only when every other case's paired ratio
// to it excludes 1. A case without interleaved samples is compared by nothing.
struct Comparison {
  std::string markdown;
  std::vector<nlohmann::json> vs_first;  // one per case; null for the first
};
Comparison compare_totals(const std::vector<reports::Measurement>& results, const std::vector<CaseRef>& cases,
                          const std::vector<RoundRobin>& runs, double confidence);

// The total of a case (role total in its group); nullptr when it was not timed.
const reports::Measurement* total_of(const std::vector<reports::Measurement>& results, const std::string& group);

}  // namespace layerbench::attention
