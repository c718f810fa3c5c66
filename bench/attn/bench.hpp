#pragma once
// layerbench-attn: configuration, flags and the run (the binary's main is a thin wrapper).
#include "harness/main.hpp"

#include <string>
#include <vector>

namespace layerbench::attention {

struct BenchConfig {
  harness::CommonOptions common;
  int heads = 14;
  int head_dim = 128;
  std::vector<long long> seqs{16384};
  long long batch = 1;
  long long text_tokens = 0;
  std::string dtype = "bf16";
  std::string topologies;           // e.g. "usp4+uaa,cp4,usp2+cp2"
  double verify_budget = 1e9;       // multiply-adds of host reference per rank and case
  std::string sdpa = "auto";        // cuDNN graph form: auto | unified | composite
  std::string what_if;              // components to delay ("a,b@begin"), "" = no what-if
  std::vector<double> what_if_levels = {0, 10, 20, 40};
  int what_if_rounds = 8;
  int layers = 4;                   // forwards per timed stack of the what-if
};

void add_flags(CLI::App& app, BenchConfig& c);
void validate(const BenchConfig& c);  // UsageError; the world-size check happens in run()
int run(harness::Context& ctx, const BenchConfig& c);

}  // namespace layerbench::attention
