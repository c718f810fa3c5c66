#pragma once
// The profile's output side: the component table, derived lines, JSON sections, markdown;
// the removal A/Bs and MAGI-2's `--ab metadata` study.
#include "study/telemetry.hpp"
#include "harness/main.hpp"
#include "harness/whatif.hpp"
#include "collectives/telemetry.hpp"
#include "bench/moe/run_config.hpp"
#include "moe/layer_interface.hpp"
#include "moe/magi2/layer.hpp"
#include "reports/document.hpp"
#include "reports/result.hpp"
#include "stats/common.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace layerbench::moe {

// A component: its measurement (role, parent and work declared by the profile) and the GPU
// telemetry over it (reduced over ranks).
struct ComponentResult {
  reports::Measurement m;
  ab::RunCovariates telemetry;
};

struct DenseRef {
  reports::Measurement m;  // role reference, work.flops declared
  std::int64_t size = 0;
  std::string describe;  // how it runs (the FP8 reference: cuBLASLt's algorithm)
  std::string note;      // the bf16 reference: why FP8 components have no FP8 reference ("" = they have one)
};

// An in-process A/B: its JSON, and its document sections: `head` (the design, printed as a level-3
// heading) and the analysis (reports::paired_sections with telemetry; bold titles).
struct AbResult {
  nlohmann::json json;
  reports::Section head;
  std::vector<reports::Section> analysis;
};

class Family;  // bench/moe/driver.hpp

struct ProfileInputs {
  const RunConfig& cfg;
  Family& family;
  std::string ops;
  nlohmann::json checks, load;
  std::vector<ComponentResult>& comps;
  DenseRef& dense;
  std::optional<AbResult>& ab;
  const std::vector<harness::WhatIfResult>& what_ifs;
  std::string telemetry_status;
  std::vector<AbResult>& drops;  // --ab drop:COMPONENT, in the order given
  // --repeat R > 1: the components timed against the reference, one entry per run (run 1 = the
  // profile's own); empty otherwise.
  std::vector<std::vector<reports::Measurement>>& repeats;
  // The FP8 dense reference the FP8 components were paired with (nullptr: none in this run).
  const DenseRef* dense_fp8 = nullptr;
};

// The reference a component was timed against: the FP8 dense reference or the bf16 one.
const DenseRef& reference_of(const ProfileInputs& in, const reports::Measurement& m);

using reports::median_ms;  // NaN without samples

// The measurement named `name`, or nullptr.
const reports::Measurement* find(const std::vector<reports::Measurement>& v, const std::string& name);

// What reusing the split sizes should save: the exchange's own median cost times the exchanges
// saved, with the percentile-bootstrap interval of that median (at `confidence`).
struct ExchangeEstimate {
  bool valid = false;
  double exchanges = 0, cost_ms = 0, value = 0, half_width = 0;
  stats::Interval cost_ci, ci;
  std::string text;
  nlohmann::json json;
};
ExchangeEstimate exchange_estimate(const reports::Measurement* exchange, double exchanges, double confidence);

// Interleaved stack A/B (base: per-layer exchange, candidate: reused split sizes), analysed
// by the stats engine against the profile's prediction (saving per layer x layers).
// The prediction is the exchange what-if's (fraction x cost x exchanges saved per stack, with
// its interval), checked with measured - predicted and measured / predicted intervals; the
// arms' GPU telemetry is compared when `sampler` is given.
AbResult run_ab(MoeLayer& layer, const void* x, const RunConfig& c, const std::vector<ComponentResult>& comps,
                const std::vector<harness::WhatIfResult>& what_ifs, const telemetry::Sampler* sampler);

// `--ab drop:COMPONENT`: interleaved pairs of the stack with the component (base) and with it
// skipped (candidate; timings real, outputs not checked), analysed as the metadata A/B and
// checked against the component's replication what-if (slope x instances per stack).
AbResult run_drop_ab(LayerInterface& layer, const void* x, const RunConfig& c, const std::string& component,
                     const std::vector<harness::WhatIfResult>& what_ifs, const telemetry::Sampler* sampler);

// Fills the metrics, prints the table on rank 0 and writes --json / --csv / --markdown / GB.
void finish_report(harness::Context& ctx, const harness::Runner& runner, ProfileInputs& in);

}  // namespace layerbench::moe
