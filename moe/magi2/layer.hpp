#pragma once
// One MAGI-2 multi-head MoE layer on one rank of the EP group, step by step, so that every
// component can be run (and timed) on its own over persistent buffers.
//   SP: tokens sharded (uneven splits), heads sharded by a head all-to-all (Ulysses on heads).
//   TP: tokens replicated, heads sharded by column-parallel split_linear; row-parallel merge
//       and shared fc2s each end in an all-reduce.
// Activations are the backend's act type (fp32 host, bf16 cuda). Shapes per rank:
//   N = local tokens, T = tokens the local experts see, Hl = local heads, dh = d_head.
#include "collectives/communicator.hpp"
#include "collectives/delay.hpp"
#include "moe/magi2/config.hpp"
#include "moe/layer_interface.hpp"
#include "moe/magi2/ops.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace layerbench::moe {

class MoeLayer final : public LayerInterface {
 public:
  // Allocates and fills every weight with its seeded values (layer `layer_index`).
  MoeLayer(const Plan& plan, Communicator& ep, std::unique_ptr<Ops> ops, std::uint64_t seed,
           int layer_index = 0);
  MoeLayer(const MoeLayer&) = delete;
  MoeLayer& operator=(const MoeLayer&) = delete;

  const Plan& plan() const { return plan_; }
  Ops& ops() { return *ops_; }
  Communicator& ep() { return ep_; }
  std::size_t act_bytes() const override { return act_size_; }

  // ---- the layer interface (moe/magi2/layer_table.cpp): the component table, one component on its
  // own (pre_norm reads the last forward's input), the forward with the plan's split sizes.
  std::string kind() const override { return "magi2_multi_head"; }
  std::vector<Component> components() const override;
  void run_component(std::string_view name, Stream s) override;
  void forward(const void* x, void* out, Stream s) override;

  // Buffers of (N, hidden) activations for inputs / outputs of the layer.
  Buffer make_activation() const override;
  // Fills `x` (N, hidden) with this rank's rows of the seeded global input.
  void fill_input(void* x, std::uint64_t seed, Stream s) override;

  // ---- steps (each reads the previous step's buffer) -----------------------------------
  void pre_norm(const void* x, Stream s);   // x -> normed (N, hidden)
  void split_linear(Stream s);              // normed -> heads (N, Hpad*dh) | TP (N, Hl*dh)
  std::vector<std::int64_t> exchange_sizes();  // legacy scalar all_gather + host read
  void ep_dispatch(std::span<const std::int64_t> splits, Stream s);  // heads -> moe_in (T, Hl, dh)
  void route(Stream s);                     // moe_in -> top-k (kept in ops)
  void experts(Stream s);                   // moe_in + top-k -> moe_out (T, Hl, dh)
  void ep_undispatch(std::span<const std::int64_t> splits, Stream s);  // moe_out -> merge_in
  void merge_linear(Stream s);              // merge_in -> routed (N, hidden); TP: -> partial
  void tp_reduction(Stream s);              // TP: all-reduce partial -> routed (no-op under SP)
  void shared_branch(Stream s);             // normed -> shared (N, hidden) (TP: reduced)
  void finish(void* out, Stream s);         // out = routed + shared

  // ---- composites ------------------------------------------------------------------------
  // split_linear .. merge_linear (+ TP reduction). `splits` empty: the legacy path exchanges
  // the sizes itself (SP only); otherwise the caller's request-scoped split is reused.
  void routed_branch(std::optional<std::span<const std::int64_t>> splits, Stream s);
  void forward(const void* x, void* out, std::optional<std::span<const std::int64_t>> splits,
               Stream s);
  // The overlap probe (SP): dispatch -> local -> undispatch -> shared, serialized or with the
  // dispatch all-to-all on the comm stream under the shared branch.
  void branches(std::span<const std::int64_t> splits, bool overlapped, Stream s);

  // What-if profiles: `hook` (not owned; nullptr = none) is called at the begin and end edge
  // of every component, under the component names of hook_points().
  void set_delay_hook(DelayHook* hook) { hook_ = hook; }
  static const std::vector<std::string>& hook_points();

