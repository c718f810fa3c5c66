#pragma once
// The layerbench-moe driver: flags, the component profile (table, derived lines, JSON,
// markdown) and the `--ab metadata` interleaved stack A/B.
#include "harness/main.hpp"
#include "bench/moe/run_config.hpp"
#include "moe/magi2/layer.hpp"

#include <CLI/CLI.hpp>

#include <memory>

namespace layerbench::moe {

void add_flags(CLI::App& app, RunConfig& c);
int run(harness::Context& ctx, const RunConfig& c);

// Builds the plan, ops and layer of this rank for `c` on the EP group `ep` (UsageError on a
// geometry that does not fit the group).
std::unique_ptr<MoeLayer> make_layer(const RunConfig& c, Communicator& ep, std::uint64_t seed);

// Where the layers of a stack take their input (--stack-input).
//   same: every layer reads `a` and writes `b`. Every instance does the same work on the same
//     data, so a component left out (`--ab drop:`, the what-if's zero copies) leaves in its output
//     buffer exactly what it would have written: the rest of the stack computes on unchanged data
//     and the removal takes away the component's own work and nothing else, as a replicated copy
//     (idempotent) adds its own work and nothing else.
//   chained: layer l reads layer l-1's output (ping-pong between a and b), a model's data flow.
//     A component left out then leaves a stale output that flows on: every later layer routes
//     differently (other expert loads and tiles), so a removal A/B measures the component plus a
//     change of the rest's work (stack_expert_tiles in the expert load says how much it varies).
enum class StackInput { same, chained };
StackInput parse_stack_input(const std::string& s);  // "same" | "chained"
std::string to_string(StackInput i);

// L applications of `layer` (the same weights) from `a`; returns the buffer holding the last
// layer's output. Passes the request-scoped split to every layer when `reuse`.
void* run_stack(MoeLayer& layer, void* a, void* b, int layers, bool reuse, Stream s, StackInput input);

}  // namespace layerbench::moe
