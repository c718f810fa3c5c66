#pragma once
// layerbench-moe on any model but MAGI-2: the standard expert-parallel block, checked against
// the CPU oracle and profiled component by component from its own table.
#include "harness/main.hpp"
#include "bench/moe/run_config.hpp"

namespace layerbench::moe {

int run_standard(harness::Context& ctx, const RunConfig& c);

// The standard block's own flags: --dispatch bf16|fp8.
void add_std_flags(CLI::App& app, RunConfig& c);

}  // namespace layerbench::moe
