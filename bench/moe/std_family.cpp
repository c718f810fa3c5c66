// The standard expert-parallel MoE block (any model but MAGI-2) as a family of the profile driver
// (bench/moe/driver.hpp): checked against the CPU oracle first; its table is the block's own; the
// stack figure is L forwards; the header names the model, where it came from, and the kernel path
// of each component.
#include "bench/moe/driver.hpp"

#include "collectives/error.hpp"
#include "common/json_text.hpp"
#include "moe/standard/std_block.hpp"
#include "moe/standard/std_reference.hpp"
#include "reports/units.hpp"

#include <fmt/format.h>

#include <cmath>

namespace layerbench::moe {

namespace {

using reports::Role;

std::vector<std::int64_t> splits_of(const RunConfig& c, int P) {
  if (c.ep > 0 && c.ep != P)
    throw UsageError(fmt::format("--ep {}: the standard block shards the experts over every rank; run it on {} ranks "
                                 "(this run has {})", c.ep, c.ep, P));
  if (!c.split_sizes.empty() && static_cast<int>(c.split_sizes.size()) != P)
    throw UsageError(fmt::format("--split-sizes has {} entries but the world has {} ranks", c.split_sizes.size(), P));
  return c.split_sizes.empty() ? std::vector<std::int64_t>(static_cast<std::size_t>(P), c.tokens) : c.split_sizes;
}

std::unique_ptr<StdBlock> make_block(const RunConfig& c, Communicator& world) {
  const int P = world.size();
  StdPlan plan = make_std_plan(c.model, world.rank(), P, splits_of(c, P));
  plan.dispatch = c.dispatch == "fp8" ? DispatchPrecision::fp8 : DispatchPrecision::act;
  if (world.backend() == Backend::cuda && c.model.activation.kind == Activation::gelu_tanh_glu)
    throw UsageError(fmt::format("activation gelu_tanh_glu (from {}): the CUDA expert kernels run silu-glu and "
                                 "swiglu-clamped only; use --backend host, or --activation silu-glu to time the "
                                 "same GEMM shapes", c.model.sources.count("activation") ? c.model.sources.at("activation") : "the model"));
  auto ops = world.backend() == Backend::cuda ? make_cuda_std_ops(world.device()) : make_host_std_ops();
  if (!c.expert_table.empty()) load_expert_table(*ops, c.expert_table);
  return std::make_unique<StdBlock>(c.model, plan, world, std::move(ops), c.common.seed);
}

class StdFamily final : public Family {
 public:
  StdFamily(const RunConfig& c, Communicator& world) : c_(c), block_(make_block(c, world)) {}

  LayerInterface& layer() override { return *block_; }
  std::string group() const override { return "ep" + std::to_string(block_->plan().world); }

  ComponentTable table() override {
    if (c_.ab == "metadata")
      throw UsageError("--ab metadata prices MAGI-2's per-layer sequence-size exchange, which the standard block does not "
                       "have: its removal A/Bs are --ab drop:COMPONENT");
    ComponentTable t;
    t.table = block_->components();
    t.layout = "standard expert-parallel";
    return t;
  }

  // The block against the CPU oracle (sampled tokens), and a finite output.
  nlohmann::json check(const void* x) override {
    StdBlock& b = *block_;
    const Stream s = b.ep().device().compute_stream();
    Buffer out = b.make_activation();
    b.forward(x, out.data(), s);
    b.ep().device().synchronize(s);
    const bool gpu = b.act_bytes() == 2;
    const int samples = gpu ? static_cast<int>(std::max<std::int64_t>(2, 16 / c_.model.topk)) : 8;
    const StdCheck ck = check_std_block(b, x, out.data(), c_.common.seed, samples);
    double finite = 1;
    const auto n = static_cast<std::size_t>(b.plan().tokens * c_.model.hidden);
    if (gpu) {
      for (auto v : b.ep().device().download<std::uint16_t>(out.data(), n)) finite = (v & 0x7f80u) == 0x7f80u ? 0 : finite;
    } else {
      for (auto v : b.ep().device().download<float>(out.data(), n)) finite = std::isfinite(v) ? finite : 0;
    }
    double flags[2] = {ck.ok() ? 0.0 : 1.0, 1.0 - finite};
    b.ep().control_max(flags);
    nlohmann::json j = {{"oracle", ck.to_json()}, {"oracle_ok_all_ranks", flags[0] == 0}, {"output_finite", flags[1] == 0}};
    if (flags[0] != 0 || flags[1] != 0)
      throw Error("standard MoE block check failed (this or another rank): " + json_text(j));
    return j;
  }

  // Rows per local expert of the last dispatch, over every rank; the bytes its dispatch and
  // combine moved, over every rank.
  nlohmann::json load(const void* x) override {
    (void)x;
    StdBlock& b = *block_;
    bytes_[0] = double(b.dispatch_bytes());
    bytes_[1] = double(b.combine_bytes());
    b.ep().control_sum(bytes_);
    const auto& rows = b.local_expert_rows();
    double mx = 0, tot = 0, empty = 0;
    for (auto v : rows) {
      mx = std::max(mx, double(v));
      tot += double(v);
      empty += v == 0 ? 1 : 0;
    }
    double sums[3] = {tot, empty, double(rows.size())};
    b.ep().control_sum(sums);
    double most = mx;
    b.ep().control_max(std::span<double>(&most, 1));
    const double mean = sums[2] > 0 ? sums[0] / sums[2] : 0;
    return {{"experts", sums[2]}, {"assignments", sums[0]}, {"mean_per_expert", mean},
            {"max_per_expert_all_ranks", most}, {"max_over_mean_all_ranks", mean > 0 ? most / mean : 0},
            {"experts_without_tokens", sums[1]}};
  }

