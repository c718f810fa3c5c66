#include "bench/moe/whatif.hpp"
#include "common/json_text.hpp"
#include "common/json_number.hpp"

#include "common/cli/progress.hpp"
#include "bench/moe/profile.hpp"
#include "collectives/error.hpp"
#include "moe/expert_buckets.hpp"
#include "stats/prediction.hpp"
#include "stats/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

namespace layerbench::moe {

namespace {

using nlohmann::json;

const ComponentResult* find(const std::vector<ComponentResult>& v, const std::string& n) {
  for (const auto& c : v)
    if (c.m.name == n) return &c;
  return nullptr;
}

// NaN travels through control_max as -inf and comes back as NaN.
double to_max(double v) { return std::isfinite(v) ? v : -std::numeric_limits<double>::infinity(); }
double from_max(double v) { return std::isfinite(v) ? v : stats::nan_value; }

}  // namespace

std::unique_ptr<telemetry::Sampler> make_sampler(const RunConfig& c, Communicator& world, std::string* status) {
  const bool want = c.telemetry == "gpu" || (c.telemetry == "auto" && world.backend() == Backend::cuda);
  if (!want) {
    *status = "off";
    return nullptr;
  }
  std::string why;
  const auto id = world.device().pci_bus_id();
  auto s = telemetry::make_gpu_sampler(id.empty() ? std::vector<std::string>{} : std::vector<std::string>{id},
                                       std::chrono::microseconds(static_cast<long>(c.telemetry_period_ms * 1000)), &why);
  *status = s ? json_text(s->describe()) : "unavailable: " + why;
  if (!s && world.rank() == 0) std::fprintf(stderr, "layerbench-moe: warning: GPU telemetry %s\n", status->c_str());
  return s;
}

ab::RunCovariates window_covariates(Communicator& world, const telemetry::Sampler* sampler, double t0, double t1) {
  ab::RunCovariates r;
  if (sampler) r = ab::covariates_of(telemetry::window_json(sampler->summaries(t0, t1)));
  double v[5] = {static_cast<double>(r.samples), to_max(-r.sm_clock_mhz), to_max(r.power_capped_share),
                 to_max(r.power_w), to_max(r.memory_peak_mib)};
  world.control_max(v);
  r.samples = static_cast<std::size_t>(v[0]);
  r.sm_clock_mhz = from_max(-v[1]);
  r.power_capped_share = from_max(v[2]);
  r.power_w = from_max(v[3]);
  r.memory_peak_mib = from_max(v[4]);
  return r;
}

json covariates_json(const ab::RunCovariates& r) {
  return {{"samples", r.samples}, {"sm_clock_mean_mhz_min_over_ranks", finite_or_null(r.sm_clock_mhz)},
          {"power_capped_share_max_over_ranks", finite_or_null(r.power_capped_share)}, {"power_mean_w_max_over_ranks", finite_or_null(r.power_w)},
          {"memory_used_peak_mib", finite_or_null(r.memory_peak_mib)}};
}

std::vector<harness::WhatIfTarget> what_if_targets(const RunConfig& c, const ComponentTable& tab) {
  std::vector<std::string> delayable, host, removable;
  for (const auto& comp : tab.table) {
    if (comp.allows.delayed) delayable.push_back(comp.name);
    if (comp.allows.delayed && comp.allows.delay_on_host) host.push_back(comp.name);
    if (comp.allows.removed) removable.push_back(comp.name);
  }
  // Names of the family's other layouts parse, and are refused below with the reason.
  std::vector<std::string> valid = delayable;
  valid.insert(valid.end(), tab.elsewhere.begin(), tab.elsewhere.end());
  std::vector<harness::WhatIfTarget> t;
  if (!c.what_if.empty()) t = harness::parse_what_if(c.what_if, valid, host);
  auto here = [&](const std::string& comp, const std::string& flag) {  // flag: "--what-if " or "--ab drop:"
    if (std::find(tab.elsewhere.begin(), tab.elsewhere.end(), comp) != tab.elsewhere.end())
      throw UsageError(fmt::format("{}{}: the {} layout has no such component", flag, comp, tab.layout));
  };
  for (auto& x : t) {
    here(x.component, "--what-if ");
    const auto* comp = find_component(tab.table, x.component);
    // Idle components (a host wait) and in-place collectives are priced by delay; an explicit
    // @begin edge asks for a delay there.
    const bool can_replicate = comp && comp->allows.replicated;
    if (c.what_if_method == "replicate" && !can_replicate)
      throw UsageError(fmt::format("--what-if-method replicate: {} cannot run twice per call (use delay)", x.component));
    const bool replicate = c.what_if_method == "replicate" ||
                           ((c.what_if_method.empty() || c.what_if_method == "auto") && can_replicate && x.edge == Edge::end);
    x.method = replicate ? harness::WhatIfMethod::replicate : harness::WhatIfMethod::delay;
  }
  for (const auto& extra : tab.ab_what_ifs) {  // the family's A/B needs its prediction (MAGI-2's metadata A/B)
    const bool has = std::any_of(t.begin(), t.end(), [&](const auto& x) { return x.component == extra.component; });
    if (!has) t.push_back(extra);
  }
  // Every removal A/B is checked against the component's replication what-if.
  for (std::size_t i = 0; i < c.ab_drops.size(); ++i) {
    const auto& d = c.ab_drops[i];
    here(d, "--ab drop:");
    const auto* comp = find_component(tab.table, d);
    if (!comp) {
      std::string names;
      for (const auto& n : removable) names += (names.empty() ? "" : ", ") + n;
      throw UsageError(fmt::format("--ab drop:{}: unknown component (one of: {})", d, names));
    }
    if (!comp->allows.removed)
      throw UsageError(fmt::format("--ab drop:{}: this component cannot be skipped (the layer needs what it returns{})", d,
                                   tab.no_skip_hint.empty() ? "" : "; " + tab.no_skip_hint));
    if (std::find(c.ab_drops.begin(), c.ab_drops.begin() + static_cast<std::ptrdiff_t>(i), d) !=
        c.ab_drops.begin() + static_cast<std::ptrdiff_t>(i))
      throw UsageError(fmt::format("--ab drop:{} given twice", d));
    if (!comp->allows.replicated) continue;
    const bool has = std::any_of(t.begin(), t.end(), [&](const auto& x) {
      return x.component == d && x.method == harness::WhatIfMethod::replicate;
    });
    if (!has) t.push_back({d, Edge::end, DelayKind::device, harness::WhatIfMethod::replicate});
  }
  return t;
}

std::function<double()> energy_meter(Communicator& w, const telemetry::Sampler* sampler) {
  return [&w, sampler] {
    double e = sampler ? sampler->energy_j() : stats::nan_value;
    w.control_sum(std::span<double>(&e, 1));  // NaN on any rank (no counter): NaN
    return e;
  };
}

json stack_expert_tiles(LayerInterface& layer, const void* x, int layers) {
  Communicator& w = layer.ep();
  auto& dev = w.device();
  const Stream s = dev.compute_stream();
  Buffer a = layer.make_activation(), b = layer.make_activation();
  json out = json::object();
  for (const StackInput input : {StackInput::same, StackInput::chained}) {
    dev.copy(a.data(), x, a.bytes(), s);
    void *src = a.data(), *dst = b.data();
    json tiles = json::array();
    for (int l = 0; l < layers; ++l) {
      layer.stack_forward(src, dst, s);
      double t = layer.expert_tiles();
      w.control_sum(std::span<double>(&t, 1));
      tiles.push_back(t);
      if (input == StackInput::chained) std::swap(src, dst);
    }
    out[to_string(input)] = tiles;
  }
  layer.forward(x, b.data(), s);  // every buffer as the profile left it
  dev.synchronize(s);
  return out;
}

std::vector<harness::WhatIfResult> run_what_ifs(LayerInterface& layer, const void* x, const RunConfig& c,
                                                const std::vector<harness::WhatIfTarget>& targets,
                                                const std::vector<ComponentResult>& comps,
                                                const telemetry::Sampler* sampler,
                                                const std::function<void(const std::vector<harness::WhatIfResult>&)>& after_each) {
  std::vector<harness::WhatIfResult> out;
  if (targets.empty()) return out;
  Communicator& w = layer.ep();
  auto& dev = w.device();
  const Stream s = dev.compute_stream();
  Buffer a = layer.make_activation(), b = layer.make_activation();
  InjectedDelays delays(dev);
  layer.set_delay_hook(&delays);
  harness::WhatIfOptions o;
  o.levels_us = c.what_if_levels;
  o.rounds = c.what_if_rounds;
  o.max_seconds = c.what_if_seconds;
  o.target_relative_half_width = c.what_if_precision;
  o.target_absolute_half_width_ms = c.what_if_floor_ms;
  o.prime_stacks = c.prime_stacks;
  const int L = c.layers;
  const auto energy = energy_meter(w, sampler);
  // The stack every what-if and removal A/B times: L layers with the per-layer exchange.
  auto body = [&] {
    dev.copy(a.data(), x, a.bytes(), s);
    run_stack([&](const void* in, void* o2, Stream st) { layer.stack_forward(in, o2, st); }, a.data(), b.data(), L, s,
              parse_stack_input(c.stack_input));
  };
  std::optional<cli::Progress> bar;  // one step per what-if (rounds of a replication are adaptive)
  if (w.rank() == 0) bar.emplace("what-if", targets.size());
  for (const auto& t : targets) {
    const auto* comp = find(comps, t.component);
    const std::vector<double> cost = comp ? comp->m.samples_ms : std::vector<double>{};
    if (t.method == harness::WhatIfMethod::replicate) {
      harness::WhatIfOptions ro = o;
      const auto table = layer.components();
      const auto* row = find_component(table, t.component);
      ro.copies = c.what_if_copies;
      if (!row || !row->allows.removed) std::erase(ro.copies, 0);
      auto stack = [&](int k) {
        layer.set_copies(t.component, k);
        const double ms = harness::time_body(w, s, body);
        layer.set_copies("", 1);
        return ms;
      };
      out.push_back(harness::run_replicate_what_if(ro, t, L, c.moe_layers, cost, stack, sampler, {}, energy));
    } else {
      auto r = harness::run_delay_what_if(w, s, delays, o, t, c.moe_layers, cost, body, sampler, {}, energy);
      LB_CHECK(r && r->instances_per_stack == L, "one injected delay per layer of the stack");
      out.push_back(std::move(*r));
    }
    if (bar) bar->step(fmt::format("{} ({}, {} rounds)", t.name(), harness::to_string(t.method), out.back().fit.blocks));
    if (after_each) {
      layer.set_delay_hook(nullptr);
      after_each(out);
      layer.set_delay_hook(&delays);
    }
  }
  if (bar) bar->finish();
  layer.set_delay_hook(nullptr);
  return out;
}

std::vector<Prediction> exchange_predictions(const std::vector<harness::WhatIfResult>& w, double saved_per_stack,
                                             double confidence) {
  std::vector<Prediction> out;
  for (const auto& r : w) {
    if (r.target.component != "seq_size_exchange" || !std::isfinite(r.cost_ms)) continue;
    Prediction p;
    p.source = "what-if " + r.target.name();
    p.value = r.effect_ms(saved_per_stack);
    p.ci = r.effect_ci(saved_per_stack, confidence);
    p.half_width = std::isfinite(p.ci.low) ? std::max(p.value - p.ci.low, p.ci.high - p.value) : 0.0;
    out.push_back(p);
  }
  return out;
}

std::optional<OverlapCheck> overlap_check(const std::vector<harness::WhatIfResult>& w,
                                          const std::vector<ComponentResult>& comps, double confidence) {
  const harness::WhatIfResult* disp = nullptr;
  for (const auto& r : w)
    if (r.target.component == "ep_dispatch") disp = &r;
  const auto* ser = find(comps, "branches_serialized");
  const auto* ovl = find(comps, "branches_overlapped");
  const auto* shared = find(comps, "shared_branch");
  if (!disp || !ser || !ovl || !shared || !std::isfinite(disp->cost_ms)) return std::nullopt;
  const double shared_ms = median_ms(shared->m);
  // Hidden under the shared branch: the dispatch's critical part, up to the shared branch's length.
  const double hide = std::min(disp->cost_ms, shared_ms);
  const double predicted = disp->fit.slope * hide;
  const stats::Interval pci = {disp->fit.ci.low * hide, disp->fit.ci.high * hide};
  const double half = std::max(predicted - pci.low, pci.high - predicted);
  // Measured: difference of the two medians, bootstrap interval from independent resamples.
  const auto rs = stats::resampled_medians(ser->m.samples_ms, 20000, 11);
  const auto ro = stats::resampled_medians(ovl->m.samples_ms, 20000, 12);
  std::vector<double> d(rs.size());
  for (std::size_t i = 0; i < rs.size(); ++i) d[i] = rs[i] - ro[i];
  std::vector<double> tmp = d;
  const auto mci = stats::percentile_interval(tmp, confidence, stats::Alternative::two_sided);
  const double measured = median_ms(ser->m) - median_ms(ovl->m);
  const double se = stats::summarize(d).sd;
  const auto chk = stats::check_prediction(measured, mci, se, 0, predicted, half, confidence);
  OverlapCheck oc;
  oc.json = {{"predicted_ms_per_layer", predicted},
             {"predicted_ci", {finite_or_null(pci.low), finite_or_null(pci.high)}},
             {"basis", "ep_dispatch critical-path fraction x min(ep_dispatch, shared_branch) isolated cost"},
             {"measured_ms_per_layer", measured},
             {"measured_ci", {finite_or_null(mci.low), finite_or_null(mci.high)}},
             {"difference_ci", {finite_or_null(chk.difference_ci.low), finite_or_null(chk.difference_ci.high)}},
             {"holds", chk.holds},
             {"verdict", chk.verdict}};
  oc.markdown = fmt::format(
      "- overlap probe, predicted by the what-if: ep_dispatch fraction {:.3f} x min(dispatch {:.4f}, shared {:.4f}) = "
      "{:+.4f} ms/layer [{:+.4f}, {:+.4f}]; measured serialized - overlapped {:+.4f} ms [{:+.4f}, {:+.4f}]: {}\n",
      disp->fit.slope, disp->cost_ms, shared_ms, predicted, pci.low, pci.high, measured, mci.low, mci.high, chk.verdict);
  return oc;
}

reports::Section not_timed_section(const RunConfig& c, const std::vector<ComponentResult>& comps,
                                   const std::vector<harness::WhatIfResult>& w) {
  const auto* ex = find(comps, "seq_size_exchange");
  reports::Section s;
  s.title = "What this profile does not time";
  s.notes.push_back("The framework around the layer: Python dispatch, a framework's own collectives and host reads, its "
                    "allocator and stream handling. A saving at framework level can be far larger than this profile's.");
  if (ex && c.framework_exchange_ms > 0) {
    const double here = median_ms(ex->m);
    s.notes.push_back(fmt::format("The sequence-size exchange costs {:.4f} ms here; the framework's own exchange was "
                                  "measured at {:.4f} ms (--framework-exchange-ms), {:.1f}x more: per forward that is up "
                                  "to {:.3f} ms that this profile cannot see.",
                                  here, c.framework_exchange_ms, here > 0 ? c.framework_exchange_ms / here : 0.0,
                                  c.framework_exchange_ms * c.moe_layers));
  }
  for (const auto& r : w) {
    if (r.target.component != "seq_size_exchange") continue;
    s.notes.push_back(fmt::format("Removing the exchange here is predicted to save {:+.4f} ms per forward ({}); a "
                                  "framework that pays more per exchange saves correspondingly more if the extra is on "
                                  "its critical path.",
                                  r.effect_ms(r.instances_per_forward), r.target.name()));
  }
  return s;
}

}  // namespace layerbench::moe
