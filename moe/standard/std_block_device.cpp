// The standard block's device path (moe/standard/std_block.hpp): at EP 1 on CUDA, the layer with no
// host synchronisation inside, so it can be captured in a CUDA graph.
//   route            as on the host path (cuBLAS logits, the router kernel)
//   device_permute   per-expert counts (a histogram of the ids) and the copies grouped by expert,
//                    token order inside (a stable radix sort by expert id: StdOps::permute_on_device),
//                    then the rows gathered expert-major straight from the input
//   device_experts   the grouped wgmma kernels with the tile list built on the device from the
//                    counts (StdOps::expert_mlp_on_device)
//   weighted_sum, shared_experts, finish as on the host path
// One rank holds every expert, so the host path's counts exchange, dispatch and combine move
// nothing between ranks: here they are no copies at all (the expert MLPs read the gathered rows
// and the weighted sum reads their outputs in place). The permutation is the host path's, and the
// expert kernels see the same rows and counts, so the output is the host path's bit for bit.
#include "collectives/error.hpp"
#include "moe/standard/std_block.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

namespace layerbench::moe {

std::string StdOps::device_schedule_blocker(std::int64_t, std::int64_t, std::int64_t) const {
  return "the host backend runs the layer on the host";
}
void StdOps::reserve_device_schedule(std::int64_t, std::int64_t, std::int64_t, std::int64_t) {
  throw Error("the device-side schedule runs on the CUDA backend only");
}
void StdOps::permute_on_device(const std::int32_t*, std::int64_t, std::int64_t, std::int64_t, std::int32_t*,
                               std::int32_t*, std::int32_t*, Stream) {
  throw Error("the device-side schedule runs on the CUDA backend only");
}
void StdOps::expert_mlp_on_device(const void*, const void*, const void*, void*, void*, const std::int32_t*,
                                  std::int64_t, std::int64_t, std::int64_t, std::int64_t, const ActivationSpec&,
                                  Stream) {
  throw Error("the device-side schedule runs on the CUDA backend only");
}

std::string StdBlock::find_graph_blocker() const {
  if (ep_.backend() != Backend::cuda) return "the host backend runs the layer on the host";
  if (plan_.world > 1)
    return fmt::format(
        "at EP {} the dispatch is sized on the host: every rank's per-expert counts are exchanged and read back to "
        "size the all-to-allv and to order the received rows expert-major, so a graph could hold one routing only",
        plan_.world);
  if (plan_.dispatch == DispatchPrecision::fp8)
    return "the FP8 dispatch quantizes the copies in the host-planned permutation (the device path has no "
           "quantizing gather yet)";
  if (plan_.tokens * model_.topk >= INT_MAX)
    return fmt::format("{} routed copies: the device permutation counts copies in 32 bits", plan_.tokens * model_.topk);
  // FP8 experts take device counts where the grouped kernels run them (the kernels build the tile
  // lists); the cuBLASLt fallback sizes its GEMMs from host counts.
  if (plan_.experts != ExpertPrecision::act) {
    if (!fp8_experts_ || fp8_experts_->takes_device_counts()) return "";
    return "the FP8 experts run the per-expert cuBLASLt fallback (no compute capability 9.0 kernels on this device), "
           "whose GEMMs are sized by host counts";
  }
  return ops_->device_schedule_blocker(model_.hidden, model_.moe_intermediate, plan_.experts_local);
}

void StdBlock::prepare_device_path() {
  if (device_ready_) return;
  const std::int64_t S = plan_.tokens * model_.topk, H = model_.hidden, I = model_.moe_intermediate;
  ops_->reserve_device_schedule(S, plan_.experts_local, H, I);
  counts_dev_ = zeros(static_cast<std::size_t>(plan_.experts_local) * 4);
  const auto R = static_cast<std::size_t>(S);
  ensure(xe_, R * static_cast<std::size_t>(H) * act_size_);
  ensure(ye_, R * static_cast<std::size_t>(H) * act_size_);
  ensure(act_buf_, R * static_cast<std::size_t>(I) * act_size_);
  device_ready_ = true;
}

void StdBlock::device_permute(Stream s) {
  LB_CHECK(device_path(), "the device path runs where graph_blocker() is empty: " + graph_blocker());
  prepare_device_path();
  const std::int64_t N = plan_.tokens, k = model_.topk, H = model_.hidden;
  send_rows_ = recv_rows_ = N * k;  // one rank: every copy stays
  on_device_ = true;
  device_rows_read_ = false;
  ops_->permute_on_device(idx_.as<std::int32_t>(), N, k, plan_.experts_local, counts_dev_.as<std::int32_t>(),
                          slot_.as<std::int32_t>(), send_map_.as<std::int32_t>(), s);
  ops_->gather_rows(x_, send_map_.as<std::int32_t>(), xe_.data(), N * k, H, s);
}

void StdBlock::device_experts(Stream s) {
  LB_CHECK(device_ready_ && on_device_, "device_experts runs after device_permute");
  if (fp8_experts_) {
    fp8_experts_->mlp_on_device(xe_.data(), act_buf_.data(), ye_.data(), counts_dev_.as<std::int32_t>(), recv_rows_, s);
    return;
  }
  ops_->expert_mlp_on_device(xe_.data(), w13_.data(), w_down_.data(), act_buf_.data(), ye_.data(),
                             counts_dev_.as<std::int32_t>(), plan_.experts_local, recv_rows_, model_.hidden,
                             model_.moe_intermediate, model_.activation, s);
}

const std::vector<std::int64_t>& StdBlock::local_expert_rows() const {
  if (on_device_ && !device_rows_read_) {  // a read-back outside the forward (not a host sync of it)
    const auto c = ep_.device().download<std::int32_t>(counts_dev_.data(), static_cast<std::size_t>(plan_.experts_local));
    expert_rows_.assign(c.begin(), c.end());
    device_rows_read_ = true;
  }
  return expert_rows_;
}

std::vector<Component> StdBlock::device_table(std::vector<Component> host) const {
  std::vector<Component> t;
  for (auto& c : host) {
    if (c.role == reports::Role::communication) continue;  // one rank: nothing is exchanged
    c.host_clock = false;
    if (c.name == "dispatch_permute")
      c.kernel_path = "on the device: histogram of the ids, stable radix sort of the copies by expert (cub), "
                      "placement kernel, row gather expert-major (nothing read back; EP 1: no exchange)";
    else if (c.name == "expert_compute" && fp8_experts_)
      c.kernel_path = fp8_experts_->path() + "; from the device counts (EP 1: no exchange)";
    else if (c.name == "expert_compute")
      c.kernel_path = "tile list built on the device from the device counts, one persistent TMA + wgmma grouped GEMM "
                      "per projection (the activation in the gate/up epilogue); EP 1: the rows are read and written "
                      "in place, no exchange";
    t.push_back(std::move(c));
  }
  return t;
}

void StdBlock::run_device_component(std::string_view name, Stream s) {
  if (name == "dispatch_permute")
    device_permute(s);
  else if (name == "expert_compute")
    device_experts(s);
  else
    throw Error(fmt::format("the standard MoE block at EP 1 on its device path has no component '{}' (one rank: "
                            "nothing is exchanged)",
                            name));
}

}  // namespace layerbench::moe
