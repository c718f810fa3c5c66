#include "bench/moe/run_config.hpp"

#include "harness/whatif.hpp"
#include "collectives/error.hpp"
#include "common/numeric.hpp"
#include "moe/magi2/layer.hpp"
#include "stats/amount.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

namespace layerbench::moe {

void validate(const RunConfig& c) {
  if (c.describe || c.list_models) return;  // the model resolved when parsing completed; nothing runs
  // The model carries its precision (moe/config/model.hpp Precision). The standard block runs its
  // routed and shared experts in FP8 (moe/standard/std_fp8_experts.hpp); a part that nothing here
  // runs in FP8 is refused rather than timed as BF16 unsaid.
  for (const auto& [name, part] : {std::pair{"routed experts", &c.model.precision.experts},
                                   {"shared experts", &c.model.precision.shared}, {"router", &c.model.precision.router}}) {
    if (part->format == Precision::Format::bf16 || (part == &c.model.precision.shared && c.model.shared.count == 0))
      continue;
    const char* why = part == &c.model.precision.router ? "the router GEMM runs in BF16 only (its kernel has no FP8 path)"
                      : c.model.block != Block::standard ? "the MAGI-2 layer runs its experts in BF16 only"
                                                     : nullptr;
    if (!why) continue;
    throw UsageError(fmt::format("{} {} (from {}): {}; --precision bf16 profiles the BF16 layer, --describe prints the "
                                 "model with its precision", name, to_string(part->format), part->source, why));
  }
  if (!c.advise) {  // the advisor's inputs: a value away from its default means the user gave it
    const RunConfig d;
    if (c.gpus != d.gpus || c.gpus_per_node != d.gpus_per_node || !c.coll_files.empty() || !c.coll_inter_files.empty() ||
        c.coll_rescale || c.inter_gbps != d.inter_gbps || c.inter_latency_us != d.inter_latency_us ||
        c.margin != d.margin || c.advise_budget_s != d.advise_budget_s || !c.calibration.empty())
      throw UsageError("--gpus, --gpus-per-node, --coll, --coll-inter, --coll-rescale, --inter-gbps, --inter-latency-us, "
                       "--margin, --advise-budget-s and --calibration belong to --advise");
  }
  const Geometry& g = c.geo;
  auto positive = [](std::int64_t v, const char* flag) {
    if (v <= 0) throw UsageError(fmt::format("{} must be positive, got {}", flag, v));
  };
  positive(g.hidden, "--hidden");
  positive(g.heads, "--moe-heads");
  positive(g.experts, "--experts");
  positive(g.topk, "--topk");
  positive(g.intermediate, "--intermediate");
  positive(c.tokens, "--tokens");
  // Token counts become MPI element counts (int) and index one buffer each: bound them first.
  constexpr std::int64_t kMaxTokens = std::int64_t{1} << 30;
  if (c.tokens > kMaxTokens) throw UsageError(fmt::format("--tokens {}: must be at most {}", c.tokens, kMaxTokens));
  for (auto s : c.split_sizes)
    if (s > kMaxTokens) throw UsageError(fmt::format("--split-sizes entry {}: must be at most {}", s, kMaxTokens));
  for (const auto& [v, flag] : {std::pair{g.hidden, "--hidden"}, {g.heads, "--moe-heads"}, {g.intermediate, "--intermediate"}})
    if (v > (std::int64_t{1} << 20)) throw UsageError(fmt::format("{} {}: must be at most {}", flag, v, 1 << 20));
  if (g.hidden % g.heads != 0)
    throw UsageError(fmt::format("--hidden {} is not divisible by --moe-heads {}", g.hidden, g.heads));
  if (g.topk > g.experts)
    throw UsageError(fmt::format("--topk {} exceeds --experts {}", g.topk, g.experts));
  // A value from a config or preset is named by where it came from, never by a flag the user did
  // not give: "experts 2000 (from --hf-config F: config key n_routed_experts)" or "--experts 2000".
  auto named = [&](const char* field, const char* flag, std::int64_t v) {
    const auto it = c.model.sources.find(field);
    if (it == c.model.sources.end() || it->second.rfind("flag ", 0) == 0 || it->second == "default")
      return fmt::format("{} {}", flag, v);
    if (!c.hf_config.empty() && it->second.rfind("preset", 0) != 0)
      return fmt::format("{} {} (from --hf-config {}: config key {})", field, v, c.hf_config, it->second);
    return fmt::format("{} {} (from {})", field, v, it->second);
  };
  // The kernels' own limits (moe/magi2/config.hpp), named by where the value came from.
  if (const auto lim = unsupported(g)) {
    if (lim->field == "d_head")
      throw UsageError(fmt::format("d_head = hidden/heads = {} {}", g.d_head(), lim->rule));
    const auto value = lim->field == "experts" ? g.experts : lim->field == "topk" ? g.topk : g.intermediate;
    const char* flag = lim->field == "experts" ? "--experts" : lim->field == "topk" ? "--topk" : "--intermediate";
    throw UsageError(fmt::format("{}: {}", named(lim->field.c_str(), flag, value), lim->rule));
  }
  if (!(g.scale > 0)) throw UsageError("--scale must be positive");
  (void)parse_layout(c.layout);
  for (auto s : c.split_sizes)
    if (s <= 0) throw UsageError(fmt::format("--split-sizes entries must be positive, got {}", s));
  if (!c.split_sizes.empty() && c.layout == "tp")
    throw UsageError("--split-sizes applies to --layout sp (tp replicates the tokens; use --tokens)");
  if (c.layers < 1) throw UsageError("--layers must be at least 1");
  if (c.moe_layers < 1) throw UsageError("--moe-layers must be at least 1");
  if (!c.ab.empty() && c.ab != "metadata")
    throw UsageError(fmt::format("--ab {}: expected metadata or drop:COMPONENT", c.ab));
  if (!(c.confidence > 0.5 && c.confidence < 1)) throw UsageError("--confidence must be in (0.5, 1)");
  if (c.pairs < 2) throw UsageError("--pairs must be at least 2");
  if (!c.ab_equivalence.empty()) {  // which flags it needs: bench/moe/flag_scope.cpp
    const auto e = stats::parse_amount(c.ab_equivalence);
    if (!e || !(e->value > 0)) {
      throw UsageError(fmt::format("--ab-equivalence {}: expected a positive percentage (1%) or ms", c.ab_equivalence));
    }
  }
  if (c.dense_gemm_size < 0) throw UsageError("--dense-gemm-size must be >= 0");
  harness::WhatIfOptions w;
  w.levels_us = c.what_if_levels;
  w.rounds = c.what_if_rounds;
  if (!c.what_if.empty() || c.ab == "metadata" || !c.ab_drops.empty()) harness::validate_what_if(w);
  if (!c.what_if_method.empty() && c.what_if_method != "auto" && c.what_if_method != "replicate" &&
      c.what_if_method != "delay")
    throw UsageError(fmt::format("--what-if-method must be auto, replicate or delay, got '{}'", c.what_if_method));
  if (c.stack_input != "same" && c.stack_input != "chained")
    throw UsageError(fmt::format("--stack-input must be same or chained, got '{}'", c.stack_input));
  if (!(c.what_if_precision > 0) || !(c.what_if_precision < 1))
    throw UsageError(fmt::format("--what-if-precision must be in (0, 1), got {}", c.what_if_precision));
  {
    std::vector<int> k = c.what_if_copies;
    std::sort(k.begin(), k.end());
    const bool distinct = std::adjacent_find(k.begin(), k.end()) == k.end();
    const auto above_zero = std::count_if(k.begin(), k.end(), [](int n) { return n > 0; });
    if (k.empty() || k.front() < 0 || k.back() > 64 || !distinct || above_zero < 2)
      throw UsageError(fmt::format("--what-if-copies {}: expected distinct counts in [0, 64], at least two of them "
                                   "above 0 (a component that cannot be skipped runs without the 0)",
                                   fmt::join(c.what_if_copies, ",")));
  }
  if (!(c.what_if_floor_ms >= 0) || !std::isfinite(c.what_if_floor_ms))
    throw UsageError(fmt::format("--what-if-floor-ms must be >= 0, got {}", c.what_if_floor_ms));
  if (!(c.what_if_seconds > 0) || !std::isfinite(c.what_if_seconds) || c.what_if_seconds > 86400)
    throw UsageError("--what-if-seconds must be in (0, 86400]");
  if (c.repeat < 1 || c.repeat > 100) throw UsageError("--repeat must be in [1, 100]");
  if (c.telemetry != "auto" && c.telemetry != "gpu" && c.telemetry != "off")
    throw UsageError(fmt::format("--telemetry must be auto, gpu or off, got '{}'", c.telemetry));
  if (!(c.telemetry_period_ms >= 1 && c.telemetry_period_ms <= 10000))
    throw UsageError("--telemetry-period must be in [1, 10000] ms");
  if (!(c.framework_exchange_ms >= 0) || !std::isfinite(c.framework_exchange_ms))
    throw UsageError("--framework-exchange-ms must be >= 0");
}

std::optional<std::uint64_t> bytes_per_rank(const RunConfig& c, int world) {
  const Geometry& g = c.geo;
  const bool sp = parse_layout(c.layout) == Layout::sp;
  const auto most = c.split_sizes.empty() ? c.tokens : *std::max_element(c.split_sizes.begin(), c.split_sizes.end());
  std::int64_t all = 0;  // tokens over all ranks (sp) or the replicated tokens (tp)
  for (auto t : c.split_sizes) all += t;
  if (c.split_sizes.empty()) all = sp ? c.tokens * world : c.tokens;
  const double act = 4;  // bytes per activation (fp32 on the host; bf16 on GPUs is half)
  const double n = static_cast<double>(sp ? most : c.tokens), h = static_cast<double>(g.hidden);
  const double inter = static_cast<double>(g.intermediate) / (sp ? 1 : world);
  // Per token: ~10 hidden-wide buffers, ~8 intermediate-wide, topk dispatched rows per head
  // (received at most from every rank: bounded by the global token count).
  const double activations = n * act * (10 * h + 8 * inter) +
                             static_cast<double>(std::min<std::int64_t>(all, most * world)) * act * static_cast<double>(g.topk) * h;
  // Expert banks are split over the ranks; shared and modality MLPs are replicated.
  const double experts = static_cast<double>(g.heads) * static_cast<double>(g.experts) * 3 *
                         static_cast<double>(g.d_head()) * static_cast<double>(g.intermediate) * act / world;
  const double dense = (1 + kNumModalities) * 3 * h * inter * act;
  const double total = activations + experts + dense;
  if (!(total < 1.8e19)) return std::nullopt;
  return static_cast<std::uint64_t>(total);
}

void validate_for_world(const RunConfig& c, int world) {
  const Layout layout = parse_layout(c.layout);
  num::check_memory(bytes_per_rank(c, world), num::ranks_on_this_machine(), "this geometry",
                    "lower --tokens / --split-sizes or the geometry");
  if (layout == Layout::sp) {
    if (!c.split_sizes.empty() && static_cast<int>(c.split_sizes.size()) != world)
      throw UsageError(fmt::format("--split-sizes has {} entries but the world has {} ranks",
                                   c.split_sizes.size(), world));
  } else {
    if (c.geo.heads % world != 0)
      throw UsageError(fmt::format("--layout tp needs --moe-heads ({}) divisible by the world ({})",
                                   c.geo.heads, world));
    if (c.geo.intermediate % world != 0 || (c.geo.intermediate / world) % 8 != 0)
      throw UsageError(fmt::format(
          "--layout tp needs --intermediate ({}) divisible by 8 x the world ({})",
          c.geo.intermediate, world));
  }
}

}  // namespace layerbench::moe
