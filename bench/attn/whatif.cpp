#include "bench/attn/whatif.hpp"

namespace layerbench::attention {

std::vector<harness::WhatIfResult> run_attention_what_ifs(SpAttention& sp, Communicator& world,
                                                          const std::vector<harness::WhatIfTarget>& targets,
                                                          const harness::WhatIfOptions& o, int layers,
                                                          const std::vector<const reports::Measurement*>& measured) {
  std::vector<harness::WhatIfResult> out;
  const Stream s = world.device().compute_stream();
  InjectedDelays delays(world.device());
  sp.set_delay_hook(&delays);
  for (const auto& t : targets) {
    std::vector<double> cost;
    for (const auto* m : measured)
      if (m && m->name == t.component) cost = m->samples_ms;
    // The measured costs are per forward (pad_pack: packs and unpacks together): one per forward.
    auto r = harness::run_delay_what_if(world, s, delays, o, t, 1, cost, [&] {
      for (int l = 0; l < layers; ++l) sp.forward(s);
    });
    if (r) out.push_back(std::move(*r));  // a component this case skips has no instances
  }
  sp.set_delay_hook(nullptr);
  return out;
}

}  // namespace layerbench::attention
