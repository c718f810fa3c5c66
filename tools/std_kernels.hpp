#pragma once
// layerbench-moe-kernels --models: the standard block's router and expert paths per preset
// (tools/std_kernels.cpp).
#include <cstdint>
#include <string>
#include <vector>

namespace layerbench::moe {

// Returns the process exit code (1 when a check fails).
int run_std_study(const std::vector<std::string>& models, std::int64_t tokens, int warmup, int iterations,
                  const std::string& table, const std::string& counts_dir);

}  // namespace layerbench::moe
