// layerbench-attn's flags: the model presets, the flag table and the one validation of a
// configuration (UsageError, exit 2 on every rank).
#include "bench/attn/bench.hpp"

#include "attention/presets.hpp"
#include "attention/sp_attention.hpp"
#include "attention/topology.hpp"
#include "attention/workload.hpp"
#include "common/cli.hpp"
#include "common/numeric.hpp"
#include "common/usage.hpp"
#include "harness/whatif.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

namespace layerbench::attention {

namespace {
// --model fills what the user did not give; --resolution/--frames become --seqs (formula kept).
void apply_preset(BenchConfig& c, const CLI::App& app) {
  auto given = [&](const char* flag) { return app.count(flag) > 0; };
  if (c.model.empty()) {
    if (given("--resolution") || given("--frames"))
      throw UsageError("--resolution/--frames need --model (the model's VAE and patch strides)");
    return;
  }
  const ModelPreset& m = find_model(c.model);
  c.model = m.name;
  if (!given("--heads")) c.heads = m.heads;
  if (!given("--kv-heads")) c.kv_heads = m.kv_heads;
  if (!given("--head-dim")) c.head_dim = m.head_dim;
  if (!given("--text-tokens")) c.text_tokens = m.text_tokens;
  c.ulysses_only = m.ulysses_only;
  if (!c.resolution.empty()) {
    if (given("--seqs")) throw UsageError("--seqs and --resolution: give one of them");
    const auto [w, h] = parse_resolution(c.resolution);
    const auto len = sequence_length(m, w, h, c.frames > 0 ? c.frames : 1);
    c.seqs = {len.tokens};
    c.seq_formula = fmt::format("{} at {} x {} frames: {}", m.name, c.resolution, c.frames > 0 ? c.frames : 1, len.formula);
  } else if (given("--frames")) {
    throw UsageError("--frames needs --resolution");
  }
}
}  // namespace

void add_flags(CLI::App& app, BenchConfig& c) {
  cli::add_int(app, "--heads", c.heads, "attention heads H", 1, 4096);
  cli::add_int(app, "--head-dim", c.head_dim, "head dimension D (a multiple of 8)", 8, 1024);
  cli::add_int_list(app, "--seqs", c.seqs, "global image sequence lengths S", 1LL, 1LL << 31);
  cli::add_int(app, "--batch", c.batch, "batch B", 1LL, 1LL << 20);
  cli::add_int(app, "--text-tokens", c.text_tokens, "joint (text) tokens Lt, replicated on every rank", 0LL, 1LL << 31);
  app.add_option("--model", c.model, "model preset (case-insensitive; --list-models): sets heads, KV heads, head dim, "
                 "joint tokens unless given");
  app.add_flag("--list-models", c.list_models, "print the model presets and exit");
  app.add_option("--resolution", c.resolution, "WxH: with --model and --frames, the sequence length through the "
                 "model's VAE and patch strides (formula printed)");
  cli::add_int(app, "--frames", c.frames, "video frames (with --resolution; image models: 1)", 1, 1 << 20);
  app.parse_complete_callback([&c, &app] { apply_preset(c, app); });
  app.add_flag("--advise", c.advise, "topology advisor: every valid topology of --gpus N, its forward time predicted "
               "(local work timed here, collectives from --coll); one rank");
  cli::add_int(app, "--gpus", c.gpus, "--advise: GPUs of the machine the advice is for", 1, 1 << 20);
  app.add_option("--coll", c.coll_files, "--advise: layerbench-coll result JSON of that machine (repeatable)");
  app.add_flag("--coll-rescale", c.coll_rescale,
               "--advise: a group size no sweep has is costed from the nearest sweep through its bus bandwidth (said "
               "in the advice); without it such a group is refused");
  app.add_option("--local-table", c.local_table,
                 "--advise: layerbench-attn result JSON whose attention / pad_pack are used instead of timing here");
  cli::add_real(app, "--margin", c.margin, "--advise: interval widening, fraction of the predicted median",
                num::RealRange::positive(1.0));
  cli::add_real(app, "--advise-budget-s", c.advise_budget_s,
                "--advise: seconds one topology's local timing may take; a longer sequence is timed shorter and scaled "
                "by declared work (0: 3 on host, 60 on cuda)",
                num::RealRange::non_negative(86400));
  app.add_option("--dtype", c.dtype, "bf16 | fp32 (fp32: host backend only)");
  app.add_option("--topologies", c.topologies,
                 "comma list of uspU, ringR, cpA joined by '+' (U*R*A = ranks), +uaa pads heads: usp2+ring2, usp4+uaa, cp4");
  cli::add_int(app, "--kv-heads", c.kv_heads, "K/V heads (GQA when below --heads; default: --heads)", 0, 4096);
  app.add_option("--joint", c.joint, "joint (text) tokens attach at the front or the rear of the sequence");
  cli::add_int_list(app, "--joint-lengths", c.joint_lengths,
                    "valid joint tokens per request (key-padding mask; unequal prompt lengths)", 0LL, 1LL << 31);
  cli::add_int_list(app, "--image-lengths", c.image_lengths, "valid image tokens per request (key-padding mask)", 0LL,
                    1LL << 31);
  cli::add_int(app, "--requests", c.requests, "packed requests per batch row (lengths 1:2:...:n, cu_seqlens)", 1, 1 << 20);
  cli::add_int_list(app, "--cu-seqlens", c.cu_seqlens, "packed requests as cu_seqlens 0,...,S (one --seqs only)", 0LL,
                    1LL << 31);
  cli::add_int(app, "--cached-kv", c.cached_kv, "reused K/V prefix rows attended by every query (no queries of their own)",
               0LL, 1LL << 31);
  app.add_flag("--causal", c.causal, "causal attention (not served by these layouts: exit 2)");
  cli::add_real(app, "--verify-budget", c.verify_budget,
                "host reference multiply-adds per rank and case (rows are sampled above it)",
                num::RealRange::positive(1e15));
  harness::mark_cuda_only(app.add_option("--sdpa", c.sdpa, "cuDNN SDPA graph form: auto | unified | composite"));
  app.add_option("--what-if", c.what_if, "what-if (critical-path) profile of these components inside a stack of "
                 "--layers forwards: COMPONENT[@begin|@end][,...] (device spin; host wait for length_exchange)");
  app.add_option("--what-if-levels", c.what_if_levels, "injected delays per instance in us")->delimiter(',');
  cli::add_int(app, "--what-if-rounds", c.what_if_rounds, "what-if rounds (each visits every level once)", 2, 100000);
  cli::add_int(app, "--layers", c.layers, "forwards per timed stack of the what-if", 1, 10000);
  cli::add_int(app, "--repeat", c.repeat, "time the topologies' forwards round-robin this many times (run-to-run "
               "spread of the ratios beside each run's interval)", 1, 100);
}

harness::WhatIfOptions what_if_options(const BenchConfig& c) {
  harness::WhatIfOptions o;
  o.levels_us = c.what_if_levels;
  o.rounds = c.what_if_rounds;
  return o;
}
std::vector<harness::WhatIfTarget> what_if_targets(const BenchConfig& c) {
  if (c.what_if.empty()) return {};
  return harness::parse_what_if(c.what_if, SpAttention::hook_points(), {"length_exchange"});
}

void validate(const BenchConfig& c) {
  if (c.list_models) return;
  if (!c.advise && (c.gpus > 0 || !c.coll_files.empty() || !c.local_table.empty()))
    throw UsageError("--gpus, --coll and --local-table belong to --advise");
  if (!c.advise && c.coll_rescale) throw UsageError("--coll-rescale belongs to --advise");
  if (c.advise && c.topologies.empty()) {
    parse_joint_position(c.joint);
    return;
  }
  if (c.topologies.empty()) throw UsageError("--topologies is required (a list, or 'all')");
  if (c.topologies != "all") parse_topologies(c.topologies);  // throws UsageError with the bad spelling
  parse_joint_position(c.joint);
  if (c.requests > 1 && !c.cu_seqlens.empty()) throw UsageError("--requests and --cu-seqlens: give one of them");
  if (c.dtype != "bf16" && c.dtype != "fp32")
    throw UsageError(fmt::format("--dtype {}: expected bf16 or fp32 (fp32: host backend only)", c.dtype));
  if (c.seqs.empty()) throw UsageError("--seqs is empty");
  for (long long s : c.seqs)
    if (s < 1) throw UsageError(fmt::format("--seqs: {} is not a positive length", s));
  if (c.text_tokens < 0) throw UsageError("--text-tokens must be >= 0");
  if (c.sdpa != "auto" && c.sdpa != "unified" && c.sdpa != "composite")
    throw UsageError(fmt::format("--sdpa '{}': expected auto, unified or composite", c.sdpa));
  if (c.head_dim % 8 != 0) throw UsageError(fmt::format("--head-dim {}: must be a multiple of 8", c.head_dim));
  // Each rank holds the gathered K/V of the whole sequence plus its Q/O shards and the reference
  // copies: about 12 buffers of B x (S + Lt) x H x D values (4 bytes on the host).
  const long long longest = *std::max_element(c.seqs.begin(), c.seqs.end());
  const double per_rank = 12.0 * 4 * static_cast<double>(c.batch) * static_cast<double>(longest + c.text_tokens) *
                          c.heads * c.head_dim;
  num::check_memory(per_rank < 1.8e19 ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(per_rank)) : std::nullopt,
                    num::ranks_on_this_machine(), fmt::format("--seqs {} with --heads {} --head-dim {}", longest, c.heads, c.head_dim),
                    "lower --seqs, --heads or --head-dim");
  if (!c.what_if.empty()) {
    harness::validate_what_if(what_if_options(c));
    (void)what_if_targets(c);
  }
}

}  // namespace layerbench::attention
