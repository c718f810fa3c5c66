#pragma once
// One rank's sequence-parallel attention forward over the (U, R, A) grid (topology.hpp), split
// into the components that layerbench times separately:
//   length_exchange     UAA only: scalar all_gather of the local length + host read (Ulysses group)
//   pad_pack            head padding and layout copies (input packs, output unpacks)
//   qkv_all_to_all      Ulysses all-to-all of Q, K, V (scatter heads, gather sequence)
//   kv_all_gather       K and V all-gather along the sequence in the strided AllGather group
//   ring_p2p            Ring only: the R-1 K/V block transfers to the next ring rank, alone
//   attention           local Q against the keys of every Ring step (plan.hpp), partial outputs
//                       kept and merged once by LSE where a query row meets several calls; timed without the
//                       Ring transfers (forward() overlaps them: the next block travels while
//                       the current one is computed)
//   reverse_all_to_all  O back to [B, Sl, H, D]; joint rows head-gathered over the Ulysses group
// forward() runs them in order and is what `total` times.
#include "attention/kernels.hpp"
#include "attention/plan.hpp"
#include "attention/topology.hpp"
#include "attention/workload.hpp"
#include "collectives/communicator.hpp"
#include "collectives/delay.hpp"

#include <cstdint>
#include <vector>

namespace layerbench::attention {

// The three groups of a rank: Ulysses (size U, contiguous), AllGather (size A, stride U), Ring
// (size R, stride U*A).
struct SpGroups {
  Communicator& ulysses;
  Communicator& allgather;
  Communicator& ring;
};

class SpAttention {
 public:
  SpAttention(const SpGroups& groups, const Topology& t, const Problem& p, Kernels& kernels, int sp_rank);

  // ---- inputs / outputs (backend memory) -------------------------------------------------
  void* input(int i) const { return in_[i].data(); }        // Q [B, Sl, H, D]; K, V [B, Sl, Hkv, D]
  void* joint_input(int i) const { return joint_[i].data(); }  // [B, Lt, H|Hkv, D], replicated
  void* cached_input(int i) const { return cached_[i].data(); }  // K, V [B, Lc, Hkv, D], replicated
  const void* output() const { return out_.data(); }           // [B, Sl, H, D]
  const void* joint_output() const { return joint_out_.data(); }  // [B, Lt, H, D]
  long long local_seq() const { return shard_len_; }           // Sl
  long long shard_offset() const { return shard_off_; }         // first global row of the shard

  // ---- components (enqueue on s) -----------------------------------------------------------
  void length_exchange();  // no-op in strict mode
  void pack_inputs(Stream s);
  void qkv_all_to_all(Stream s);
  void kv_all_gather(Stream s);
  void ring_p2p(Stream s);  // the Ring transfers alone (R-1 steps), no compute
  void attention(Stream s, bool ring_transfers = false);
  void reverse_all_to_all(Stream s);
  void unpack_outputs(Stream s);
  void forward(Stream s);
  // Builds every kernel plan the forward uses (outside timed regions).
  void prepare();

  // What-if profiles: `hook` (not owned; nullptr = none) is called at the begin and end edge of
  // every component, under the names of hook_points() (pad_pack: the input packs and the output
  // unpacks, two instances per forward).
  void set_delay_hook(DelayHook* hook) { hook_ = hook; }
  static const std::vector<std::string>& hook_points();

  // ---- accounting -------------------------------------------------------------------------
  AttentionShape attention_shape() const;  // local Q rows x every key this rank sees, local heads
  double attention_flops() const;          // 4 x sum over calls of nq x nk x heads x D (x requests)
  const LocalPlan& plan() const { return plan_; }
  int padded_heads() const { return hpad_; }
  int slice_heads() const { return hl_; }
  int slice_kv_heads() const { return hkvl_; }
  long long region() const { return region_; }      // S / (R*A)
  long long superblock() const { return layout_.superblock; }  // A * region
  bool has_length_exchange() const { return topo_.uaa && topo_.ulysses > 1; }

 private:
  std::size_t elems(long long rows, int heads) const {
    return static_cast<std::size_t>(rows * prob_.batch * heads * prob_.head_dim);
  }
  unsigned char* rows_at(const Buffer& b, long long rows, int heads) const;
  void set_counts(const std::vector<long long>& seq_lens);
  LocalGeometry geometry() const;
  void ring_transfer(int step, Stream s, std::vector<std::unique_ptr<Handle>>& pending);
  const void* ring_block(int i, int step) const;
  void edge(std::string_view component, Edge e, Stream s) {
    if (hook_) [[unlikely]] hook_->at(component, e, s);
  }

  DelayHook* hook_ = nullptr;

  Communicator& inner_;  // Ulysses
  Communicator& outer_;  // AllGather
  Communicator& ring_;   // Ring
  Topology topo_;
  Problem prob_;
  Kernels& k_;
  int hpad_, hl_, hkvl_;
  long long region_, shard_len_, shard_off_;
  long long qi0_, qj0_, ki0_, kj0_;  // image / joint rows in the query and key buffers
  RankLayout layout_;
  LocalPlan plan_;
  // Plain AllGather-KV with B = 1, no joint or cached tokens, no Ring and direct calls: BSHD
  // and sequence-major coincide, so the inputs are used in place and the kernel writes the
  // output directly (no copies at all).
  bool zero_copy_;
  std::vector<long long> seq_lens_;  // shard lengths of this Ulysses group (exchanged under UAA)
  std::vector<std::size_t> send_counts_[2], send_displs_[2], recv_counts_[2], recv_displs_[2];  // [Q, KV]

  Buffer in_[3];         // Q, K, V shard            [B, Sl, H|Hkv, D]
  Buffer joint_[3];      // joint Q, K, V             [B, Lt, H|Hkv, D]
  Buffer cached_[2];     // cached K, V               [B, Lc, Hkv, D]
  Buffer send_[3];       // packed for the all-to-all [U, Sl, B, Hl|Hkvl, D]
  Buffer q_full_;        // [Lq, B, Hl, D]
  Buffer kv_region_[2];  // A > 1: K, V after the all-to-all [R, B, Hkvl, D]
  Buffer kv_full_[2];    // [Lc + Lt + A*R, B, Hkvl, D]
  Buffer ring_buf_[2][2];  // R > 1: received K, V blocks, double-buffered [A*R, B, Hkvl, D]
  Buffer o_full_;        // [Lq, B, Hl, D]
  Buffer o_part_, lse_part_;  // LSE merge (not direct): [slots, Lq, B, Hl, D] partials, their LSEs
  Buffer o_recv_;        // [U, Sl, B, Hl, D]
  Buffer joint_gather_;  // [U, Lt, B, Hl, D]
  Buffer out_;           // [B, Sl, H, D]
  Buffer joint_out_;     // [B, Lt, H, D]
};

}  // namespace layerbench::attention
