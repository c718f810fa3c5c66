#pragma once
// layerbench-moe-kernels --models: the standard block's router and expert paths per preset
// (tools/std_kernels.cpp).
#include "collectives/device.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace layerbench::moe {

// A kernel study's timing: `launch` run `warmup` times, then timed alone `iterations` times on
// the compute stream with the device's timer.
struct Timing {
  double median, min;
};
Timing time_it(Device& dev, int warmup, int iterations, const std::function<void()>& launch);

// Returns the process exit code (1 when a check fails).
int run_std_study(const std::vector<std::string>& models, std::int64_t tokens, int warmup, int iterations,
                  const std::string& table, const std::string& counts_dir);

}  // namespace layerbench::moe
