// The MAGI-2 multi-head layer's component table (moe/layer_interface.hpp): every component with
// its role, parent, declared work and kernel path, and the dispatch from a name to its step.
#include "collectives/error.hpp"
#include "moe/magi2/layer.hpp"

#include <fmt/format.h>

namespace layerbench::moe {

namespace {
double gemm_flops(double m, double n, double k) { return 2.0 * m * n * k; }
}  // namespace

std::vector<Component> MoeLayer::components() const {
  using reports::Role;
  const Plan& p = plan_;
  const bool sp = p.layout == Layout::sp, cuda = act_ == DType::bf16;
  const double N = double(p.local_tokens), H = double(p.hidden), Hin = double(p.hidden_in_local);
  const double Il = double(p.inter_local), act_b = double(act_size_);
  const double a2a_bytes = N * double(p.heads_padded * p.d_head) * act_b;
  const double bus = double(p.world - 1) / p.world;  // nccl-tests' all-to-all factor
  const double assignments = double(p.moe_tokens * p.heads_valid * p.topk);
  const double expert_flops = assignments * gemm_flops(1, 3.0 * double(p.inter), double(p.d_head));
  const double shared_flops = gemm_flops(N, 4 * Il, H) + gemm_flops(N, H, 2 * Il);
  const std::string total = "whole_layer", routed = "routed_branch";
  const std::string gemm = cuda ? "cuBLAS bf16 GEMM" : "host fp32 loops";
  const std::string a2a = cuda ? "transpose kernel + NCCL all-to-allv" : "transpose loop + MPI all-to-allv";
  std::vector<Component> t;
  t.push_back({"pre_norm", Role::part, total, {}, false, cuda ? "rms_norm kernel per modality run" : gemm});
  t.push_back({"split_linear", Role::part, routed, {.flops = gemm_flops(N, Hin, H)}, false, gemm});
  // Not in the layer measured (reused split sizes); the per-layer-exchange path pays it.
  t.push_back({"seq_size_exchange", Role::probe, "", {.bytes = 8.0 * p.world, .bus_factor = bus}, true,
               "scalar all_gather + host read"});
  if (sp) t.push_back({"ep_dispatch", Role::communication, routed, {.bytes = a2a_bytes, .bus_factor = bus}, false, a2a});
  t.push_back({"routing", Role::part, routed,
               {.flops = gemm_flops(double(p.moe_tokens * p.heads_valid), double(p.experts), double(p.d_head))}, false,
               ops_->route_path(p.experts, p.d_head, p.topk)});
  t.push_back({"local_expert_compute", Role::part, routed, {.flops = expert_flops}, false, ops_->describe()});
  if (sp) t.push_back({"ep_undispatch", Role::communication, routed, {.bytes = a2a_bytes, .bus_factor = bus}, false, a2a});
  t.push_back({"merge_linear", Role::part, routed, {.flops = gemm_flops(N, H, Hin)}, false, gemm});
  if (!sp)
    t.push_back({"tp_reduction", Role::communication, routed,
                 {.bytes = N * H * act_b, .bus_factor = 2.0 * (p.world - 1) / p.world}, false,
                 cuda ? "NCCL all-reduce" : "MPI all-reduce"});
  t.push_back({"shared_branch", Role::part, total, {.flops = shared_flops}, false,
               gemm + (cuda ? " + SwiGLU7 kernel" : "") + (sp ? "" : " + two all-reduces")});
  t.push_back({"routed_branch", Role::part, total, {}, false, ""});
  t.push_back({total, Role::total, "", {}, false, ""});
  return t;
}

void MoeLayer::run_component(std::string_view name, Stream s) {
  const auto splits = std::span<const std::int64_t>(plan_.splits);
  if (name == "pre_norm") {
    LB_CHECK(last_x_ != nullptr, "pre_norm runs on the input of a previous forward");
    pre_norm(last_x_, s);
  } else if (name == "split_linear") split_linear(s);
  else if (name == "seq_size_exchange") (void)exchange_sizes();
  else if (name == "ep_dispatch") ep_dispatch(splits, s);
  else if (name == "routing") route(s);
  else if (name == "local_expert_compute") experts(s);
  else if (name == "ep_undispatch") ep_undispatch(splits, s);
  else if (name == "merge_linear") merge_linear(s);
  else if (name == "tp_reduction") tp_reduction(s);
  else if (name == "shared_branch") shared_branch(s);
  else if (name == "routed_branch") routed_branch(splits, s);
  else throw Error(fmt::format("the MAGI-2 layer has no component '{}'", name));
}

void MoeLayer::forward(const void* x, void* out, Stream s) {
  forward(x, out, std::span<const std::int64_t>(plan_.splits), s);
}

}  // namespace layerbench::moe
