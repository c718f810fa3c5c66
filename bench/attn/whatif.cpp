#include "bench/attn/whatif.hpp"

namespace layerbench::attention {

std::vector<harness::WhatIfResult> run_attention_what_ifs(SpAttention& sp, Communicator& world,
                                                          const std::vector<harness::WhatIfTarget>& targets,
                                                          const harness::WhatIfOptions& o, int layers,
                                                          const std::vector<const reports::Measurement*>& measured) {
  std::vector<harness::WhatIfResult> out;
  Device& dev = world.device();
  const Stream s = dev.compute_stream();
  InjectedDelays delays(dev);
  sp.set_delay_hook(&delays);
  for (const auto& t : targets) {
    std::size_t last_count = 0;
    auto stack = [&](double us) {
      const auto r = harness::time_stack(world, s, delays, t, us, [&] {
        for (int l = 0; l < layers; ++l) sp.forward(s);
      });
      last_count = r.injected;
      return r.ms;
    };
    (void)stack(0);  // counts the instances; a component this case skips has none
    if (last_count == 0) continue;
    const int instances = static_cast<int>(last_count);
    auto calibrate = [&](double us) { return harness::calibrate_delay(world, s, t, us, o.calibration_reps); };
    std::vector<double> cost;
    for (const auto* m : measured)
      if (m && m->name == t.component) cost = m->samples_ms;
    // The measured costs are per forward (pad_pack: packs and unpacks together): one per forward.
    out.push_back(harness::run_what_if(o, t, instances, 1, cost, calibrate, stack));
  }
  sp.set_delay_hook(nullptr);
  return out;
}

}  // namespace layerbench::attention
