// `--ab metadata`: an in-process interleaved A/B of an L-layer stack. Each pair times both arms
// back to back (order alternating between pairs, so slow drift and order effects cancel),
// host clock around the whole stack with a device sync, barrier-aligned, rank-max.
#include "collectives/error.hpp"
#include "bench/moe/profile.hpp"
#include "bench/moe/report.hpp"
#include "stats/paired.hpp"

#include <fmt/format.h>

#include <chrono>

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
  }
  // The exchanges reuse removes per stack, priced at the exchange's own isolated cost (scalar
  // all_gather + host read on an idle device). An estimate, not a bound: inside a stack the
  // host read also drains the GPU queue, which the isolated figure leaves out.
  const auto* ex = find(comps, "seq_size_exchange");
  const double saved_per_stack = double(base_exchanges - cand_exchanges) / c.pairs;
  const double exchange_estimate = ex ? median_ms(*ex) * saved_per_stack : 0.0;

  const auto* pe = find(comps, "moe_per_layer_exchange");
  const auto* ru = find(comps, "moe_reused_split_sizes");
  const double saving = pe && ru ? median_ms(*pe) - median_ms(*ru) : 0.0;
  const double predicted = saving * L;

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
            {"predicted_delta_ms", predicted},
            {"exchange_cost_estimate_ms", exchange_estimate}};
  std::string md = fmt::format(
      "\n### Metadata A/B: {}-layer stack, {} interleaved pairs (base = per-layer exchange, "
      "candidate = reused split sizes)\n\n",
      L, c.pairs);
  try {
    stats::PairedOptions o;
    o.predicted = predicted;
    o.resamples = 20000;
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
        {"ratio_mean_to_predicted", an.predicted ? an.predicted->ratio_mean : 0.0},
        {"ratio_median_to_predicted", an.predicted ? an.predicted->ratio_median : 0.0},
        {"ratio_mean_to_exchange_estimate", exchange_estimate > 0 ? an.delta.mean / exchange_estimate : 0.0},
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
    md += fmt::format("| predicted (saving/layer x {}) | {:+.4f} ms, measured/predicted = {:.2f} (mean), {:.2f} (median) |\n",
                      L, predicted, an.predicted ? an.predicted->ratio_mean : 0.0,
                      an.predicted ? an.predicted->ratio_median : 0.0);
    if (exchange_estimate > 0)
      md += fmt::format("| exchange cost x {:g} saved exchanges | {:+.4f} ms, measured mean / estimate = {:.2f} |\n",
                        saved_per_stack, exchange_estimate, an.delta.mean / exchange_estimate);
    md += fmt::format("| scalar exchanges per stack | base {}, candidate {} |\n",
                      double(base_exchanges) / c.pairs, double(cand_exchanges) / c.pairs);
    for (const auto& g : an.guidance) md += "\n- " + g;
    md += "\n";
  } catch (const std::exception& e) {
    // The deltas are still in the JSON; say why there is no analysis.
    r.json["analysis_error"] = e.what();
    md += fmt::format("analysis unavailable: {}\n", e.what());
  }
  r.markdown = md;
  return r;
}

}  // namespace layerbench::moe
