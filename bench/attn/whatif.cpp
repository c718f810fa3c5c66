#include "bench/attn/whatif.hpp"

#include <chrono>

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
    auto max_ms = [&](double ms) {
      world.control_max(std::span<double>(&ms, 1));
      return ms;
    };
    std::size_t last_count = 0;
    auto stack = [&](double us) {
      delays.clear();
      delays.set(t.component, t.edge, t.kind, us);
      dev.synchronize(s);
      world.control_barrier();
      const auto n0 = delays.injected();
      const auto t0 = std::chrono::steady_clock::now();
      for (int l = 0; l < layers; ++l) sp.forward(s);
      dev.synchronize(s);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      last_count = delays.injected() - n0;
      return max_ms(ms);
    };
    (void)stack(0);  // counts the instances; a component this case skips has none
    if (last_count == 0) continue;
    const int instances = static_cast<int>(last_count);
    auto calibrate = [&](double us) {
      return max_ms(t.kind == DelayKind::host ? harness::calibrate_host_spin(us, o.calibration_reps)
                                              : harness::calibrate_device_spin(dev, s, us, o.calibration_reps));
    };
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
