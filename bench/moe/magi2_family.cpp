// The MAGI-2 multi-head layer as a family of the profile driver (bench/moe/driver.hpp): its
// checks (reused split sizes vs the per-layer exchange, bit for bit; a sampled CPU reference of
// the experts), its probes (the TP all-reduce as a collective, the routed branch with and without
// the exchange, the branches serialized and overlapped), its two stack figures, its derived lines
// and the metadata A/B.
#include "bench/moe/driver.hpp"
#include "bench/moe/profile.hpp"

#include "collectives/error.hpp"
#include "common/json_text.hpp"
#include "moe/magi2/expert_check.hpp"
#include "moe/init.hpp"
#include "reports/derived.hpp"
#include "reports/units.hpp"

#include <fmt/format.h>

#include <cmath>

namespace layerbench::moe {

namespace {

using harness::Clock;
using reports::Role;


class Magi2Family final : public Family {
 public:
  Magi2Family(const RunConfig& c, Communicator& world) : c_(c), layer_(make_layer(c, world, c.common.seed)) {}

  LayerInterface& layer() override { return *layer_; }
  std::string group() const override { return c_.layout; }

  ComponentTable table() override {
    ComponentTable t;
    t.table = layer_->components();
    t.layout = c_.layout;
    const bool sp = layer_->plan().layout == Layout::sp;
    t.elsewhere = sp ? std::vector<std::string>{"tp_reduction"}
                     : std::vector<std::string>{"seq_size_exchange", "ep_dispatch", "ep_undispatch"};
    if (c_.ab == "metadata" && sp) t.ab_what_ifs.push_back({"seq_size_exchange", Edge::end, DelayKind::host});
    t.no_skip_hint = "its removal is --ab metadata";
    return t;
  }

  // Reused split sizes and the per-layer exchange must give bit-identical output, the first with
  // zero scalar exchanges; the output must be finite; the experts at this geometry must match a
  // sampled CPU reference (16 (token, head) pairs per rank).
  nlohmann::json check(const void* x) override {
    MoeLayer& layer = *layer_;
    auto& dev = layer.ep().device();
    const Stream s = dev.compute_stream();
    Buffer o1 = layer.make_activation(), o2 = layer.make_activation();
    const auto n0 = layer.ep().scalar_exchange_count();
    layer.forward(x, o1.data(), std::span<const std::int64_t>(layer.plan().splits), s);
    dev.synchronize(s);
    const auto n1 = layer.ep().scalar_exchange_count();
    layer.forward(x, o2.data(), std::nullopt, s);
    dev.synchronize(s);
    const auto n2 = layer.ep().scalar_exchange_count();
    const std::size_t bytes = o1.bytes();
    double same = bitwise_equal(dev, o1.data(), o2.data(), bytes) ? 1.0 : 0.0;
    double finite = 1.0;
    if (layer.act_bytes() == 4) {
      for (float v : dev.download<float>(o1.data(), bytes / 4)) finite = std::isfinite(v) ? finite : 0.0;
    } else {
      for (std::uint16_t v : dev.download<std::uint16_t>(o1.data(), bytes / 2))
        finite = (v & 0x7f80u) == 0x7f80u ? 0.0 : finite;
    }
    double flags[2] = {1.0 - same, 1.0 - finite};
    layer.ep().control_max(flags);
    nlohmann::json j = {{"reuse_vs_exchange_bit_identical", flags[0] == 0.0},
                        {"output_finite", flags[1] == 0.0},
                        {"scalar_exchanges_reused", n1 - n0},
                        {"scalar_exchanges_per_layer_path", n2 - n1}};
    const bool sp = layer.plan().layout == Layout::sp;
    if (flags[0] != 0.0 || flags[1] != 0.0 || n1 != n0 || (sp && n2 - n1 != 1))
      throw Error("moe consistency check failed: " + json_text(j));
    // The expert path against the sampled CPU reference (route() and experts() of this forward).
    layer.route(s);
    ExpertCheck ec;
    if (layer.plan().heads_valid > 0)
      ec = check_routed_experts(dev, layer.routed_args(), layer.ops().act(), c_.common.seed, 16);
    double bad = ec.ok() ? 0.0 : 1.0;
    layer.ep().control_max(std::span<double>(&bad, 1));
    j["expert_reference"] = ec.to_json();
    if (bad != 0.0) throw Error("moe expert reference check failed (on this or another rank): " + json_text(ec.to_json()));
    return j;
  }