  // Replication what-if and removal A/B: every call of `component`'s step runs its body k times
  // (0: skipped; its output buffer keeps the last value written). One component at a time;
  // set_copies("", 1) restores the layer. Each step reads only its inputs and overwrites its
  // outputs, so k >= 1 copies leave the same result as one (tests/moe: checked bit for bit).
  // Every step writes outputs apart from its inputs (tp_reduction too), so a step left out keeps
  // the output it last wrote: in a stack whose layers all take the same input that is exactly what
  // it would have written, and the removal takes away its own work only (tests/moe).
  // replicable(): the components whose copies are priced by replication (not tp_reduction, a
  // collective priced by delay; not the sequence-size exchange, which returns the sizes the rest
  // needs); skippable(): those that can be left out of the stack (every component but the exchange).
  void set_copies(const std::string& component, int k);
  static bool replicable(const std::string& component);
  static bool skippable(const std::string& component);

  RoutedArgs routed_args();
  std::int64_t expert_assignments() const;  // (token, head, k) triples routed on this rank
  const void* output_routed() const { return routed_.data(); }
  const void* output_shared() const { return shared_.data(); }

 private:
  void alloc_weights();
  void fill_weights(std::uint64_t seed, Stream s);
  Buffer zeros(std::size_t bytes);
  void a2a_counts(std::span<const std::int64_t> splits);
  void shared_branch_body(Stream s);

  void edge(std::string_view component, Edge e, Stream s) {
    if (hook_) [[unlikely]] hook_->at(component, e, s);
  }
  int copies(std::string_view component) const { return component == copied_ ? copies_ : 1; }

  DelayHook* hook_ = nullptr;
  std::string copied_;  // the component run copies_ times per call (set_copies)
  int copies_ = 1;
  const void* last_x_ = nullptr;  // the input of the last forward (run_component("pre_norm"))
  Plan plan_;
  Communicator& ep_;
  std::unique_ptr<Ops> ops_;
  DType act_;
  std::size_t act_size_;
  std::vector<Segment> segs_;  // modality runs of the local tokens

  // Weights (act unless noted).
  Buffer norm_w_;       // fp32 (3, hidden)
  Buffer w_split_;      // (hidden_in_local, hidden)       SP: full; TP: row slice
  Buffer w_merge_;      // (hidden, hidden_in_local)       TP: column slice
  Buffer gate_, bias_;  // fp32 (Hl, E, dh), fp32 (Hl, E)
  Buffer w13_;          // (Hl*E, dh, 2I)
  Buffer w_down_;       // (Hl*E, I, dh)
  Buffer fc1_, mfc1_;   // (2Il, hidden), (3, 2Il, hidden)
  Buffer fc2_, mfc2_;   // (hidden, Il), (3, hidden, Il)

  // Activations.
  Buffer normed_;    // (N, hidden)
  Buffer heads_;     // (N, Hpad*dh) SP (padded heads stay zero) | (N, Hl*dh) TP
  Buffer send_;      // (P, N, Hl*dh) SP
  Buffer moe_in_;    // (T, Hl, dh) SP; TP uses heads_
  Buffer moe_out_;   // (T, Hl, dh)  padded heads stay zero
  Buffer back_;      // (P, N, Hl*dh) SP
  Buffer merge_in_;  // (N, Hpad*dh) SP; TP uses moe_out_
  Buffer routed_;    // (N, hidden)
  Buffer partial_;   // (N, hidden) TP: merge's partial sums (tp_reduction reduces them into routed_)
  Buffer fc1cat_;    // (N, 4Il)  [fc1 | modality fc1], gate/up packed even/odd
  Buffer act_buf_;   // (N, 2Il)
  Buffer shared_;    // (N, hidden)
  Buffer shared2_;   // (N, hidden) TP: the modality fc2's own all-reduce

  std::vector<std::size_t> sc_, sd_, rc_, rd_;  // dispatch counts / displacements (elements)
};

}  // namespace layerbench::moe
