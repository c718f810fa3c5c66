// `--ab metadata`: an in-process interleaved A/B of an L-layer stack. Each pair times both arms
// back to back (order alternating between pairs, so slow drift and order effects cancel),
// host clock around the whole stack with a device sync, barrier-aligned, rank-max.
#include "common/cli/progress.hpp"
#include "collectives/error.hpp"
#include "bench/moe/profile.hpp"
#include "bench/moe/report.hpp"
#include "reports/derived.hpp"
#include "bench/moe/whatif.hpp"
#include "reports/paired.hpp"
#include "reports/sequential.hpp"
#include "reports/units.hpp"
#include "stats/bootstrap.hpp"
#include "stats/amount.hpp"
#include "stats/paired.hpp"
#include "stats/prediction.hpp"
#include "stats/sequential.hpp"

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

AbResult run_ab(MoeLayer& layer, const void* x, const RunConfig& c, const std::vector<ComponentResult>& comps,
                const std::vector<harness::WhatIfResult>& what_ifs, const telemetry::Sampler* sampler) {
  Communicator& w = layer.ep();
  auto& dev = w.device();
  const Stream s = dev.compute_stream();
  Buffer a = layer.make_activation(), b = layer.make_activation();
  const int L = c.layers;
  ab::RunCovariates last;  // telemetry of the last timed stack
  auto once = [&](bool reuse) {
    dev.synchronize(s);
    w.control_barrier();
    const double w0 = telemetry::Sampler::now();
    const auto t0 = std::chrono::steady_clock::now();
    dev.copy(a.data(), x, a.bytes(), s);
    run_stack(layer, a.data(), b.data(), L, reuse, s);
    dev.synchronize(s);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    w.control_max(std::span<double>(&ms, 1));
    last = window_covariates(w, sampler, w0, telemetry::Sampler::now());
    return ms;
  };
  for (int i = 0; i < std::max(1, c.common.warmup); ++i) {
    once(false);
    once(true);
  }
  std::vector<double> base, cand;
  std::vector<ab::RunCovariates> base_tel, cand_tel;
  std::vector<std::string> order;
  std::uint64_t base_exchanges = 0, cand_exchanges = 0;
  // --ab-sequential: every rank sees the same rank-max times, so every rank reaches the same stop.
  std::optional<stats::SequentialResult> seq;
  stats::SequentialDesign design;
  design.max_pairs = static_cast<std::size_t>(c.pairs);
  if (!c.ab_equivalence.empty()) {
    const auto e = *stats::parse_amount(c.ab_equivalence);  // validated with the run configuration
    design.equivalence = e.value;
    design.equivalence_relative = e.relative;
  }
  std::optional<cli::Progress> progress;
  if (w.rank() == 0) progress.emplace("metadata A/B", static_cast<std::size_t>(c.pairs));
  for (int i = 0; i < c.pairs && !(seq && seq->stop != stats::SequentialStop::running); ++i) {
    const bool base_first = i % 2 == 0;
    for (int k = 0; k < 2; ++k) {
      const bool reuse = base_first ? k == 1 : k == 0;
      const auto n0 = w.scalar_exchange_count();
      const double ms = once(reuse);
      (reuse ? cand_exchanges : base_exchanges) += w.scalar_exchange_count() - n0;
      (reuse ? cand : base).push_back(ms);
      (reuse ? cand_tel : base_tel).push_back(last);
    }
    order.push_back(base_first ? "AB" : "BA");
    if (progress) progress->step(fmt::format("pair {}", i));
    if (c.ab_sequential) seq = stats::sequential_decision(base, cand, design);
  }
  const int pairs = static_cast<int>(base.size());
  // The prediction: the exchange's what-if (critical-path fraction x isolated cost x the
  // exchanges reuse removes per stack), with its interval. Beside it, for reference only, the
  // two estimates earlier profiles printed (the exchange's full isolated cost, and the
  // difference of two separately timed MoE medians), neither of which knows the critical path.
  const auto* ex = find(comps, "seq_size_exchange");
  const double saved_per_stack = double(base_exchanges - cand_exchanges) / pairs;
  const ExchangeEstimate est = exchange_estimate(ex, saved_per_stack, c.confidence);
  const auto* pe = find(comps, "moe_per_layer_exchange");
  const auto* ru = find(comps, "moe_reused_split_sizes");
  // The difference of the two separately timed routed-branch medians, with its interval.
  std::optional<reports::Estimate> median_difference;
  if (pe && ru) {
    median_difference = reports::difference_of_medians(*pe, *ru, c.confidence);
    median_difference->value *= L;
    median_difference->ci = {median_difference->ci.low * L, median_difference->ci.high * L};
  }
  const double confidence = c.confidence;
  // A saving predicts a negative delta (candidate - base: the one sign convention).
  auto preds = exchange_predictions(what_ifs, saved_per_stack, confidence);
  for (auto& p : preds) {
    p.value = -p.value;
    p.ci = {-p.ci.high, -p.ci.low};
  }

  AbResult r;
  r.json = {{"study", "metadata"},
            {"layers", L},
            {"pairs", pairs},
            {"base", "per-layer sequence-size exchange"},
            {"candidate", "reused split sizes"},
            {"order", order},
            {"delta", "candidate - base"},  // the sign of every delta and prediction here
            {"base_ms", base},
            {"candidate_ms", cand},
            {"scalar_exchanges_base_per_stack", double(base_exchanges) / pairs},
            {"scalar_exchanges_candidate_per_stack", double(cand_exchanges) / pairs},
            {"exchange_estimate", est.json},
            {"median_difference_estimate", median_difference ? median_difference->to_json() : nlohmann::json(nullptr)}};
  if (seq) r.json["sequential"] = reports::sequential_json(*seq);
  std::string md = fmt::format(
      "\n### Metadata A/B: {}-layer stack, {} interleaved pairs (base = per-layer exchange, "
      "candidate = reused split sizes)\n\n",
      L, pairs);
  if (seq) md += stats::sequential_summary(*seq) + " " + stats::sequential_fixed_n_note() + "\n\n";
  try {
    stats::PairedOptions o;
    o.resamples = 20000;
    o.confidence = confidence;
    if (!preds.empty()) {
      o.predicted = preds.front().value;
      o.predicted_half_width = preds.front().half_width;
    }
    const auto an = stats::analyze_paired(base, cand, o);
    reports::PairedContext ctx;
    ctx.metric = "stack_time_ms";
    ctx.unit = "ms";
    ctx.base_label = "per-layer exchange";
    ctx.candidate_label = "reused split sizes";
    // Every exchange what-if's prediction, checked against the measured delta (the first one is
    // also the analysis' own "predicted" block).
    reports::PairedBlock pb;
    pb.key = "predictions";
    pb.json = nlohmann::json::array();
    const int level = static_cast<int>(std::lround(100 * confidence));
    for (const auto& pr : preds) {
      const auto& bm = an.bootstrap.mean.percentile;
      const auto chk = stats::check_prediction(an.delta.mean, bm, an.delta.se, static_cast<double>(an.n - 1),
                                               pr.value, pr.half_width, confidence);
      pb.json.push_back({{"source", pr.source}, {"predicted_ms", pr.value}, {"predicted_ci_ms", {pr.ci.low, pr.ci.high}},
                         {"half_width_ms", pr.half_width}, {"difference_ms", chk.difference},
                         {"difference_ci_ms", {chk.difference_ci.low, chk.difference_ci.high}}, {"ratio", chk.ratio},
                         {"ratio_ci", chk.ratio_bounded ? nlohmann::json{chk.ratio_ci.low, chk.ratio_ci.high} : nlohmann::json()},
                         {"holds", chk.holds}, {"verdict", chk.verdict}});
      pb.rows.emplace_back(fmt::format("predicted ({}: fraction x cost x {:g} exchanges)", pr.source, saved_per_stack),
                           fmt::format("{}, {}% CI {}", reports::fmt_quantity_signed(pr.value, reports::Unit::ms),
                                       level, reports::fmt_interval(pr.ci.low, pr.ci.high, reports::Unit::ms)));
      pb.rows.emplace_back(fmt::format("measured - predicted ({})", pr.source),
                           fmt::format("{}, {}% CI {}: {}", reports::fmt_quantity_signed(chk.difference, reports::Unit::ms),
                                       level, reports::fmt_interval(chk.difference_ci.low, chk.difference_ci.high, reports::Unit::ms),
                                       chk.holds ? "holds" : "fails"));
    }
    if (preds.empty()) pb.rows.emplace_back("predicted", "no exchange what-if (layout without the exchange)");
    if (est.valid) pb.rows.emplace_back("for reference: exchange cost x exchanges saved (ignores the critical path)", est.text);
    pb.rows.emplace_back("scalar exchanges per stack", fmt::format("base {:g}, candidate {:g}", double(base_exchanges) / pairs,
                                                                     double(cand_exchanges) / pairs));
    r.json["predictions"] = pb.json;
    ctx.blocks.push_back(std::move(pb));
    r.json["analysis"] = reports::paired_json(an, o, ctx);
    md += reports::paired_markdown(an, o, ctx);
    const auto tel = ab::compare_telemetry(base_tel, cand_tel, base, cand, o);
    r.json["telemetry"] = ab::telemetry_json(tel);
    if (tel.present) md += ab::telemetry_text(tel, true, "ms");
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
  const auto cost = reports::scaled_median(*ex, 1.0, confidence);
  e.valid = true;
  e.cost_ms = cost.value;
  e.cost_ci = cost.ci;
  e.value = cost.value * exchanges;
  e.ci = {cost.ci.low * exchanges, cost.ci.high * exchanges};
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
            {"method", cost.method}};
  return e;
}

}  // namespace layerbench::moe
