#pragma once
// One rank's sequence-parallel attention forward (Ulysses x AllGather-KV), split into the
// components that layerbench times separately:
//   length_exchange     UAA only: scalar all_gather of the local length + host read (Ulysses group)
//   pad_pack            head padding and layout copies (input packs, output unpacks)
//   qkv_all_to_all      Ulysses all-to-all of Q, K, V (scatter heads, gather sequence)
//   kv_all_gather       K and V all-gather along the sequence in the strided AllGather group
//   attention           local Q [Lt+R] against global K/V [Lt+S], non-causal
//   reverse_all_to_all  O back to [B, Sl, H, D]; joint rows head-gathered over the Ulysses group
// forward() runs them in order and is what `total` times.
#include "attention/kernels.hpp"
#include "attention/topology.hpp"
#include "collectives/communicator.hpp"
#include "collectives/delay.hpp"

#include <cstdint>
#include <vector>

namespace layerbench::attention {

struct Problem {
  long long batch = 1;        // B
  long long seq = 0;          // S (global image tokens)
  int heads = 0;              // H
  int head_dim = 0;           // D
  long long text_tokens = 0;  // Lt (joint tokens, replicated on every rank, attached in front)
  DType dtype = DType::bf16;
};

class SpAttention {
 public:
  // `inner` = Ulysses group (size U, contiguous), `outer` = AllGather group (size A, strided).
  SpAttention(Communicator& inner, Communicator& outer, const Topology& t, const Problem& p,
              Kernels& kernels, int sp_rank);

  // ---- inputs / outputs (backend memory) -------------------------------------------------
  void* input(int i) const { return in_[i].data(); }        // Q, K, V shard [B, Sl, H, D]
  void* joint_input(int i) const { return joint_[i].data(); }  // [B, Lt, H, D], replicated
  const void* output() const;                                // [B, Sl, H, D]
  const void* joint_output() const { return joint_out_.data(); }  // [B, Lt, H, D]
  long long local_seq() const { return shard_len_; }           // Sl
  long long shard_offset() const { return shard_off_; }         // first global row of the shard

  // ---- components (enqueue on s) -----------------------------------------------------------
  void length_exchange();  // no-op in strict mode
  void pack_inputs(Stream s);
  void qkv_all_to_all(Stream s);
  void kv_all_gather(Stream s);
  void attention(Stream s);
  void reverse_all_to_all(Stream s);
  void unpack_outputs(Stream s);
  void forward(Stream s);

  // What-if profiles: `hook` (not owned; nullptr = none) is called at the begin and end edge of
  // every component, under the names of hook_points() (pad_pack: the input packs and the output
  // unpacks, two instances per forward).
  void set_delay_hook(DelayHook* hook) { hook_ = hook; }
  static const std::vector<std::string>& hook_points();

  // ---- accounting -------------------------------------------------------------------------
  AttentionShape attention_shape() const;  // what this rank's kernel computes
  int padded_heads() const { return hpad_; }
  int slice_heads() const { return hl_; }
  long long region() const { return region_; }  // R = S / A
  bool has_length_exchange() const { return topo_.uaa && topo_.ulysses > 1; }

 private:
  std::size_t elems(long long rows, int heads) const {
    return static_cast<std::size_t>(rows * prob_.batch * heads * prob_.head_dim);
  }
  void set_counts(const std::vector<long long>& seq_lens);
  void edge(std::string_view component, Edge e, Stream s) {
    if (hook_) [[unlikely]] hook_->at(component, e, s);
  }

  DelayHook* hook_ = nullptr;

  Communicator& inner_;
  Communicator& outer_;
  Topology topo_;
  Problem prob_;
  Kernels& k_;
  int hpad_, hl_;
  long long region_, shard_len_, shard_off_;
  // Plain AllGather-KV with B = 1 and no joint tokens: BSHD and sequence-major coincide, so the
  // inputs are used in place and the kernel writes the output directly (no copies at all).
  bool zero_copy_;
  std::vector<long long> seq_lens_;  // shard lengths of this Ulysses group (exchanged under UAA)
  std::vector<std::size_t> send_counts_, send_displs_, recv_counts_, recv_displs_;

  Buffer in_[3];       // Q, K, V shard            [B, Sl, H, D]
  Buffer joint_[3];    // joint Q, K, V             [B, Lt, H, D]
  Buffer send_[3];     // packed for the all-to-all [U, Sl, B, Hl, D]
  Buffer q_full_;      // [Lt + R, B, Hl, D]  (joint rows first)
  Buffer kv_region_[2];  // A > 1: K, V after the all-to-all [R, B, Hl, D]
  Buffer kv_full_[2];  // [Lt + S, B, Hl, D]
  Buffer o_full_;      // [Lt + R, B, Hl, D]
  Buffer o_recv_;      // [U, Sl, B, Hl, D]
  Buffer joint_gather_;  // [U, Lt, B, Hl, D]
  Buffer out_;         // [B, Sl, H, D]
  Buffer joint_out_;   // [B, Lt, H, D]
};

}  // namespace layerbench::attention
