#pragma once
// The one profile driver of layerbench-moe. A family (the MAGI-2 multi-head layer, the standard
// expert-parallel block) is its layer's component table (moe/layer_interface.hpp) plus the little
// it adds here: its checks before timing, its expert load, its own probes and stack figures, its
// header and derived lines. From that alone the driver times every component against the dense
// reference of the same run, stacks (--layers, same or chained input), repeats (--repeat), samples
// telemetry and energy, captures the layer and the stack in CUDA graphs (--graph), prices
// components by replication or delay (--what-if), runs the removal A/Bs (--ab drop:) against their
// predictions, and reports.
#include "bench/moe/profile.hpp"
#include "bench/moe/report.hpp"
#include "bench/moe/run_config.hpp"
#include "bench/moe/whatif.hpp"
#include "harness/main.hpp"
#include "harness/runner.hpp"
#include "moe/layer_interface.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace layerbench::moe {

// A row the family adds to its table: a probe (timed, not part of the total) or a stack figure.
struct FamilyRow {
  std::string name;
  std::function<void(Stream)> body;
  harness::Clock clock = harness::Clock::device;
  reports::Role role = reports::Role::probe;
  std::string parent;
  reports::Work work = {};
  std::string after;  // timed right after this component of the table ("" = after the table)
};

// One layer of a stack figure: `layer` is what each of the stack's layers runs.
struct StackFigure {
  std::string name;  // e.g. "stack" or "stack_reused_split_sizes"
  LayerFn layer;
  harness::Clock clock = harness::Clock::host;
};

class Family {
 public:
  virtual ~Family() = default;
  virtual LayerInterface& layer() = 0;
  // The measurement group ("sp", "tp", "ep2") and the words for the layout in messages.
  virtual std::string group() const = 0;
  virtual ComponentTable table() = 0;
  // Consistency checks on x before any timing (every rank; throws Error when one fails anywhere).
  // The forward has run once on x.
  virtual nlohmann::json check(const void* x) = 0;
  // The expert load of the input the components are timed on (collective).
  virtual nlohmann::json load(const void* x) = 0;
  // Components of the table timed by another body than run_component (MAGI-2's TP reduction:
  // the collective alone), or skipped (nullptr body).
  virtual std::optional<FamilyRow> instead_of(const Component& c) {
    (void)c;
    return std::nullopt;
  }
  // The family's own probes (timed like components; placed after `after`).
  virtual std::vector<FamilyRow> probes(const void* x, void* out) {
    (void)x, (void)out;
    return {};
  }
  // The stack figures (--layers > 1); the first is the stack the what-ifs and A/Bs time.
  virtual std::vector<StackFigure> stacks() = 0;
  // The title of the profile, the header notes (model, kernel paths come from the table), the
  // per-measurement parameters, and the run configuration's JSON.
  virtual std::string title(const std::string& ops) const = 0;
  virtual std::string ops_text() = 0;
  virtual nlohmann::json params() const = 0;
  virtual nlohmann::json config_json() const = 0;
  virtual std::int64_t tokens_per_rank() const = 0;
  // The expert component whose rate the derived lines compare with the dense reference.
  virtual std::string expert_component() const = 0;
  // Family-specific derived lines (MAGI-2: the metadata saving, communication, overlap probe).
  virtual void derived_lines(const std::vector<reports::Measurement>& results, nlohmann::json& derived,
                             std::vector<std::string>& notes) {
    (void)results, (void)derived, (void)notes;
  }
  // Lines the header adds after the model (the standard block: the dispatch and combine bytes) and
  // their JSON (top-level keys of the document).
  virtual std::vector<std::string> header_notes() { return {}; }
  virtual nlohmann::json extra_json() { return nlohmann::json::object(); }
  // The family's own A/B (MAGI-2: --ab metadata), after the what-ifs.
  virtual std::optional<AbResult> own_ab(const void* x, const std::vector<ComponentResult>& comps,
                                         const std::vector<harness::WhatIfResult>& what_ifs,
                                         const telemetry::Sampler* sampler) {
    (void)x, (void)comps, (void)what_ifs, (void)sampler;
    return std::nullopt;
  }
};

// Whether `bytes` bytes at x and y (device or host memory of `dev`) are equal bit for bit.
bool bitwise_equal(Device& dev, const void* x, const void* y, std::size_t bytes);

// Times, stacks, repeats, captures, prices and reports the family's layer per `c`.
int run_profile(harness::Context& ctx, const RunConfig& c, Family& family);

// The families.
std::unique_ptr<Family> make_magi2_family(const RunConfig& c, Communicator& world);
std::unique_ptr<Family> make_standard_family(const RunConfig& c, Communicator& world);
// The standard block's own flags: --dispatch bf16|fp8.
void add_std_flags(CLI::App& app, RunConfig& c);

}  // namespace layerbench::moe
