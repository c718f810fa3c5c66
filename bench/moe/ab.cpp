// `--ab metadata`: an in-process interleaved A/B of an L-layer stack. Each pair times both arms
// back to back (order alternating between pairs, so slow drift and order effects cancel),
// host clock around the whole stack with a device sync, barrier-aligned, rank-max.
#include "bench/cli/progress.hpp"
#include "collectives/error.hpp"
#include "bench/moe/profile.hpp"
#include "bench/moe/report.hpp"
#include "bench/moe/whatif.hpp"
#include "reports/sequential.hpp"
#include "stats/amount.hpp"
#include "stats/paired.hpp"
#include "stats/prediction.hpp"
#include "stats/sequential.hpp"

#include <fmt/format.h>

#include <chrono>
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
  const double exchange_estimate = ex ? median_ms(*ex) * saved_per_stack : 0.0;
  const auto* pe = find(comps, "moe_per_layer_exchange");
  const auto* ru = find(comps, "moe_reused_split_sizes");
  const double median_difference = pe && ru ? (median_ms(*pe) - median_ms(*ru)) * L : 0.0;
  const double confidence = 0.95;
  const auto preds = exchange_predictions(what_ifs, saved_per_stack, confidence);

  AbResult r;
  r.json = {{"study", "metadata"},
            {"layers", L},
            {"pairs", pairs},
            {"base", "per-layer sequence-size exchange"},
            {"candidate", "reused split sizes"},
            {"order", order},
            {"base_ms", base},
            {"candidate_ms", cand},
            {"scalar_exchanges_base_per_stack", double(base_exchanges) / pairs},
            {"scalar_exchanges_candidate_per_stack", double(cand_exchanges) / pairs},
            {"exchange_cost_estimate_ms", exchange_estimate},
            {"median_difference_estimate_ms", median_difference}};
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
    const double wp = an.wilcoxon.p_exact ? *an.wilcoxon.p_exact : an.wilcoxon.p_normal;
    r.json["analysis"] = {
        {"n", an.n},
        {"base_median_ms", an.base.median},
        {"candidate_median_ms", an.candidate.median},
        {"delta_mean_ms", an.delta.mean},
        {"delta_median_ms", an.delta.median},
        {"delta_trimmed_mean_ms", an.delta.trimmed_mean},
        {"delta_mean_pct", an.delta.mean_pct},
        {"delta_sd_ms", an.delta.sd},
        {"delta_se_ms", an.delta.se},
        {"t_ci_ms", {an.t.ci.low, an.t.ci.high}},
        {"t_p", an.t.p},
        {"bootstrap_mean_ci_ms", {an.bootstrap.mean.percentile.low, an.bootstrap.mean.percentile.high}},
        {"wilcoxon_z", an.wilcoxon.z},
        {"wilcoxon_p", wp},
        {"sign_faster", an.sign.positive},
        {"sign_n", an.sign.n},
        {"sign_p", an.sign.p},
        {"outliers", an.outliers.size()},
        {"resolved", wp < 0.05 && an.sign.p < 0.05},
        {"warnings", an.warnings},
        {"guidance", an.guidance}};
    md += "| statistic | value |\n|---|---|\n";
    md += fmt::format("| base median / candidate median | {:.4f} / {:.4f} ms |\n", an.base.median, an.candidate.median);
    md += fmt::format("| paired delta mean (base - candidate) | {:+.4f} ms ({:+.3f}%) |\n", an.delta.mean, an.delta.mean_pct);
    md += fmt::format("| delta median / 10% trimmed mean | {:+.4f} / {:+.4f} ms |\n", an.delta.median, an.delta.trimmed_mean);
    md += fmt::format("| sd / se | {:.4f} / {:.4f} ms |\n", an.delta.sd, an.delta.se);
    md += fmt::format("| 95% CI of the mean (t) | [{:+.4f}, {:+.4f}] ms |\n", an.t.ci.low, an.t.ci.high);
    md += fmt::format("| 95% CI of the mean (bootstrap) | [{:+.4f}, {:+.4f}] ms |\n",
                      an.bootstrap.mean.percentile.low, an.bootstrap.mean.percentile.high);
    md += fmt::format("| Wilcoxon signed-rank | z = {:.2f}, p = {:.3g} |\n", an.wilcoxon.z, wp);
    md += fmt::format("| sign test | reuse faster in {}/{} pairs, p = {:.3g} |\n", an.sign.positive, an.sign.n, an.sign.p);
    md += fmt::format("| scalar exchanges per stack | base {}, candidate {} |\n",
                      double(base_exchanges) / pairs, double(cand_exchanges) / pairs);
    // Every exchange what-if's prediction, checked against the measured delta.
    nlohmann::json pj = nlohmann::json::array();
    for (const auto& pr : preds) {
      const auto& bm = an.bootstrap.mean.percentile;
      const auto chk = stats::check_prediction(an.delta.mean, bm, an.delta.se, static_cast<double>(an.n - 1),
                                               pr.value, pr.half_width, confidence);
      pj.push_back({{"source", pr.source}, {"predicted_ms", pr.value}, {"predicted_ci_ms", {pr.ci.low, pr.ci.high}},
                    {"half_width_ms", pr.half_width}, {"difference_ms", chk.difference},
                    {"difference_ci_ms", {chk.difference_ci.low, chk.difference_ci.high}}, {"ratio", chk.ratio},
                    {"ratio_ci", chk.ratio_bounded ? nlohmann::json{chk.ratio_ci.low, chk.ratio_ci.high} : nlohmann::json()},
                    {"holds", chk.holds}, {"verdict", chk.verdict}});
      md += fmt::format("| predicted ({}: fraction x cost x {:g} exchanges) | {:+.4f} ms [{:+.4f}, {:+.4f}] |\n",
                        pr.source, saved_per_stack, pr.value, pr.ci.low, pr.ci.high);
      md += fmt::format("| measured - predicted | {:+.4f} ms, 95% CI [{:+.4f}, {:+.4f}] |\n", chk.difference,
                        chk.difference_ci.low, chk.difference_ci.high);
      md += chk.ratio_bounded ? fmt::format("| measured / predicted (Fieller) | {:.3f}, 95% CI [{:.3f}, {:.3f}] |\n",
                                            chk.ratio, chk.ratio_ci.low, chk.ratio_ci.high)
                              : fmt::format("| measured / predicted (Fieller) | {:.3f}, CI unbounded |\n", chk.ratio);
      md += fmt::format("| verdict | {} |\n", chk.holds ? "**holds** (the difference's CI contains 0)"
                                                       : "**fails** (the difference's CI excludes 0)");
    }
    r.json["predictions"] = pj;
    if (preds.empty()) md += "| predicted | no exchange what-if (layout without the exchange) |\n";
    md += fmt::format("| for reference: exchange cost x {:g} / difference of MoE medians x {} | {:+.4f} / {:+.4f} ms "
                      "(ignore the critical path) |\n",
                      saved_per_stack, L, exchange_estimate, median_difference);
    for (const auto& g : an.guidance) md += "\n- " + g;
    md += "\n";
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

}  // namespace layerbench::moe
