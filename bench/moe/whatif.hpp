#pragma once
// layerbench-moe's what-if profile and telemetry: which components can be delayed and how, the
// what-if of each inside the L-layer stack (harness/whatif.hpp), GPU telemetry windows
// reduced over ranks, and the predictions the profile checks (metadata A/B, overlap probe).
#include "study/telemetry.hpp"
#include "harness/whatif.hpp"
#include "bench/moe/report.hpp"
#include "reports/document.hpp"
#include "collectives/telemetry.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace layerbench::moe {

// The GPU sampler of this rank's device per --telemetry (auto: on the cuda backend), or null;
// `status` says what it samples or why it does not.
std::unique_ptr<telemetry::Sampler> make_sampler(const RunConfig& c, Communicator& world, std::string* status);

// A telemetry window [t0, t1] of this rank, reduced over the ranks (lowest mean SM clock,
// highest power-capped share, power and peak memory). Collective.
ab::RunCovariates window_covariates(Communicator& world, const telemetry::Sampler* sampler, double t0, double t1);
nlohmann::json covariates_json(const ab::RunCovariates& r);

// A layer's component table as the what-if and the removal A/Bs read it: what each component
// allows, the names the family has only in its other layouts (refused with the layout named), the
// what-ifs the family's own A/B needs, and a hint for a component that cannot be skipped.
struct ComponentTable {
  std::vector<Component> table;
  std::string layout;                   // e.g. "sp", "tp", "ep"
  std::vector<std::string> elsewhere;   // the family's components this layout lacks
  std::vector<harness::WhatIfTarget> ab_what_ifs;
  std::string no_skip_hint;
};

// The --what-if targets and the removal A/Bs' what-ifs, checked against the table (UsageError:
// a component the layer lacks or that does not allow it; a drop given twice).
std::vector<harness::WhatIfTarget> what_if_targets(const RunConfig& c, const ComponentTable& table);

// The collective energy meter of the what-ifs and A/Bs: NVML's total-energy counters of every
// rank's device, summed over ranks (J); NaN without a counter (the host backend).
std::function<double()> energy_meter(Communicator& w, const telemetry::Sampler* sampler);

// Runs every target's what-if in the --layers stack with the per-layer exchange (every
// component present), priced at the isolated costs in `comps`. Collective.
std::vector<harness::WhatIfResult> run_what_ifs(LayerInterface& layer, const void* x, const RunConfig& c,
                                                const std::vector<harness::WhatIfTarget>& targets,
                                                const std::vector<ComponentResult>& comps,
                                                const telemetry::Sampler* sampler,
                                                const std::function<void(const std::vector<harness::WhatIfResult>&)>& after_each = {});

// The expert tiles (kExpertTileRows rows, summed over ranks) routed in each layer of an L-layer
// stack from `x`, for both stack inputs: {"same": [...], "chained": [...]}. Under the same input
// every layer routes alike; chained, the loads move from layer to layer, and a component left
// out of a chained stack moves them again. Leaves every buffer of the layer as a forward on `x`
// does. Collective.
nlohmann::json stack_expert_tiles(LayerInterface& layer, const void* x, int layers);

// The metadata A/B's prediction from the exchange's what-if: fraction x cost x exchanges saved
// per stack, with the half-width of its interval. Empty without such a what-if.
struct Prediction {
  std::string source;  // e.g. "what-if seq_size_exchange"
  double value = 0, half_width = 0;
  stats::Interval ci;
};
std::vector<Prediction> exchange_predictions(const std::vector<harness::WhatIfResult>& w, double saved_per_stack,
                                             double confidence);

// The overlap probe (shared branch beside the dispatch): predicted saving per layer = the
// dispatch's critical-path fraction x min(dispatch, shared) cost, beside the measured
// serialized - overlapped difference of medians (bootstrap CI) and the verdict. Markdown and
// JSON; empty without an ep_dispatch what-if or the probe.
struct OverlapCheck {
  nlohmann::json json;
  std::string markdown;
};
std::optional<OverlapCheck> overlap_check(const std::vector<harness::WhatIfResult>& w,
                                          const std::vector<ComponentResult>& comps, double confidence);

// What the suite does not time, as a document section: the framework around the layer.
reports::Section not_timed_section(const RunConfig& c, const std::vector<ComponentResult>& comps,
                                   const std::vector<harness::WhatIfResult>& w);

}  // namespace layerbench::moe
