#pragma once
// layerbench-attn --advise: every valid topology of --gpus N for one problem, its forward time
// predicted from local work timed on this device (or read from a layerbench-attn result file)
// and collectives from layerbench-coll result files (attention/advise_model.hpp).
#include "bench/attn/bench.hpp"

namespace layerbench::attention {

int run_advise(harness::Context& ctx, const BenchConfig& c);

}  // namespace layerbench::attention