  std::vector<std::string> header_notes() override {
    const StdBlock& b = *block_;
    const char* act = b.act_bytes() == 2 ? "bf16" : "fp32";
    return {fmt::format("dispatch {}: {} B per token copy; combine {}: {} B per copy; the checked forward moved {:.0f} B "
                        "in the dispatch and {:.0f} B in the combine over all ranks",
                        fp8() ? "fp8 (e4m3 + fp32 scale per 128 channels)" : act, b.dispatch_row_bytes(), act,
                        b.combine_row_bytes(), bytes_[0], bytes_[1]),
            experts_line()};
  }
  nlohmann::json extra_json() override {
    const StdBlock& b = *block_;
    return {{"dispatch_bytes", {{"row", b.dispatch_row_bytes()}, {"all_ranks", bytes_[0]}}},
            {"combine_bytes", {{"row", b.combine_row_bytes()}, {"all_ranks", bytes_[1]}}},
            {"expert_precision", {{"routed", to_string(b.expert_precision())}, {"shared", to_string(b.shared_precision())}}}};
  }

  std::vector<StackFigure> stacks() override {
    StdBlock& b = *block_;
    return {{"stack", [&b](const void* in, void* o, Stream st) { b.forward(in, o, st); }}};
  }

  std::string title(const std::string& ops) const override {
    const StdPlan& p = block_->plan();
    return fmt::format("layerbench-moe: {} — standard expert-parallel block, EP {}, {} tokens/rank (global {}), {} local "
                       "experts, {}",
                       c_.model.name, p.world, p.tokens, p.global_tokens, p.experts_local, ops);
  }
  std::string ops_text() override { return block_->dense().describe(); }
  nlohmann::json params() const override {
    return {{"ep", block_->plan().world}, {"tokens_local", block_->plan().tokens}};
  }
  nlohmann::json config_json() const override {
    const StdPlan& p = block_->plan();
    return {{"block", "standard"}, {"model", to_json(c_.model)}, {"tokens", c_.tokens}, {"split_sizes", p.splits},
            {"ep", p.world}, {"dispatch", fp8() ? "fp8" : block_->act_bytes() == 2 ? "bf16" : "fp32"}};
  }
  std::int64_t tokens_per_rank() const override { return block_->plan().tokens; }
  std::string expert_component() const override { return "expert_compute"; }

  void derived_lines(const std::vector<reports::Measurement>& results, nlohmann::json& derived,
                     std::vector<std::string>& notes) override {
    double comm = 0, layer_ms = stats::nan_value, shared = stats::nan_value;
    for (const auto& m : results) {
      if (m.role == Role::communication) comm += median_ms(m);
      if (m.name == "whole_layer") layer_ms = median_ms(m);
      if (m.name == "shared_experts") shared = median_ms(m);
    }
    derived["communication_ms_per_layer"] = comm;
    std::string line = fmt::format("communication inside the block (parts with role communication): {} = {} of the layer",
                                   reports::fmt_time(comm),
                                   reports::fmt_share(layer_ms > 0 ? comm / layer_ms : stats::nan_value));
    if (std::isfinite(shared))
      line += fmt::format("; the shared experts ({}) could hide up to {} of it per layer", reports::fmt_time(shared),
                          reports::fmt_time(std::min(shared, comm)));
    notes.push_back(line);
  }

 private:
  bool fp8() const { return block_->plan().dispatch == DispatchPrecision::fp8; }
  // The experts' precision as run, and what the rate column compares them with.
  std::string experts_line() const {
    const StdBlock& b = *block_;
    const auto e = b.expert_precision(), s = b.shared_precision();
    if (e == ExpertPrecision::act && s == ExpertPrecision::act)
      return fmt::format("experts: routed and shared in the act type ({})", b.act_bytes() == 2 ? "bf16" : "fp32");
    return fmt::format("experts: routed {}, shared {} (e4m3 operands, fp32 scales; outputs in the act type); the rate "
                       "column is against the act-type dense reference GEMM, so FP8 parts can read above 100%",
                       to_string(e), to_string(s));
  }

  const RunConfig& c_;
  std::unique_ptr<StdBlock> block_;
  double bytes_[2] = {0, 0};
};

}  // namespace

void add_std_flags(CLI::App& app, RunConfig& c) {
  app.add_option("--dispatch", c.dispatch,
                 "standard block: what the dispatch all-to-allv carries: bf16 (the act type: bf16 on cuda, fp32 on "
                 "the host backend) or fp8 (e4m3 with one fp32 scale per 128 channels per token copy, DeepSeek-V3's "
                 "recipe as DeepEP dispatches; the combine stays in the act type)")
      ->check(CLI::IsMember({"bf16", "fp8"}))
      ->default_str("bf16");
}

std::unique_ptr<Family> make_standard_family(const RunConfig& c, Communicator& world) {
  return std::make_unique<StdFamily>(c, world);
}

}  // namespace layerbench::moe