  // Expert load of the routed assignments (max over ranks of the busiest expert).
  nlohmann::json load(const void* x) override {
    (void)x;
    MoeLayer& layer = *layer_;
    const Stream s = layer.ep().device().compute_stream();
    layer.route(s);
    const auto counts = layer.plan().heads_valid > 0 ? layer.ops().expert_counts(layer.routed_args())
                                                     : std::vector<std::int64_t>{};
    double mx = 0, tot = 0, mn = counts.empty() ? 0 : 1e300;
    for (auto v : counts) {
      mx = std::max(mx, double(v));
      mn = std::min(mn, double(v));
      tot += double(v);
    }
    const double mean = counts.empty() ? 0 : tot / double(counts.size());
    double agg[2] = {mx, mean > 0 ? mx / mean : 0};
    layer.ep().control_max(agg);
    return {{"local_experts", counts.size()}, {"assignments", tot}, {"mean_per_expert", mean},
            {"min_per_expert", mn}, {"max_per_expert_all_ranks", agg[0]}, {"max_over_mean_all_ranks", agg[1]}};
  }

  // TP: the layer's [N, hidden] all-reduce timed as the collective alone (the step reduces in
  // place of what merge_linear left). SP: the same collective, a probe, after merge_linear.
  std::optional<FamilyRow> instead_of(const Component& comp) override {
    if (comp.name != "tp_reduction") return std::nullopt;
    return reduction_row();
  }

  std::vector<FamilyRow> probes(const void* x, void* out) override {
    (void)x, (void)out;
    MoeLayer& layer = *layer_;
    const auto splits = std::span<const std::int64_t>(layer.plan().splits);
    const bool sp = layer.plan().layout == Layout::sp;
    std::vector<FamilyRow> p;
    if (sp) {
      auto r = reduction_row();
      r.after = "merge_linear";
      p.push_back(std::move(r));
    }
    auto probe = [](std::string name, std::function<void(Stream)> body, Clock clock) {
      FamilyRow r;
      r.name = std::move(name);
      r.body = std::move(body);
      r.clock = clock;
      return r;
    };
    p.push_back(probe("moe_per_layer_exchange", [&layer](Stream st) { layer.routed_branch(std::nullopt, st); }, Clock::host));
    p.push_back(probe("moe_reused_split_sizes", [&layer, splits](Stream st) { layer.routed_branch(splits, st); }, Clock::host));
    if (sp) {
      p.push_back(probe("branches_serialized", [&layer, splits](Stream st) { layer.branches(splits, false, st); }, Clock::device));
      p.push_back(probe("branches_overlapped", [&layer, splits](Stream st) { layer.branches(splits, true, st); }, Clock::device));
    }
    return p;
  }

  // The stack a framework runs (per-layer exchange) first: the what-ifs and A/Bs time it.
  std::vector<StackFigure> stacks() override {
    MoeLayer& layer = *layer_;
    const auto splits = std::span<const std::int64_t>(layer.plan().splits);
    return {{"stack_per_layer_exchange", [&layer](const void* in, void* o, Stream st) { layer.stack_forward(in, o, st); }},
            {"stack_reused_split_sizes",
             [&layer, splits](const void* in, void* o, Stream st) { layer.forward(in, o, splits, st); }}};
  }

  std::string title(const std::string& ops) const override {
    const Plan& p = layer_->plan();
    return fmt::format("layerbench-moe: {} {} ranks, {} tokens/rank (global {}), hidden {}, {} heads x {} experts, "
                       "top-{}, intermediate {}, {}",
                       c_.layout, p.world, p.local_tokens, p.global_tokens, p.hidden, p.heads, p.experts, p.topk,
                       p.inter, ops);
  }
  std::string ops_text() override { return layer_->ops().describe(); }
  nlohmann::json params() const override {
    const Plan& p = layer_->plan();
    return {{"layout", c_.layout}, {"world", p.world}, {"tokens_local", p.local_tokens}};
  }
  nlohmann::json config_json() const override {
    const Plan& p = layer_->plan();
    return {{"block", "magi2_multi_head"}, {"hidden", p.hidden}, {"moe_heads", p.heads}, {"experts", p.experts},
            {"topk", p.topk}, {"intermediate", p.inter}, {"scale", p.scale}, {"tokens", c_.tokens},
            {"split_sizes", p.splits}, {"layout", c_.layout},
            {"expert_gemm", std::string(to_string(c_.expert_gemm))}, {"heads_padded", p.heads_padded},
            {"heads_local", p.heads_local}};
  }
  std::int64_t tokens_per_rank() const override { return layer_->plan().local_tokens; }
  std::string expert_component() const override { return "local_expert_compute"; }

  void derived_lines(const std::vector<reports::Measurement>& results, nlohmann::json& derived,
                     std::vector<std::string>& notes) override {
    if (layer_->plan().layout == Layout::sp) {
      sp_lines(results, derived, notes);
    } else if (const auto* tpr = find(results, "tp_reduction")) {
      const auto e = reports::scaled_median(*tpr, 3, c_.confidence);
      derived["tp_reduction_per_layer"] = e.to_json();
      notes.push_back("TP: three [N, hidden] all-reduces per layer: " + e.text());
    }
  }

