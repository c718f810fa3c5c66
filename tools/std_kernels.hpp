#pragma once
// layerbench-moe-kernels --models: the standard block's router and expert paths per preset
// (tools/std_kernels.cpp).
#include "collectives/device.hpp"
#include "moe/config/model.hpp"
#include "moe/standard/std_ops.hpp"

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

// The preset's router at T tokens (checked against the host definition on the first 512, then
// timed): the routed row count of every expert. False on a mismatch.
bool route_preset(Device& dev, StdOps& ops, const Model& m, std::int64_t tokens, int warmup, int iterations,
                  std::vector<std::int64_t>& counts);

// Returns the process exit code (1 when a check fails).
int run_std_study(const std::vector<std::string>& models, std::int64_t tokens, int warmup, int iterations,
                  const std::string& table, const std::string& counts_dir);

}  // namespace layerbench::moe
