#pragma once
// layerbench-attn: configuration, flags and the run (the binary's main is a thin wrapper).
#include "attention/topology.hpp"
#include "attention/workload.hpp"
#include "harness/main.hpp"
#include "harness/whatif.hpp"

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
  std::string topologies;           // e.g. "usp4+uaa,cp4,usp2+cp2,usp2+ring2"
  // Workload (attention/workload.hpp)
  int kv_heads = 0;                 // 0 = heads (MHA)
  std::string joint = "front";      // joint tokens: front | rear
  std::vector<long long> joint_lengths;  // valid joint tokens per request (key-padding mask)
  std::vector<long long> image_lengths;  // valid image tokens per request (key-padding mask)
  int requests = 1;                 // packed requests per batch row (unequal lengths 1:2:...)
  std::vector<long long> cu_seqlens;  // explicit packed requests over the image sequence
  long long cached_kv = 0;          // reused K/V prefix rows (no queries)
  bool causal = false;              // not served: fails closed
  // Model presets (attention/presets.hpp)
  std::string model;                // sets heads, KV heads, head dim, joint tokens (explicit flags win)
  bool list_models = false;
  std::string resolution;           // WxH -> --seqs through the model's strides
  int frames = 0;                   // 0: 1 for image models
  std::string seq_formula;          // how --resolution became the sequence length
  bool ulysses_only = false;        // the model serves Ulysses only
  // Topology advisor (bench/attn/advise.hpp)
  bool advise = false;
  int gpus = 0;                     // the machine the advice is for
  std::vector<std::string> coll_files;  // layerbench-coll result JSON of that machine
  bool coll_rescale = false;            // --coll-rescale: group sizes without a sweep from the nearest one
  std::string local_table;          // layerbench-attn result JSON with the local components (else timed here)
  double margin = 0.05;             // interval widening, fraction of the predicted median
  double advise_budget_s = 0;       // seconds one topology's calibration may take (0: 3 host, 60 cuda)
  double verify_budget = 1e9;       // multiply-adds of host reference per rank and case
  std::string sdpa = "auto";        // cuDNN graph form: auto | unified | composite
  std::string what_if;              // components to delay ("a,b@begin"), "" = no what-if
  std::vector<double> what_if_levels = {0, 10, 20, 40};
  int what_if_rounds = 8;
  int layers = 4;                   // forwards per timed stack of the what-if
  int repeat = 1;                   // round-robin runs of the topologies' forwards (run-to-run spread)
};

void add_flags(CLI::App& app, BenchConfig& c);
void validate(const BenchConfig& c);  // UsageError; the world-size check happens in run()
// The what-if's options and targets from the flags (targets: SpAttention's hook points).
harness::WhatIfOptions what_if_options(const BenchConfig& c);
std::vector<harness::WhatIfTarget> what_if_targets(const BenchConfig& c);
// The problem of one sequence length (workload flags applied).
Problem problem_of(const BenchConfig& c, long long seq);
// UsageError unless topology t serves c's workload on `world` ranks (the model's rules included).
void check_case(const BenchConfig& c, const Topology& t, int world);
int run(harness::Context& ctx, const BenchConfig& c);

}  // namespace layerbench::attention