  std::optional<AbResult> own_ab(const void* x, const std::vector<ComponentResult>& comps,
                                 const std::vector<harness::WhatIfResult>& what_ifs,
                                 const telemetry::Sampler* sampler) override {
    if (c_.ab != "metadata") return std::nullopt;
    return run_ab(*layer_, x, c_, comps, what_ifs, sampler);
  }

 private:
  FamilyRow reduction_row() {
    MoeLayer& layer = *layer_;
    const Plan& p = layer.plan();
    const bool sp = p.layout == Layout::sp;
    if (!red_in_.data()) {
      // SP: the balanced token count, so that every rank reduces the same number of elements.
      const std::int64_t red_tokens = sp ? p.global_tokens / p.world : p.local_tokens;
      nelem_ = static_cast<std::size_t>(red_tokens * p.hidden);
      auto& dev = layer.ep().device();
      red_in_ = dev.alloc(nelem_ * layer.act_bytes());
      red_out_ = dev.alloc(nelem_ * layer.act_bytes());
      const Stream s = dev.compute_stream();
      layer.ops().fill(red_in_.data(), layer.ops().act(),
                       {.seed = c_.common.seed, .tensor = kDenseA, .scale = 1.0f, .rows = red_tokens, .cols = p.hidden,
                        .full_cols = p.hidden, .ld = p.hidden},
                       s);
      dev.synchronize(s);
    }
    Communicator& w = layer.ep();
    const DType act = layer.ops().act();
    const auto bus = 2.0 * (p.world - 1) / p.world;
    return {"tp_reduction",
            [&w, this, act](Stream st) { w.all_reduce(red_in_.data(), red_out_.data(), nelem_, act, st); },
            Clock::device,
            sp ? Role::probe : Role::communication,
            sp ? "" : "routed_branch",
            {.bytes = static_cast<double>(nelem_) * static_cast<double>(layer.act_bytes()), .bus_factor = bus},
            ""};
  }

  // SP: the metadata saving, the communication inside the layer and the overlap probe.
  void sp_lines(const std::vector<reports::Measurement>& results, nlohmann::json& derived,
                std::vector<std::string>& notes) const {
    using reports::fmt_share;
    using reports::fmt_time;
    const double confidence = c_.confidence;
    const auto est = exchange_estimate(find(results, "seq_size_exchange"), c_.moe_layers, confidence);
    derived["metadata_saving_per_forward"] = est.json;
    notes.push_back("metadata saving per forward: " + (est.valid ? est.text : std::string("n/a")));
    const auto* pe = find(results, "moe_per_layer_exchange");
    const auto* ru = find(results, "moe_reused_split_sizes");
    if (pe && ru) {
      auto d = reports::difference_of_medians(*pe, *ru, confidence);
      derived["routed_branch_median_difference_per_layer"] = d.to_json();
      // JSON only: both are host-clocked probes, and the reused path's host time includes work
      // queued behind it on the device, so their difference is not the saving (the estimate is).
    }
    double comm = 0;
    for (const auto& m : results)
      if (m.role == Role::communication && m.group == c_.layout) comm += median_ms(m);
    const auto* whole = find(results, "whole_layer");
    const auto* shared_m = find(results, "shared_branch");
    const double layer_ms = whole ? median_ms(*whole) : stats::nan_value;
    const double shared = shared_m ? median_ms(*shared_m) : stats::nan_value;
    derived["communication_ms_per_layer"] = comm;
    notes.push_back(fmt::format("communication inside the layer (parts with role communication): {} = {} of the layer; "
                                "the shared branch ({}) could hide up to {} of it per layer",
                                fmt_time(comm), fmt_share(layer_ms > 0 ? comm / layer_ms : stats::nan_value),
                                fmt_time(shared), fmt_time(std::min(shared, comm))));
    const auto* ser = find(results, "branches_serialized");
    const auto* ovl = find(results, "branches_overlapped");
    if (layer_->ep().backend() != Backend::cuda) {
      notes.push_back("overlap probe: not applicable on the host backend (MPI non-blocking collectives make no progress "
                      "while the rank computes, so both variants do the same serial work)");
    } else if (ser && ovl) {
      auto d = reports::difference_of_medians(*ser, *ovl, confidence);
      derived["overlap_delta_per_layer"] = d.to_json();
      notes.push_back("overlap probe, serialized minus overlapped branches: " + d.text() + " per layer");
    }
  }

  const RunConfig& c_;
  std::unique_ptr<MoeLayer> layer_;
  Buffer red_in_, red_out_;
  std::size_t nelem_ = 0;
};

}  // namespace

std::unique_ptr<Family> make_magi2_family(const RunConfig& c, Communicator& world) {
  return std::make_unique<Magi2Family>(c, world);
}

}  // namespace layerbench::moe
