#pragma once
// layerbench-moe-kernels --models ... --precision fp8-rowwise | fp8-block (tools/fp8_kernels.cpp).
#include <cstdint>
#include <string>
#include <vector>

namespace layerbench::moe {

// Returns the process exit code (1 when a check fails).
int run_fp8_study(const std::vector<std::string>& models, std::int64_t tokens, int warmup, int iterations,
                  const std::string& counts_dir, bool block);

}  // namespace layerbench::moe
