// `--ab metadata` and `--ab drop:COMPONENT`: in-process interleaved A/Bs of an L-layer stack. Each pair times both arms
// back to back (order alternating between pairs, so slow drift and order effects cancel),
// host clock around the whole stack with a device sync, barrier-aligned, rank-max.
#include "common/cli/progress.hpp"
#include "collectives/error.hpp"
#include "bench/moe/profile.hpp"
#include "bench/moe/report.hpp"
#include "reports/derived.hpp"
#include "bench/moe/whatif.hpp"
#include "harness/interleave.hpp"
#include "reports/paired.hpp"
#include "reports/sequential.hpp"
#include "reports/units.hpp"
#include "stats/bootstrap.hpp"
#include "stats/amount.hpp"
#include "stats/paired.hpp"
#include "stats/prediction.hpp"
#include "stats/sequential.hpp"
#include "stats/summary.hpp"
#include "stats/tests.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <optional>

namespace layerbench::moe {

namespace {
const reports::Measurement* find(const std::vector<ComponentResult>& v, const std::string& name) {
  for (const auto& c : v)
    if (c.m.name == name) return &c.m;
  return nullptr;
}
}  // namespace

namespace {

// The interleaved pairs of two arms of the L-layer stack (harness::run_interleaved_pairs: order
// alternating between pairs, every timed stack following one of its own arm), each stack timed
// alone: sync + barrier, host clock around the stack and a device sync, rank-max.
// `arm(candidate)` sets the layer up for an arm before its stack (outside the timing), `one_layer`
// runs one layer of that arm's stack. Energy per stack when a counter exists.
struct PairRun {
  std::vector<double> base, cand, base_energy, cand_energy;
  std::vector<ab::RunCovariates> base_tel, cand_tel;
  std::vector<std::string> order;
  std::size_t primed = 0;  // untimed stacks run so that every timed one follows its own arm
  std::optional<stats::SequentialResult> seq;
};

// `after` (optional) is called after every timed stack; `enough` (optional) ends the pairs early
// once it holds of the pairs so far (a precision rule).
PairRun run_pairs(LayerInterface& layer, const void* x, const RunConfig& c, const std::string& title,
                  const std::function<void(bool candidate)>& arm,
                  const std::function<void(bool candidate, const void* in, void* out, Stream s)>& one_layer,
                  const telemetry::Sampler* sampler, const std::function<void(bool candidate, double ms)>& after = {},
                  const std::function<bool(const PairRun&)>& enough = {}) {
  Communicator& w = layer.ep();
  auto& dev = w.device();
  const Stream s = dev.compute_stream();
  Buffer a = layer.make_activation(), b = layer.make_activation();
  const int L = c.layers;
  const auto energy = energy_meter(w, sampler);
  PairRun r;
  auto body = [&](bool candidate) {
    dev.copy(a.data(), x, a.bytes(), s);
    run_stack([&](const void* in, void* out, Stream st) { one_layer(candidate, in, out, st); }, a.data(), b.data(), L, s,
              parse_stack_input(c.stack_input));
  };
  auto stack = [&](bool candidate, bool timed) {
    arm(candidate);
    if (!timed) return harness::time_body(w, s, [&] { body(candidate); });
    const double w0 = telemetry::Sampler::now();
    const double e0 = energy();
    const double ms = harness::time_body(w, s, [&] { body(candidate); });
    (candidate ? r.cand_energy : r.base_energy).push_back(energy() - e0);
    (candidate ? r.cand_tel : r.base_tel).push_back(window_covariates(w, sampler, w0, telemetry::Sampler::now()));
    if (after) after(candidate, ms);
    return ms;
  };
  // --ab-sequential: every rank sees the same rank-max times, so every rank reaches the same stop.
  stats::SequentialDesign design;
  design.max_pairs = static_cast<std::size_t>(c.pairs);
  if (!c.ab_equivalence.empty()) {
    const auto e = *stats::parse_amount(c.ab_equivalence);  // validated with the run configuration
    design.equivalence = e.value;
    design.equivalence_relative = e.relative;
  }
  std::optional<cli::Progress> progress;
  if (w.rank() == 0) progress.emplace(title, static_cast<std::size_t>(c.pairs));
  auto stop = [&](const harness::PairTimes& t) {
    r.base = t.base;
    r.cand = t.cand;
    r.order = t.order;
    r.primed = t.primed;
    if (progress) progress->step(fmt::format("pair {}", t.base.size() - 1));
    if (c.ab_sequential) {
      r.seq = stats::sequential_decision(r.base, r.cand, design);
      if (r.seq->stop != stats::SequentialStop::running) return true;
    }
    return enough && enough(r);
  };
  (void)harness::run_interleaved_pairs(std::max(1, c.common.warmup), c.pairs, c.prime_stacks, stack, stop);
  arm(false);
  return r;
}

// One line on the neighbours of the timed stacks.
std::string neighbours_line(const PairRun& p, const RunConfig& c) {
  if (c.prime_stacks == 0) return "Neighbours not primed (`--prime-stacks 0`): a stack follows either arm.";
  return fmt::format("Every timed stack follows a stack of its own arm: where the arm changed, at least {} untimed "
                     "stack(s) ran, and for as long as the other arm's stack before ({} in all; a power-capped GPU "
                     "carries its clocks from one stack into the next).",
                     c.prime_stacks, p.primed);
}

struct Check {
  std::string source, basis;
  double value = 0, half_width = 0;
  stats::Interval ci;
};

nlohmann::json energy_json(const PairRun& p) {
  for (double e : p.base_energy)
    if (!std::isfinite(e)) return nullptr;
  for (double e : p.cand_energy)
    if (!std::isfinite(e)) return nullptr;
  // The counter advances in steps (~100 ms of work): one stack's reading is quantised, the mean
  // over the pairs is not biased by it (the steps fall at random phases of the stacks).
  return {{"unit", "J"}, {"per", "stack, all ranks' devices"}, {"base_j", p.base_energy}, {"candidate_j", p.cand_energy},
          {"base_mean_j", stats::summarize(p.base_energy).mean},
          {"candidate_mean_j", stats::summarize(p.cand_energy).mean}};
}

// The paired analysis of a PairRun against predictions of its mean delta, into r.json / r.analysis.
void analyse(const PairRun& p, const RunConfig& c, const std::vector<Check>& savings, reports::PairedContext ctx,
             std::vector<std::pair<std::string, std::string>> extra_rows, AbResult& r) {
  const double confidence = c.confidence;
  // The predictions are savings (base - candidate); every delta here is candidate - base (the one
  // sign convention), so a saving predicts a negative delta.
  std::vector<Check> checks = savings;
  for (auto& ch : checks) {
    ch.value = -ch.value;
    ch.ci = {-ch.ci.high, -ch.ci.low};
  }
  r.json["delta"] = "candidate - base";
  try {
    stats::PairedOptions o;
    o.resamples = 20000;
    o.confidence = confidence;
    if (!checks.empty()) {
      o.predicted = checks.front().value;
      o.predicted_half_width = checks.front().half_width;
    }
    const auto an = stats::analyze_paired(p.base, p.cand, o);
    ctx.metric = "stack_time_ms";
    ctx.unit = "ms";
    reports::PairedBlock pb;
    pb.key = "predictions";
    pb.json = nlohmann::json::array();
    const int level = static_cast<int>(std::lround(100 * confidence));
    for (const auto& pr : checks) {
      const auto& bm = an.bootstrap.mean.percentile;
      const auto chk = stats::check_prediction(an.delta.mean, bm, an.delta.se, static_cast<double>(an.n - 1), pr.value,
                                               pr.half_width, confidence);
      pb.json.push_back({{"source", pr.source}, {"basis", pr.basis}, {"predicted_ms", pr.value},
                         {"predicted_ci_ms", {pr.ci.low, pr.ci.high}}, {"half_width_ms", pr.half_width},
                         {"measured_ms", an.delta.mean}, {"measured_ci_ms", {bm.low, bm.high}},
                         {"measured_inside_predicted_ci", pr.ci.contains(an.delta.mean)},
                         {"difference_ms", chk.difference},
                         {"difference_ci_ms", {chk.difference_ci.low, chk.difference_ci.high}}, {"ratio", chk.ratio},
                         {"ratio_ci", chk.ratio_bounded ? nlohmann::json{chk.ratio_ci.low, chk.ratio_ci.high} : nlohmann::json()},
                         {"holds", chk.holds}, {"verdict", chk.verdict}});
      pb.rows.emplace_back(fmt::format("predicted ({}: {})", pr.source, pr.basis),
                           fmt::format("{}, {}% CI {}", reports::fmt_quantity_signed(pr.value, reports::Unit::ms),
                                       level, reports::fmt_interval(pr.ci.low, pr.ci.high, reports::Unit::ms)));
      pb.rows.emplace_back(fmt::format("measured - predicted ({})", pr.source),
                           fmt::format("{}, {}% CI {}; measured / predicted {}: {}",
                                       reports::fmt_quantity_signed(chk.difference, reports::Unit::ms), level,
                                       reports::fmt_interval(chk.difference_ci.low, chk.difference_ci.high, reports::Unit::ms),
                                       chk.ratio_bounded ? fmt::format("{} [{}, {}]", reports::fmt_sig(chk.ratio),
                                                                       reports::fmt_sig(chk.ratio_ci.low), reports::fmt_sig(chk.ratio_ci.high))
                                                         : reports::fmt_sig(chk.ratio) + " (interval unbounded)",
                                       chk.holds ? "holds" : "fails"));
    }
    for (auto& row : extra_rows) pb.rows.push_back(std::move(row));
    r.json["predictions"] = pb.json;
    ctx.blocks.push_back(std::move(pb));
    reports::PairedContext json_ctx = ctx;
    json_ctx.sequential = nullptr;  // the stop is the A/B's own "sequential" key
    r.json["analysis"] = reports::paired_json(an, o, json_ctx);
    r.analysis = reports::paired_sections(an, o, ctx);
    const auto tel = ab::compare_telemetry(p.base_tel, p.cand_tel, p.base, p.cand, o);
    r.json["telemetry"] = ab::telemetry_json(tel);
    if (tel.present) r.analysis.push_back(ab::telemetry_section(tel, "ms"));
  } catch (const std::exception& e) {
    // The deltas are still in the JSON; say why there is no analysis.
    r.json["analysis_error"] = e.what();
    reports::Section none;
    none.intro = fmt::format("analysis unavailable: {}", e.what());
    r.analysis = {none};
  }
}

}  // namespace

AbResult run_ab(MoeLayer& layer, const void* x, const RunConfig& c, const std::vector<ComponentResult>& comps,
                const std::vector<harness::WhatIfResult>& what_ifs, const telemetry::Sampler* sampler) {
  Communicator& w = layer.ep();
  const int L = c.layers;
  std::uint64_t base_exchanges = 0, cand_exchanges = 0, n0 = 0;
  const auto splits = std::span<const std::int64_t>(layer.plan().splits);
  const auto p = run_pairs(
      layer, x, c, "metadata A/B", [&](bool) { n0 = w.scalar_exchange_count(); },
      [&](bool cand, const void* in, void* out, Stream st) {
        if (cand) layer.forward(in, out, splits, st);  // the request-scoped split, reused
        else layer.stack_forward(in, out, st);         // the per-layer exchange
      },
      sampler, [&](bool cand, double) { (cand ? cand_exchanges : base_exchanges) += w.scalar_exchange_count() - n0; });
  const int pairs = static_cast<int>(p.base.size());
  // The prediction: the exchange's what-if (critical-path fraction x isolated cost x the
  // exchanges reuse removes per stack), with its interval. Beside it, for reference only, the
  // exchange's full isolated cost, which does not know the critical path.
  const auto* ex = find(comps, "seq_size_exchange");
  const double saved_per_stack = double(base_exchanges - cand_exchanges) / pairs;
  const ExchangeEstimate est = exchange_estimate(ex, saved_per_stack, c.confidence);
  const auto* pe = find(comps, "moe_per_layer_exchange");
  const auto* ru = find(comps, "moe_reused_split_sizes");
  std::optional<reports::Estimate> median_difference;
  if (pe && ru) {
    median_difference = reports::difference_of_medians(*pe, *ru, c.confidence);
    median_difference->value *= L;
    median_difference->ci = {median_difference->ci.low * L, median_difference->ci.high * L};
  }
  std::vector<Check> checks;
  for (const auto& pr : exchange_predictions(what_ifs, saved_per_stack, c.confidence))
    checks.push_back({pr.source, fmt::format("fraction x cost x {:g} exchanges", saved_per_stack), pr.value,
                      pr.half_width, pr.ci});

  AbResult r;
  r.json = {{"study", "metadata"},
            {"layers", L},
            {"pairs", pairs},
            {"base", "per-layer sequence-size exchange"},
            {"candidate", "reused split sizes"},
            {"order", p.order},
            {"prime_stacks_per_change", c.prime_stacks},
            {"primed_stacks", p.primed},
            {"base_ms", p.base},
            {"candidate_ms", p.cand},
            {"energy", energy_json(p)},
            {"scalar_exchanges_base_per_stack", double(base_exchanges) / pairs},
            {"scalar_exchanges_candidate_per_stack", double(cand_exchanges) / pairs},
            {"exchange_estimate", est.json},
            {"median_difference_estimate", median_difference ? median_difference->to_json() : nlohmann::json(nullptr)}};
  if (p.seq) r.json["sequential"] = reports::sequential_json(*p.seq);
  r.head.title = fmt::format("Metadata A/B: {}-layer stack, {} interleaved pairs (base = per-layer exchange, "
                             "candidate = reused split sizes)", L, pairs);
  r.head.intro = neighbours_line(p, c);
  reports::PairedContext ctx;
  if (p.seq) ctx.sequential = &*p.seq;
  ctx.base_label = "per-layer exchange";
  ctx.candidate_label = "reused split sizes";
  std::vector<std::pair<std::string, std::string>> rows;
  if (checks.empty()) rows.emplace_back("predicted", "no exchange what-if (layout without the exchange)");
  if (est.valid) rows.emplace_back("for reference: exchange cost x exchanges saved (ignores the critical path)", est.text);
  rows.emplace_back("scalar exchanges per stack",
                    fmt::format("base {:g}, candidate {:g}", double(base_exchanges) / pairs, double(cand_exchanges) / pairs));
  analyse(p, c, checks, ctx, std::move(rows), r);
  return r;
}

AbResult run_drop_ab(LayerInterface& layer, const void* x, const RunConfig& c, const std::string& component,
                     const std::vector<harness::WhatIfResult>& what_ifs, const telemetry::Sampler* sampler) {
  const int L = c.layers;
  // The prediction of the paired delta (base - candidate: the time the removal saves per stack),
  // from the component's replication what-if: slope x instances per stack, or the removal step.
  std::vector<Check> checks;
  for (const auto& w : what_ifs) {
    if (w.target.component != component || w.target.method != harness::WhatIfMethod::replicate) continue;
    const double per_stack = w.instances_per_stack;
    Check ch;
    ch.source = "replicate " + component;
    ch.basis = w.removal_from_step
                   ? fmt::format("removal step {:.4g} ms per stack from the what-if rounds ({}; slope {:.4g} ms/copy)",
                                 w.removal_step_ms, w.removal_step_reason, w.fit.slope)
                   : fmt::format("slope {:.4g} ms/copy x {} instances per stack", w.fit.slope, w.instances_per_stack);
    ch.value = w.effect_ms(per_stack);
    ch.ci = w.effect_ci(per_stack, c.confidence);
    ch.half_width = std::isfinite(ch.ci.low) ? std::max(ch.value - ch.ci.low, ch.ci.high - ch.value) : 0.0;
    checks.push_back(ch);
  }
  // Precision rule: the pairs stop once the measured removal's interval is within half the
  // prediction's half-width (the comparison is then limited by the prediction, not by the A/B):
  // at least 31 pairs (or --pairs when fewer), at most --pairs. It reads the spread of the deltas,
  // never their agreement with the prediction.
  const std::size_t min_pairs = static_cast<std::size_t>(std::min(c.pairs, 31));
  std::size_t stopped_early = 0;
  auto enough = [&](const PairRun& pr) {
    if (checks.empty() || pr.base.size() < min_pairs || c.ab_sequential) return false;
    std::vector<double> d(pr.base.size());
    for (std::size_t i2 = 0; i2 < d.size(); ++i2) d[i2] = pr.base[i2] - pr.cand[i2];
    const auto t = stats::t_test(d, c.confidence);
    const bool done = (t.ci.high - t.ci.low) / 2 <= 0.5 * checks.front().half_width;
    if (done) stopped_early = pr.base.size();
    return done;
  };
  const auto p = run_pairs(
      layer, x, c, "drop:" + component + " A/B", [&](bool cand) { layer.set_copies(cand ? component : "", cand ? 0 : 1); },
      [&](bool, const void* in, void* out, Stream st) { layer.stack_forward(in, out, st); }, sampler, {}, enough);
  const int pairs = static_cast<int>(p.base.size());
  AbResult r;
  r.json = {{"study", "drop"},
            {"component", component},
            {"layers", L},
            {"pairs", pairs},
            {"base", "the stack as is"},
            {"candidate", "the stack with " + component + " skipped (timings real, outputs not checked)"},
            {"outputs_checked", false},
            {"stack_input", c.stack_input},
            {"pairs_cap", c.pairs},
            {"stopped_by_precision", stopped_early > 0},
            {"order", p.order},
            {"prime_stacks_per_change", c.prime_stacks},
            {"primed_stacks", p.primed},
            {"base_ms", p.base},
            {"candidate_ms", p.cand},
            {"energy", energy_json(p)}};
  if (p.seq) r.json["sequential"] = reports::sequential_json(*p.seq);
  r.head.title = fmt::format("Removal A/B drop:{}: {}-layer stack ({} input), {} interleaved pairs (base = as is, "
                             "candidate = {} skipped; timings real, outputs not checked)",
                             component, L, c.stack_input, pairs, component);
  r.head.intro = neighbours_line(p, c);
  if (stopped_early > 0)
    r.head.intro += fmt::format(" Stopped after {} of at most {} pairs: the measured removal's interval is within half "
                               "the prediction's half-width (precision rule, at least 31 pairs; it reads the spread of "
                               "the deltas, never their agreement with the prediction).",
                               stopped_early, c.pairs);
  reports::PairedContext ctx;
  if (p.seq) ctx.sequential = &*p.seq;
  ctx.base_label = "as is";
  ctx.candidate_label = component + " skipped";
  std::vector<std::pair<std::string, std::string>> rows;
  if (checks.empty()) rows.emplace_back("predicted", "no replication what-if of this component (it cannot run twice)");
  if (const auto e = energy_json(p); !e.is_null())
    rows.emplace_back("energy per stack (mean of quantised counter readings)",
                      fmt::format("as is {:.4g} J, skipped {:.4g} J", e["base_mean_j"].get<double>(),
                                  e["candidate_mean_j"].get<double>()));
  analyse(p, c, checks, ctx, std::move(rows), r);
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
