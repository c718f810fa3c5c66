#pragma once
// The gate's verdict table as console text, markdown (a PR comment) and JSON, plus the exit code.
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
std::string render_text(const GateReport& report);
std::string render_markdown(const GateReport& report);
nlohmann::json to_json(const GateReport& report);

}  // namespace layerbench::gate
