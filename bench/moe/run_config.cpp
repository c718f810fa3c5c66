#include "bench/moe/run_config.hpp"

#include "bench/harness/whatif.hpp"
#include "collectives/error.hpp"
#include "stats/amount.hpp"

#include <fmt/format.h>

#include <cmath>

namespace layerbench::moe {

void validate(const RunConfig& c) {
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
  if (g.hidden % g.heads != 0)
    throw UsageError(fmt::format("--hidden {} is not divisible by --moe-heads {}", g.hidden, g.heads));
  if (g.topk > g.experts)
    throw UsageError(fmt::format("--topk {} exceeds --experts {}", g.topk, g.experts));
  // NOTES: the GPU kernels move rows in 16-byte vectors and hold one head's scores in a warp.
  if (g.d_head() % 8 != 0)
    throw UsageError(fmt::format("d_head = hidden/heads = {} must be a multiple of 8", g.d_head()));
  if (g.experts > 1024) throw UsageError("--experts must be at most 1024 per head");
  if (g.topk > 32) throw UsageError("--topk must be at most 32");
  if (g.intermediate % 8 != 0) throw UsageError("--intermediate must be a multiple of 8");
  if (!(g.scale > 0)) throw UsageError("--scale must be positive");
  (void)parse_layout(c.layout);
  for (auto s : c.split_sizes)
    if (s <= 0) throw UsageError(fmt::format("--split-sizes entries must be positive, got {}", s));
  if (!c.split_sizes.empty() && c.layout == "tp")
    throw UsageError("--split-sizes applies to --layout sp (tp replicates the tokens; use --tokens)");
  if (c.layers < 1) throw UsageError("--layers must be at least 1");
  if (c.moe_layers < 1) throw UsageError("--moe-layers must be at least 1");
  if (!c.ab.empty() && c.ab != "metadata") throw UsageError("--ab accepts only 'metadata'");
  if (c.pairs < 2) throw UsageError("--pairs must be at least 2");
  if ((c.ab_sequential || !c.ab_equivalence.empty()) && c.ab.empty()) {
    throw UsageError("--ab-sequential and --ab-equivalence need --ab metadata");
  }
  if (!c.ab_equivalence.empty()) {
    if (!c.ab_sequential) throw UsageError("--ab-equivalence needs --ab-sequential");
    const auto e = stats::parse_amount(c.ab_equivalence);
    if (!e || !(e->value > 0)) {
      throw UsageError(fmt::format("--ab-equivalence {}: expected a positive percentage (1%) or ms", c.ab_equivalence));
    }
  }
  if (c.dense_gemm_size < 0) throw UsageError("--dense-gemm-size must be >= 0");
  harness::WhatIfOptions w;
  w.levels_us = c.what_if_levels;
  w.rounds = c.what_if_rounds;
  if (!c.what_if.empty() || c.ab == "metadata") harness::validate_what_if(w);
  if (c.telemetry != "auto" && c.telemetry != "gpu" && c.telemetry != "off")
    throw UsageError(fmt::format("--telemetry must be auto, gpu or off, got '{}'", c.telemetry));
  if (!(c.telemetry_period_ms >= 1 && c.telemetry_period_ms <= 10000))
    throw UsageError("--telemetry-period must be in [1, 10000] ms");
  if (!(c.framework_exchange_ms >= 0) || !std::isfinite(c.framework_exchange_ms))
    throw UsageError("--framework-exchange-ms must be >= 0");
}

void validate_for_world(const RunConfig& c, int world) {
  const Layout layout = parse_layout(c.layout);
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
