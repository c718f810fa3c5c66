#pragma once
// The gate's verdicts as a document section (console text, markdown for a PR comment) and JSON, plus
// the exit code.
#include "reports/document.hpp"
#include "study/gate.hpp"
#include "common/usage.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace layerbench::gate {

struct GateReport {
  bool paired = false;
  std::string base_source, candidate_source;  // file names (the same study file when paired)
  std::string metric, unit;
  GateOptions options;
  std::vector<Finding> findings;
  std::vector<std::string> only_base, only_candidate;  // unmatched benchmarks (display names)
  std::vector<std::string> warnings;  // e.g. a loaded machine, an inferred direction
};

inline constexpr int kExitPass = 0;
inline constexpr int kExitRegression = 1;
inline constexpr int kExitBadInput = kExitUsage;
inline constexpr int kExitUndecided = 3;  // --sequential: the rule has not stopped; run more pairs

// 1 when any finding regressed, else 3 when a sequential finding is still undecided, else 0.
int exit_code(const GateReport& report);
// The verdicts as a document section (reports/document.hpp), printed as text or as markdown with
// a level-3 heading (a PR comment): the headline as its title, the inputs and direction, the
// verdict table, and notes (unmatched benchmarks, sequential stops, warnings, the rule applied).
reports::Section gate_section(const GateReport& report);
inline constexpr int kMarkdownHeading = 3;
nlohmann::json to_json(const GateReport& report);

}  // namespace layerbench::gate
