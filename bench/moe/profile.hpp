#pragma once
// The layerbench-moe driver: flags, the component profile (table, derived lines, JSON,
// markdown) and the `--ab metadata` interleaved stack A/B.
#include "harness/main.hpp"
#include "bench/moe/run_config.hpp"
#include "moe/layer.hpp"

#include <CLI/CLI.hpp>

#include <memory>

namespace layerbench::moe {

void add_flags(CLI::App& app, RunConfig& c);
int run(harness::Context& ctx, const RunConfig& c);

// Builds the plan, ops and layer of this rank for `c` on the EP group `ep` (UsageError on a
// geometry that does not fit the group).
std::unique_ptr<MoeLayer> make_layer(const RunConfig& c, Communicator& ep, std::uint64_t seed);

// L applications of `layer` (the same weights), ping-ponging between a and b; returns the
// buffer holding the result. Passes the request-scoped split to every layer when `reuse`.
void* run_stack(MoeLayer& layer, void* a, void* b, int layers, bool reuse, Stream s);

}  // namespace layerbench::moe
