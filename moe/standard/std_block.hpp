#pragma once
// The standard expert-parallel MoE block (DeepEP's dispatch/combine, Megatron's and vLLM's EP)
// on one rank of the EP group: the experts sharded contiguously over the ranks, the tokens
// sharded over the same ranks (uneven splits allowed).
//   router              logits + top-k of every local token (any router family)
//   dispatch_permute    routed token copies read back, grouped by destination rank (by expert)
//   ep_counts_exchange  per-expert copy counts to every destination (all-to-all of int64),
//                       read back to size the dispatch: the metadata exchange of standard EP
//   ep_dispatch         all-to-allv of the token copies (in the act type, or FP8: see below)
//   expert_compute      rows reordered expert-major, gate/up GEMM, activation, down GEMM per
//                       local expert (experts with no token are skipped), rows reordered back
//   ep_combine          all-to-allv of the expert outputs back to the token owners
//   weighted_sum        out = sum_j w_j * y_j per token (fp32, j order)
//   shared_experts      the shared MLP (count x size) with its optional sigmoid gate
// Activations are the backend's act type; the input is the block's (normalised) input.
//
// FP8 dispatch (StdPlan::dispatch = DispatchPrecision::fp8; DeepSeek-V3's low-precision
// communication, DeepEP's FP8 dispatch): dispatch_permute quantizes the copies as it gathers them
// into packed rows of moe/standard/fp8_dispatch.hpp (hidden e4m3 bytes + one fp32 scale per 128 channels,
// the last group partial when hidden is not a multiple of 128); ep_dispatch moves the packed
// rows in one all-to-allv (a copy's data and its scales in one message, as DeepEP's token
// message: two collectives would pay the latency twice for 4 bytes per 128 channels), carried as
// 2-byte words (the communicator has no byte type; a copy is exact), so hidden must be even;
// expert_compute dequantizes them to the act type as it reorders them expert-major (the received
// packed rows stay in received_fp8() for experts that read FP8 directly). The combine stays in
// the act type (bf16 on CUDA, fp32 on the host), as DeepEP's BF16 combine.
//
// FP8 experts (StdPlan::experts / shared: Model::precision; moe/standard/std_fp8_experts.hpp): the
// weights are filled in the act type as always and quantized once at construction; expert_compute
// (and shared_experts, as one expert over every token) quantizes its rows, runs the FP8 grouped
// GEMMs and writes act-type outputs. The rest of the block is unchanged.
//
// At EP 1 on CUDA, where the shape's expert path takes device counts (the grouped wgmma kernels),
// forward() runs the device path instead (graph_blocker() says where not, and why): the
// permutation and the per-expert counts on the device, no exchange (one rank: the dispatch and
// the combine are no copies at all, the rows are gathered expert-major straight from the input
// and the weighted sum reads the expert outputs where they are), the expert MLPs from the device
// counts -- the host path's results bit for bit, with no host synchronisation inside the layer,
// so it can be captured in a CUDA graph (moe/standard/std_block_device.cpp).
#include "collectives/communicator.hpp"
#include "moe/layer_interface.hpp"
#include "moe/config/model.hpp"
#include "moe/standard/std_fp8_experts.hpp"
#include "moe/standard/std_ops.hpp"

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace layerbench::moe {

// What the dispatch all-to-allv carries: the act type, or FP8 rows (above).
enum class DispatchPrecision { act, fp8 };
std::string_view to_string(DispatchPrecision d);  // "act" | "fp8"

struct StdPlan {
  int rank = 0, world = 1;
  std::vector<std::int64_t> splits;  // tokens per rank
  std::int64_t tokens = 0, token0 = 0, global_tokens = 0;
  std::int64_t experts_local = 0, expert0 = 0;
  DispatchPrecision dispatch = DispatchPrecision::act;  // set after make_std_plan
  ExpertPrecision experts = ExpertPrecision::act;       // the routed experts (make_std_plan: the model's)
  ExpertPrecision shared = ExpertPrecision::act;        // the shared experts (make_std_plan: the model's)
};
// UsageError when the experts do not divide over the ranks. The experts' precision is the model's
// (Model::precision); the dispatch's is a flag, set after.
StdPlan make_std_plan(const Model& m, int rank, int world, const std::vector<std::int64_t>& splits);
// UsageError when the model cannot be dispatched at that precision (FP8: an odd hidden size).
void check_dispatch(const Model& m, DispatchPrecision d);

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
  Communicator& ep() override { return ep_; }
  DenseOps& dense() override { return ops_->dense(); }
  // Every component of the table but the total may be replicated, left out and delayed: each step
  // reads only what earlier steps left and overwrites its own outputs (host plan included), so k
  // copies leave the result of one, and a step left out keeps the output (and plan) it last wrote.
  void set_copies(const std::string& component, int k) override;
  void set_delay_hook(DelayHook* hook) override { hook_ = hook; }
  // The counts read back in dispatch_permute and the exchange's read-back and synchronisation.
  std::int64_t host_syncs() const override { return host_syncs_; }
  double expert_tiles() override;

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
  // The component names of the table, in order (the total excluded).
  static bool has_component(std::string_view name);
  const Model& model() const { return model_; }
  StdOps& ops() { return *ops_; }
  // Routing of the last route(): ids and weights of the local tokens (host copies).
  std::vector<std::int32_t> routed_ids();
  std::vector<float> routed_weights();
  // Copies this rank sent / received in the last dispatch, and per local expert.
  std::int64_t sent_rows() const { return send_rows_; }
  std::int64_t received_rows() const { return recv_rows_; }
  // (after the device path: its counts, read back here on demand, outside the forward)
  const std::vector<std::int64_t>& local_expert_rows() const;


  // --- The device path (EP 1 on CUDA; moe/standard/std_block_device.cpp) ---
  // "" where forward() runs the device path, else why it runs the host path (the backend, the EP
  // size, the device or the shape's expert path), decided once at construction (everything it reads
  // is fixed by then), so the timed steps do not re-derive it.
  const std::string& graph_blocker() const { return blocker_; }
  // Off: forward() runs the host path even where the device path applies (on by default).
  void set_device_path(bool on) { device_on_ = on; }
  bool device_path() const { return device_on_ && blocker_.empty(); }
  // Its steps: after route(), the counts and the expert-major rows (device_permute), the expert
  // MLPs (device_experts); then weighted_sum(), shared() and finish() as on the host path.
  void device_permute(Stream s);
  void device_experts(Stream s);
  // Bytes of one token copy in the dispatch (hidden x act size, or fp8::dispatch_row_bytes) and
  // in the combine (hidden x act size); bytes this rank sent in the last dispatch and combine
  // (the component table's ep_dispatch and ep_combine bytes).
  DispatchPrecision dispatch_precision() const { return plan_.dispatch; }
  ExpertPrecision expert_precision() const { return plan_.experts; }
  ExpertPrecision shared_precision() const { return inter_shared() > 0 ? plan_.shared : ExpertPrecision::act; }
  std::int64_t dispatch_row_bytes() const;
  std::int64_t combine_row_bytes() const;
  std::int64_t dispatch_bytes() const { return send_rows_ * dispatch_row_bytes(); }
  std::int64_t combine_bytes() const { return recv_rows_ * combine_row_bytes(); }
  // FP8 dispatch: the received packed rows of the last dispatch, in received order (rank-major,
  // then expert; the expert-major order is the one expert_compute builds), received_rows() of
  // dispatch_row_bytes() each; nullptr with the act-type dispatch.
  const std::uint8_t* received_fp8() const {
    return plan_.dispatch == DispatchPrecision::fp8 ? recv_fp8_.as<std::uint8_t>() : nullptr;
  }

 private:
  Buffer zeros(std::size_t bytes);
  void ensure(Buffer& b, std::size_t bytes);
  void fill_weights(std::uint64_t seed, Stream s);
  void make_fp8_experts(Stream s);  // FP8 experts: quantize the weights once
  std::int64_t inter_shared() const { return model_.shared.intermediate(); }
  // Runs `body` as component `name`: its delay edges around set_copies' number of copies.
  template <class F>
  void step(std::string_view name, Stream s, F&& body) {
    if (hook_) [[unlikely]] hook_->at(name, Edge::begin, s);
    for (int c = name == copied_ ? copies_ : 1; c > 0; --c) body();
    if (hook_) [[unlikely]] hook_->at(name, Edge::end, s);
  }
  std::string find_graph_blocker() const;  // graph_blocker()'s reason, derived
  void prepare_device_path();  // its workspaces, once (allocates: outside a capture)
  // The host path's table as the device path runs it: no exchange, no host clock.
  std::vector<Component> device_table(std::vector<Component> host) const;
  void run_device_component(std::string_view name, Stream s);

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
  std::unique_ptr<Fp8Experts> fp8_experts_, fp8_shared_;  // FP8 experts: their quantized weights

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
  Buffer send_fp8_, recv_fp8_;       // FP8 dispatch: packed rows (S), (R) (moe/standard/fp8_dispatch.hpp)
  Buffer back_;                      // (S, H) outputs back in the send order
  Buffer routed_;                    // (N, H)
  Buffer s_gu_, s_act_, shared_out_; // (N, 2Is), (N, Is), (N, H)
  Buffer s_gate_;                    // fp32 (N)

  // Host plan of the last dispatch.
  std::vector<std::int64_t> expert_counts_;  // copies of local tokens per global expert
  std::vector<std::size_t> sc_, sd_, rc_, rd_;  // rows per rank (scaled to elements at use)
  std::vector<std::int64_t> recv_counts_;       // (P, El) from the exchange
  mutable std::vector<std::int64_t> expert_rows_;  // received rows per local expert
  std::int64_t send_rows_ = 0, recv_rows_ = 0;

  DelayHook* hook_ = nullptr;
  std::string copied_;  // the component run copies_ times per call (set_copies)
  int copies_ = 1;
  std::int64_t host_syncs_ = 0;

  // The device path: per-expert counts (int32 (E)) on the device; whether its workspaces exist.
  std::string blocker_;  // graph_blocker(), set in the constructor
  bool device_on_ = true, device_ready_ = false;
  bool on_device_ = false;  // the last permutation ran on the device (weighted_sum reads ye_)
  mutable bool device_rows_read_ = false;  // expert_rows_ holds the device path's last counts
  Buffer counts_dev_;
};

}  // namespace layerbench::moe
