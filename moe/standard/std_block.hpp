#pragma once
// The standard expert-parallel MoE block (DeepEP's dispatch/combine, Megatron's and vLLM's EP)
// on one rank of the EP group: the experts sharded contiguously over the ranks, the tokens
// sharded over the same ranks (uneven splits allowed).
//   router              logits + top-k of every local token (any router family)
//   dispatch_permute    routed token copies read back, grouped by destination rank (by expert)
//   ep_counts_exchange  per-expert copy counts to every destination (all-to-all of int64),
//                       read back to size the dispatch: the metadata exchange of standard EP
//   ep_dispatch         all-to-allv of the token copies
//   expert_compute      rows reordered expert-major, gate/up GEMM, activation, down GEMM per
//                       local expert (experts with no token are skipped), rows reordered back
//   ep_combine          all-to-allv of the expert outputs back to the token owners
//   weighted_sum        out = sum_j w_j * y_j per token (fp32, j order)
//   shared_experts      the shared MLP (count x size) with its optional sigmoid gate
// Activations are the backend's act type; the input is the block's (normalised) input.
#include "collectives/communicator.hpp"
#include "moe/layer_interface.hpp"
#include "moe/config/model.hpp"
#include "moe/standard/std_ops.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace layerbench::moe {

struct StdPlan {
  int rank = 0, world = 1;
  std::vector<std::int64_t> splits;  // tokens per rank
  std::int64_t tokens = 0, token0 = 0, global_tokens = 0;
  std::int64_t experts_local = 0, expert0 = 0;
};
// UsageError when the experts do not divide over the ranks.
StdPlan make_std_plan(const Model& m, int rank, int world, const std::vector<std::int64_t>& splits);

class StdBlock final : public LayerInterface {
 public:
  StdBlock(const Model& m, const StdPlan& plan, Communicator& ep, std::unique_ptr<StdOps> ops, std::uint64_t seed,
           int layer_index = 0);
  StdBlock(const StdBlock&) = delete;
  StdBlock& operator=(const StdBlock&) = delete;

  std::string kind() const override { return "standard"; }
  std::vector<Component> components() const override;
  void run_component(std::string_view name, Stream s) override;
  void forward(const void* x, void* out, Stream s) override;
  Buffer make_activation() const override;
  void fill_input(void* x, std::uint64_t seed, Stream s) override;
  std::size_t act_bytes() const override { return act_size_; }

  // The steps (each reads what the previous ones left).
  void set_input(const void* x) { x_ = x; }
  void route(Stream s);
  void dispatch_permute(Stream s);
  void counts_exchange(Stream s);
  void dispatch(Stream s);
  void experts(Stream s);
  void combine(Stream s);
  void weighted_sum(Stream s);
  void shared(Stream s);
  void finish(void* out, Stream s);

  const StdPlan& plan() const { return plan_; }
  const Model& model() const { return model_; }
  StdOps& ops() { return *ops_; }
  Communicator& ep() { return ep_; }
  // Routing of the last route(): ids and weights of the local tokens (host copies).
  std::vector<std::int32_t> routed_ids();
  std::vector<float> routed_weights();
  // Copies this rank sent / received in the last dispatch, and per local expert.
  std::int64_t sent_rows() const { return send_rows_; }
  std::int64_t received_rows() const { return recv_rows_; }
  const std::vector<std::int64_t>& local_expert_rows() const { return expert_rows_; }

 private:
  Buffer zeros(std::size_t bytes);
  void ensure(Buffer& b, std::size_t bytes);
  void fill_weights(std::uint64_t seed, Stream s);
  std::int64_t inter_shared() const { return model_.shared.intermediate(); }

  Model model_;
  StdPlan plan_;
  Communicator& ep_;
  std::unique_ptr<StdOps> ops_;
  DType act_;
  std::size_t act_size_;
  const void* x_ = nullptr;

  // Weights (act unless noted).
  Buffer w_router_;      // (E, H)
  Buffer bias_;          // fp32 (E): selection-only bias
  Buffer w13_;           // (El, 2I, H): rows [gate | up]
  Buffer w_down_;        // (El, H, I)
  Buffer w_s13_, w_s2_;  // shared: (2Is, H), (H, Is)
  Buffer w_sgate_;       // shared gate (1, H)

  // Activations and workspaces.
  Buffer logits_;                    // fp32 (N, E)
  Buffer idx_, weight_;              // int32 / fp32 (N, k)
  Buffer send_map_, slot_;           // int32 (S), (N, k)
  Buffer send_;                      // (S, H) copies grouped by destination, then expert
  Buffer counts_send_, counts_recv_; // int64 (E), (P * El)
  Buffer recv_;                      // (R, H)
  Buffer expert_map_;                // int32 (R): expert-major row -> received row
  Buffer xe_, gu_, act_buf_, ye_;    // (R, H), (R, 2I), (R, I), (R, H)
  Buffer y_recv_;                    // (R, H) outputs in the received order
  Buffer back_;                      // (S, H) outputs back in the send order
  Buffer routed_;                    // (N, H)
  Buffer s_gu_, s_act_, shared_out_; // (N, 2Is), (N, Is), (N, H)
  Buffer s_gate_;                    // fp32 (N)

  // Host plan of the last dispatch.
  std::vector<std::int64_t> expert_counts_;  // copies of local tokens per global expert
  std::vector<std::size_t> sc_, sd_, rc_, rd_;  // rows per rank (scaled to elements at use)
  std::vector<std::int64_t> recv_counts_;       // (P, El) from the exchange
  std::vector<std::int64_t> expert_rows_;       // received rows per local expert
  std::int64_t send_rows_ = 0, recv_rows_ = 0;
};

}  // namespace layerbench::moe
