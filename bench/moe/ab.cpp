// `--ab metadata`: an in-process interleaved A/B of an L-layer stack. Each pair times both arms
// back to back (order alternating between pairs, so slow drift and order effects cancel),
// host clock around the whole stack with a device sync, barrier-aligned, rank-max.
#include "bench/cli/progress.hpp"
#include "collectives/error.hpp"
#include "bench/moe/profile.hpp"
#include "bench/moe/report.hpp"
#include "reports/paired.hpp"
#include "reports/units.hpp"
#include "stats/bootstrap.hpp"
#include "stats/paired.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <optional>

namespace layerbench::moe {

namespace {
const reports::Measurement* find(const std::vector<ComponentResult>& v, const std::string& name) {
  for (const auto& c : v)
    if (c.m.name == name) return &c.m;
  return nullptr;
}
}  // namespace

AbResult run_ab(MoeLayer& layer, const void* x, const RunConfig& c,
                const std::vector<ComponentResult>& comps) {
  Communicator& w = layer.ep();
  auto& dev = w.device();
  const Stream s = dev.compute_stream();
  Buffer a = layer.make_activation(), b = layer.make_activation();
  const int L = c.layers;
  auto once = [&](bool reuse) {
    dev.synchronize(s);
    w.control_barrier();
    const auto t0 = std::chrono::steady_clock::now();
    dev.copy(a.data(), x, a.bytes(), s);
    run_stack(layer, a.data(), b.data(), L, reuse, s);
    dev.synchronize(s);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    w.control_max(std::span<double>(&ms, 1));
    return ms;
  };
  for (int i = 0; i < std::max(1, c.common.warmup); ++i) {
    once(false);
    once(true);
  }
  std::vector<double> base, cand;
  std::vector<std::string> order;
  std::uint64_t base_exchanges = 0, cand_exchanges = 0;
  std::optional<cli::Progress> progress;
  if (w.rank() == 0) progress.emplace("metadata A/B", static_cast<std::size_t>(c.pairs));
  for (int i = 0; i < c.pairs; ++i) {
    const bool base_first = i % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      const bool reuse = base_first ? k == 1 : k == 0;
      const auto n0 = w.scalar_exchange_count();
      const double ms = once(reuse);
      (reuse ? cand_exchanges : base_exchanges) += w.scalar_exchange_count() - n0;
      (reuse ? cand : base).push_back(ms);
    }
    order.push_back(base_first ? "AB" : "BA");
    if (progress) progress->step(fmt::format("pair {}", i));
  }
  // The exchanges reuse removes per stack, priced at the exchange's own isolated cost (scalar
  // all_gather + host read on an idle device), with the bootstrap interval of its median. An
  // estimate, not a bound: inside a stack the host read also drains the GPU queue, which the
  // isolated figure leaves out.
  const auto* ex = find(comps, "seq_size_exchange");
  const double saved_per_stack = double(base_exchanges - cand_exchanges) / c.pairs;
  const ExchangeEstimate est = exchange_estimate(ex, saved_per_stack, c.confidence);

  AbResult r;
  r.json = {{"study", "metadata"},
            {"layers", L},
            {"pairs", c.pairs},
            {"base", "per-layer sequence-size exchange"},
            {"candidate", "reused split sizes"},
            {"order", order},
            {"base_ms", base},
            {"candidate_ms", cand},
            {"scalar_exchanges_base_per_stack", double(base_exchanges) / c.pairs},
            {"scalar_exchanges_candidate_per_stack", double(cand_exchanges) / c.pairs},
            {"exchange_estimate", est.json}};
  std::string md = fmt::format(
      "\n### Metadata A/B: {}-layer stack, {} interleaved pairs (base = per-layer exchange, "
      "candidate = reused split sizes)\n\n",
      L, c.pairs);
  try {
    stats::PairedOptions o;
    o.confidence = c.confidence;
    o.resamples = 20000;
    if (est.valid) {
      o.predicted = est.value;
      o.predicted_half_width = est.half_width;
    }
    const auto an = stats::analyze_paired(base, cand, o);
    reports::PairedContext ctx;
    ctx.metric = "stack_time_ms";
    ctx.unit = "ms";
    ctx.base_label = "per-layer exchange";
    ctx.candidate_label = "reused split sizes";
    reports::PairedBlock blk;
    blk.key = "exchange_estimate";
    blk.json = est.json;
    if (est.valid)
      blk.rows.emplace_back("prediction source", est.text);
    blk.rows.emplace_back("scalar exchanges per stack", fmt::format("base {:g}, candidate {:g}", double(base_exchanges) / c.pairs,
                                                                      double(cand_exchanges) / c.pairs));
    ctx.blocks.push_back(std::move(blk));
    r.json["analysis"] = reports::paired_json(an, o, ctx);
    md += reports::paired_markdown(an, o, ctx);
  } catch (const std::exception& e) {
    // The deltas are still in the JSON; say why there is no analysis.
    r.json["analysis_error"] = e.what();
    md += fmt::format("analysis unavailable: {}\n", e.what());
  }
  r.markdown = md;
  return r;
}

ExchangeEstimate exchange_estimate(const reports::Measurement* ex, double exchanges, double confidence) {
  ExchangeEstimate e;
  e.exchanges = exchanges;
  if (ex == nullptr || ex->samples_ms.size() < 2 || !(exchanges > 0)) {
    e.json = {{"valid", false}, {"reason", ex == nullptr ? "no seq_size_exchange measurement" : "too few samples or no exchange saved"}};
    return e;
  }
  stats::BootstrapOptions bo;
  bo.confidence = confidence;
  bo.resamples = 20000;
  const auto bs = stats::bootstrap_mean_median(ex->samples_ms, bo);
  e.valid = true;
  e.cost_ms = bs.median.estimate;
  e.cost_ci = bs.median.percentile;
  e.value = e.cost_ms * exchanges;
  e.ci = {e.cost_ci.low * exchanges, e.cost_ci.high * exchanges};
  e.half_width = (e.ci.high - e.ci.low) / 2;
  const int level = static_cast<int>(std::lround(100 * confidence));
  e.text = fmt::format("exchange cost {} x {:g} exchanges saved = {}, {}% CI {} (bootstrap of the exchange's median)",
                       reports::fmt_time(e.cost_ms), exchanges, reports::fmt_time(e.value), level,
                       reports::fmt_interval(e.ci.low, e.ci.high, reports::Unit::ms));
  e.json = {{"valid", true},
            {"exchange_median_ms", e.cost_ms},
            {"exchange_median_ci_ms", {e.cost_ci.low, e.cost_ci.high}},
            {"exchanges_saved", exchanges},
            {"estimate_ms", e.value},
            {"estimate_ci_ms", {e.ci.low, e.ci.high}},
            {"confidence", confidence},
            {"method", "percentile bootstrap of the seq_size_exchange median, times the exchanges saved"}};
  return e;
}

}  // namespace layerbench::moe
