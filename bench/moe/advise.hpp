#pragma once
// layerbench-moe --advise: every layout of the model on --gpus N (moe/advisor/advise_layout.hpp), each
// component's time predicted from one-rank layers timed on this device at the per-rank shapes the
// layout implies (shrunk to --advise-budget-s and scaled by declared work when the backend cannot
// run them in seconds), the expert load imbalance measured from real routing at each EP, and the
// collectives from layerbench-coll sweeps (--coll, --coll-inter) or an assumed link.
#include "harness/main.hpp"
#include "bench/moe/run_config.hpp"

#include <CLI/CLI.hpp>

namespace layerbench::moe {

void add_advise_flags(CLI::App& app, RunConfig& c);
int run_advise(harness::Context& ctx, const RunConfig& c);

}  // namespace layerbench::moe
