// Table, derived lines and output files of the component profile.
#include "bench/moe/report.hpp"

#include "bench/moe/whatif.hpp"
#include "stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace layerbench::moe {

namespace {

const ComponentResult* find(const std::vector<ComponentResult>& v, const std::string& n) {
  for (const auto& c : v)
    if (c.m.name == n) return &c;
  return nullptr;
}
double med(const std::vector<ComponentResult>& v, const std::string& n) {
  const auto* c = find(v, n);
  return c ? median_ms(c->m) : 0.0;
}

}  // namespace

void finish_report(harness::Context& ctx, const harness::Runner& runner, ProfileInputs& in) {
  auto& comps = in.comps;
  const RunConfig& c = in.cfg;
  const Plan& p = in.plan;
  const bool sp = p.layout == Layout::sp;
  const double layer_ms = med(comps, "whole_layer");
  const double dense_ms = median_ms(in.dense.m);
  const double dense_tflops = dense_ms > 0 ? in.dense.flops / (dense_ms * 1e9) : 0;
  in.dense.m.params = {{"m", in.dense.size}, {"n", in.dense.size}, {"k", in.dense.size}};
  in.dense.m.metrics = {{"flops", in.dense.flops}, {"tflops", dense_tflops}};

  nlohmann::json components = nlohmann::json::object();
  std::vector<reports::Measurement> results;
  for (auto& r : comps) {
    const auto sm = stats::summarize(r.m.samples_ms);
    r.m.params = {{"layout", c.layout}, {"world", p.world}, {"tokens_local", p.local_tokens},
                  {"in_layer", r.in_layer}};
    if (r.flops > 0) {
      r.m.metrics["flops"] = r.flops;
      r.m.metrics["tflops"] = r.flops / (sm.median * 1e9);
      if (dense_tflops > 0) r.m.metrics["fraction_of_dense_gemm"] = r.flops / (sm.median * 1e9) / dense_tflops;
    }
    if (r.bytes > 0) {
      r.m.metrics["bytes"] = r.bytes;
      r.m.metrics["algbw_gbps"] = r.bytes / (sm.median * 1e6);
    }
    if (layer_ms > 0 && r.in_layer) r.m.metrics["share_of_layer"] = sm.median / layer_ms;
    components[r.m.name] = {{"median_ms", sm.median}, {"min_ms", sm.min}, {"max_ms", sm.max},
                            {"samples_ms", r.m.samples_ms}, {"in_layer", r.in_layer}};
    if (r.m.metrics.contains("share_of_layer")) components[r.m.name]["share_of_layer"] = r.m.metrics["share_of_layer"];
    if (r.m.metrics.contains("tflops")) components[r.m.name]["tflops"] = r.m.metrics["tflops"];
    results.push_back(r.m);
  }
  results.push_back(in.dense.m);

  // ---- derived lines ---------------------------------------------------------------------
  const int L = c.moe_layers;
  const double saving = med(comps, "moe_per_layer_exchange") - med(comps, "moe_reused_split_sizes");
  const double xchg = med(comps, "seq_size_exchange");
  const double disp = med(comps, "ep_dispatch") + med(comps, "ep_undispatch");
  const double tpr = med(comps, "tp_reduction");
  const double comm = sp ? xchg + disp : 3.0 * tpr;  // TP: three all-reduces per layer
  const double shared = med(comps, "shared_branch");
  const double routed = med(comps, "routed_branch");
  const double ser = med(comps, "branches_serialized"), ovl = med(comps, "branches_overlapped");
  const double expert_ms = med(comps, "local_expert_compute");
  const auto* lec = find(comps, "local_expert_compute");
  const double expert_tflops = lec && expert_ms > 0 ? lec->flops / (expert_ms * 1e9) : 0;
  nlohmann::json derived = {
      {"metadata_saving_ms_per_layer", saving},
      {"metadata_saving_ms_per_forward", saving * L},
      {"moe_layers", L},
      {"communication_ms_per_layer", comm},
      {"shared_over_routed", routed > 0 ? shared / routed : 0},
      {"dense_gemm_tflops", dense_tflops},
      {"dense_gemm_size", in.dense.size},
      {"expert_tflops", expert_tflops},
      {"expert_fraction_of_dense", dense_tflops > 0 ? expert_tflops / dense_tflops : 0},
      {"expert_flop_convention",
       "2 FLOP per MAC of the gate, up and down expert GEMMs over the routed (token, head, k) "
       "assignments of this rank; router, SwiGLU7 and combine not counted; routing is timed separately (component routing)"}};
  if (sp) {
    derived["exchange_share_of_comm"] = comm > 0 ? xchg / comm : 0;
    derived["dispatch_undispatch_share_of_comm"] = comm > 0 ? disp / comm : 0;
    derived["dispatch_undispatch_share_of_layer"] = layer_ms > 0 ? disp / layer_ms : 0;
    derived["shared_could_hide_ms"] = std::min(shared, disp);
    derived["shared_could_hide_ms_per_forward"] = std::min(shared, disp) * L;
    derived["overlap_delta_ms"] = ser - ovl;
    derived["overlap_delta_pct"] = ser > 0 ? (ser - ovl) / ser * 100 : 0;
    derived["overlap_delta_ms_per_forward"] = (ser - ovl) * L;
  } else {
    derived["tp_all_reduces_per_layer"] = 3;
    derived["tp_reduction_ms_per_layer"] = 3 * tpr;
  }

  // ---- table -----------------------------------------------------------------------------
  std::string md = fmt::format(
      "## layerbench-moe: {} {} ranks, {} tokens/rank (global {}), hidden {}, {} heads x {} experts, "
      "top-{}, intermediate {}, {}\n\n",
      c.layout, p.world, p.local_tokens, p.global_tokens, p.hidden, p.heads, p.experts, p.topk,
      p.inter, in.ops);
  md += fmt::format("{} warmup + {} timed iterations, rank-max per iteration; times in ms.\n\n",
                    runner.options().warmup, runner.options().iterations);
  // What-if columns: the isolated cost is the median; the fraction and the removal effect come
  // from the what-if of the component (first one listed when several edges were delayed).
  auto what_if_of = [&](const std::string& name) -> const harness::WhatIfResult* {
    for (const auto& w : in.what_ifs)
      if (w.target.component == name) return &w;
    return nullptr;
  };
  const bool with_what_if = !in.what_ifs.empty();
  const bool with_tel = std::any_of(comps.begin(), comps.end(), [](const auto& r) { return r.telemetry.samples > 0; });
  md += "| component | median | min | max | share of layer | rate |";
  md += with_what_if ? " critical-path fraction (95% CI) | removal ms/forward (95% CI) |" : "";
  md += with_tel ? " SM MHz / power-capped |" : "";
  md += "\n|---|---:|---:|---:|---:|---:|";
  md += with_what_if ? "---|---|" : "";
  md += with_tel ? "---|" : "";
  md += "\n";
  for (const auto& r : comps) {
    const auto sm = stats::summarize(r.m.samples_ms);
    std::string share = r.in_layer && layer_ms > 0 ? fmt::format("{:.1f}%", 100 * sm.median / layer_ms) : "-";
    const double gf = r.flops / (sm.median * 1e6);
    std::string rate = r.flops > 0 ? (gf >= 1000 ? fmt::format("{:.1f} TFLOP/s", gf / 1000) : fmt::format("{:.2f} GFLOP/s", gf))
                       : r.bytes > 0 ? fmt::format("{:.1f} GB/s", r.bytes / (sm.median * 1e6)) : "";
    md += fmt::format("| {} | {:.4f} | {:.4f} | {:.4f} | {} | {} |", r.m.name, sm.median, sm.min, sm.max, share, rate);
    if (with_what_if) {
      if (const auto* w = what_if_of(r.m.name)) {
        const double f = w->instances_per_forward;
        const auto e = w->effect_ci(f, 0.95);
        md += fmt::format(" {:.3f} [{:.3f}, {:.3f}] | {:+.4f} [{:+.4f}, {:+.4f}] |", w->fit.slope, w->fit.ci.low,
                          w->fit.ci.high, w->effect_ms(f), e.low, e.high);
      } else {
        md += " | |";
      }
    }
    if (with_tel)
      md += std::isfinite(r.telemetry.sm_clock_mhz)
                ? fmt::format(" {:.0f} / {:.0f}% |", r.telemetry.sm_clock_mhz, 100 * r.telemetry.power_capped_share)
                : " - |";
    md += "\n";
    if (r.telemetry.samples > 0) components[r.m.name]["telemetry"] = covariates_json(r.telemetry);
  }
  md += fmt::format("| dense_gemm_reference {}^3 | {:.4f} | | | - | {:.1f} TFLOP/s |\n\n", in.dense.size,
                    dense_ms, dense_tflops);
  md += fmt::format("- metadata saving: {:.4f} ms/layer x {} MoE layers = {:.3f} ms per forward "
                    "(difference of the two separately timed MoE medians); the exchange itself costs "
                    "{:.4f} ms/layer x {} = {:.3f} ms per forward\n",
                    saving, L, saving * L, xchg, L, xchg * L);
  if (sp) {
    md += fmt::format("- communication per layer: {:.4f} ms (exchange {:.4f} = {:.0f}%, dispatch+undispatch {:.4f} = {:.0f}%); "
                      "dispatch+undispatch = {:.1f}% of the layer\n",
                      comm, xchg, comm > 0 ? 100 * xchg / comm : 0, disp, comm > 0 ? 100 * disp / comm : 0,
                      layer_ms > 0 ? 100 * disp / layer_ms : 0);
    md += fmt::format("- shared branch {:.4f} ms ({:.0f}% of routed) could hide up to min(shared, collectives) = "
                      "{:.4f} ms/layer ({:.3f} ms per forward)\n",
                      shared, routed > 0 ? 100 * shared / routed : 0, std::min(shared, disp),
                      std::min(shared, disp) * L);
    if (in.ops.rfind("cuda", 0) != 0) {
      md += "- overlap probe: not applicable on the host backend (MPI non-blocking collectives make no progress "
            "while the rank computes, so both variants do the same serial work)\n";
    } else {
      md += fmt::format("- overlap probe: serialized {:.4f} vs overlapped {:.4f} ms: delta {:+.4f} ms ({:+.2f}%), "
                        "x{} = {:+.3f} ms per forward\n",
                        ser, ovl, ser - ovl, ser > 0 ? 100 * (ser - ovl) / ser : 0, L, (ser - ovl) * L);
    }
  } else {
    md += fmt::format("- TP: three [N, hidden] all-reduces per layer, {:.4f} ms each = {:.4f} ms/layer\n", tpr, 3 * tpr);
  }
  md += fmt::format("- local_expert_compute: {:.1f} TFLOP/s = {:.0f}% of the dense GEMM reference ({:.1f} TFLOP/s, "
                    "{}^3, same run); FLOPs: {}\n",
                    expert_tflops, dense_tflops > 0 ? 100 * expert_tflops / dense_tflops : 0, dense_tflops,
                    in.dense.size, derived["expert_flop_convention"].get<std::string>());
  md += fmt::format("- expert load: max/mean = {:.2f} (busiest expert {} assignments)\n",
                    in.load.value("max_over_mean_all_ranks", 0.0), in.load.value("max_per_expert_all_ranks", 0.0));
  md += fmt::format("- checks: {}\n", in.checks.dump());

  nlohmann::json extra = {{"components", components}, {"derived", derived}, {"checks", in.checks},
                          {"expert_load", in.load}, {"layout", c.layout}, {"world_size", p.world},
                          {"tokens_per_rank", p.local_tokens}, {"iterations", runner.options().iterations}};
  if (!in.what_ifs.empty()) {
    nlohmann::json wj = nlohmann::json::array();
    for (const auto& w : in.what_ifs) wj.push_back(w.to_json(0.95));
    extra["what_if"] = wj;
    md += harness::what_if_markdown(in.what_ifs, 0.95);
    // The probe overlaps only where collectives progress beside compute (the cuda backend).
    const auto oc = in.ops.rfind("cuda", 0) == 0 ? overlap_check(in.what_ifs, comps, 0.95) : std::nullopt;
    if (oc) {
      extra["overlap_prediction"] = oc->json;
      md += oc->markdown;
    }
  }
  if (in.ab) {
    extra["ab"] = in.ab->json;
    md += in.ab->markdown;
  }
  md += not_timed_markdown(c, comps, in.what_ifs);
  extra["telemetry_status"] = in.telemetry_status;
  if (with_tel) {
    double capped = 0;
    for (const auto& r : comps)
      if (std::isfinite(r.telemetry.power_capped_share)) capped = std::max(capped, r.telemetry.power_capped_share);
    if (capped >= ab::kPowerCappedWarning)
      md += fmt::format("\n- Warning: the GPU was power-capped during the measurements (up to {:.0f}% of the samples "
                        "of a component): idle time raises the clocks, so removing work can save less (or more) "
                        "than its isolated cost.\n", 100 * capped);
  }
  nlohmann::json config = {{"hidden", p.hidden}, {"moe_heads", p.heads}, {"experts", p.experts},
                           {"topk", p.topk}, {"intermediate", p.inter}, {"scale", p.scale},
                           {"tokens", c.tokens}, {"split_sizes", p.splits}, {"layout", c.layout},
                           {"layers", c.layers}, {"moe_layers", c.moe_layers}, {"ab", c.ab},
                           {"pairs", c.pairs}, {"expert_gemm", std::string(to_string(c.expert_gemm))}, {"ops", in.ops},
                           {"heads_padded", p.heads_padded}, {"heads_local", p.heads_local},
                           {"seed", c.common.seed}};
  const auto doc = harness::make_document(ctx, runner, config, results, extra);
  if (ctx.is_root()) {
    std::fputs(md.c_str(), harness::text_stream(c.common));
    std::fflush(harness::text_stream(c.common));
  }
  harness::write_outputs(ctx, c.common, doc, results, md);
}

}  // namespace layerbench::moe
