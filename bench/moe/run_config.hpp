#pragma once
// The layerbench-moe run configuration (flags beside the layer's geometry), validated once.
// NOTES: every invariant the layer and the kernels rely on is checked here (UsageError).
#include "harness/options.hpp"
#include "moe/magi2/config.hpp"
#include "moe/config/model.hpp"
#include "moe/magi2/ops.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace layerbench::moe {

struct RunConfig {
  harness::CommonOptions common;
  // The model (preset, --hf-config, flag overrides), resolved once after parsing; `geo` mirrors
  // its geometry for the MAGI-2 multi-head layer.
  Model model = preset("magi-2");
  std::string model_name = "magi-2";  // --model
  std::string hf_config;              // --hf-config FILE (replaces --model)
  std::string hf_family;              // --family NAME: read --hf-config with one family's semantics
  bool describe = false;              // print the resolved model (layerbench-model/1) and exit
  bool list_models = false;           // print the presets and exit
  int ep = 0;                         // standard block: expert-parallel ranks (0 = the world)
  Geometry geo;
  std::int64_t tokens = 7500;             // local tokens per rank (sp) / replicated tokens (tp)
  std::vector<std::int64_t> split_sizes;  // sp: per-rank tokens; empty = [tokens] * world
  std::string layout = "sp";
  int layers = 1;       // stack depth used by whole-stack figures and the A/B
  int moe_layers = 36;  // MoE layers per transformer forward (for the derived lines)
  std::string stack_input = "same";  // same | chained: bench/moe/profile.hpp StackInput
  std::string ab;       // "" or "metadata"
  std::vector<std::string> ab_drops;  // --ab drop:COMPONENT (repeatable): removal A/Bs
  int pairs = 31;              // the number of pairs, or the cap with ab_sequential
  // Untimed stacks of the same variant before a timed stack whose neighbour ran another one (what-if
  // rounds and A/B pairs; harness/interleave.hpp); 0 = off.
  int prime_stacks = 1;
  bool ab_sequential = false;  // stop the A/B once a confidence sequence decides (stats/sequential.hpp)
  std::string ab_equivalence;  // "" or a margin: "1%" of the base mean, or ms
  double confidence = 0.95;  // of every interval the profile and the A/B print (alpha = 1 - confidence)
  ExpertPath expert_gemm = ExpertPath::automatic;  // cuda; the flag offers the profile's paths
  std::string expert_table;  // standard block, cuda: layerbench-moe-kernels' per-shape expert paths
  std::string dispatch;      // standard block: --dispatch bf16 (the act type) | fp8; "" = not given (bf16)
  std::int64_t dense_gemm_size = 0;  // 0 = 8192 on cuda, 256 on host
  bool skip_check = false;
  bool graph = false;  // also time the layer and the stack replayed as CUDA graphs
  // What-if profile: components to delay inside the --layers stack ("a,b@begin"), delay levels
  // (microseconds per instance) and rounds.
  std::string what_if;
  std::vector<double> what_if_levels = {0, 10, 20, 40};
  int what_if_rounds = 8;               // replicate: the minimum before the stopping rule
  std::string what_if_method;           // "" (auto: replicate device work, delay idle), replicate, delay
  double what_if_seconds = 60;          // replicate: cap on the stacks' time per component
  double what_if_precision = 0.10;      // replicate: stop at this relative half-width of the slope's interval
  std::vector<int> what_if_copies = {0, 1, 2, 3};  // replicate: copies per instance (0 where removable)
  double what_if_floor_ms = 0.02;       // replicate: ... or this absolute one, for components under 0.2 ms (0: none)
  int repeat = 1;                       // runs of the interleaved reference ratios (run-to-run spread)
  std::string telemetry = "auto";     // auto (gpu on the cuda backend) | gpu | off
  double telemetry_period_ms = 10;
  double framework_exchange_ms = 0;   // a framework's exchange, measured elsewhere (0: not given)
  // --advise (bench/moe/advise.hpp): the machine the advice is for and its inputs.
  bool advise = false;
  int gpus = 0, gpus_per_node = 8;
  std::vector<std::string> coll_files, coll_inter_files;
  bool coll_rescale = false;  // --coll-rescale: group sizes without a sweep from the nearest one
  double inter_gbps = 0, inter_latency_us = 0;  // an assumed network link per GPU
  double margin = 0.05;                         // interval widening, x median
  double advise_budget_s = 0;                   // per calibration run (0: 3 s host, 20 s cuda)
  std::string calibration;                      // a previous --advise JSON: its calibration, untimed
};

// Checks that do not need the world size (UsageError).
void validate(const RunConfig& c);
// Rough upper bound of one rank's memory (activations, its share of the expert banks, the
// replicated MLPs); nothing when it does not fit in 64 bits.
std::optional<std::uint64_t> bytes_per_rank(const RunConfig& c, int world);
// Checks against the world: split sizes match, heads divisible under TP, ..., and the memory
// estimate (UsageError with the estimate).
void validate_for_world(const RunConfig& c, int world);

}  // namespace layerbench::moe
