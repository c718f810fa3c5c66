#pragma once
// layerbench-attn --what-if: the critical-path fraction of the attention forward's components
// inside a stack of --layers forwards (harness/whatif.hpp), one case at a time.
#include "attention/sp_attention.hpp"
#include "harness/whatif.hpp"
#include "reports/result.hpp"

#include <string>
#include <vector>

namespace layerbench::attention {

// What-ifs of `targets` for one case; components this topology does not run are left out.
// `measured` holds the case's component measurements (their samples are the isolated costs).
// Collective.
std::vector<harness::WhatIfResult> run_attention_what_ifs(SpAttention& sp, Communicator& world,
                                                          const std::vector<harness::WhatIfTarget>& targets,
                                                          const harness::WhatIfOptions& o, int layers,
                                                          const std::vector<const reports::Measurement*>& measured);

}  // namespace layerbench::attention
