#pragma once
// What one attention forward computes, independent of how it is split over ranks: the global
// problem (image sequence, joint text tokens in front or at the rear, GQA), key-padding masks
// per request, packed requests (documents of one batch row with their cu_seqlens) and a reused
// K/V prefix (cached K/V: keys and values with no query rows of their own). The single-rank
// oracle (verify.hpp) and every topology compute exactly this.
//
// Semantics (the reference order of the single-rank equivalent):
//   keys     = [cached (Lc); joint (Lt); image (S)]   (front)
//              [cached (Lc); image (S); joint (Lt)]   (rear)
//   queries  = joint rows and image rows (cached rows have no query)
//   a key is valid for batch b when: cached; or joint j < joint_valid[b]; or image i <
//   image_valid[b] — and, with packed requests, the image key lies in the query's document.
#include "attention/topology.hpp"
#include "collectives/types.hpp"

#include <string>
#include <vector>

namespace layerbench::attention {

enum class JointPosition { front, rear };
JointPosition parse_joint_position(const std::string& s);  // "front" | "rear"; UsageError
const char* to_string(JointPosition p);

struct Problem {
  long long batch = 1;        // B
  long long seq = 0;          // S (global image tokens)
  int heads = 0;              // H (query heads)
  int head_dim = 0;           // D
  long long text_tokens = 0;  // Lt (joint tokens, replicated on every rank)
  DType dtype = DType::bf16;
  int kv_heads = 0;           // K/V heads (GQA when below H); 0 = H
  JointPosition joint = JointPosition::front;
  std::vector<long long> joint_valid;  // key-padding mask of the joint tokens per request; empty = all valid
  std::vector<long long> image_valid;  // key-padding mask of the image tokens per request; empty = all valid
  std::vector<long long> cu_seqlens;   // packed requests over the image sequence: [0, ..., S]; empty = one
  long long cached_kv = 0;             // Lc: reused K/V prefix rows (replicated, no queries)
  bool causal = false;                 // asked for; no layout here serves it (fails closed)

  int kv() const { return kv_heads > 0 ? kv_heads : heads; }
  bool masked() const { return !joint_valid.empty() || !image_valid.empty(); }
  bool packed() const { return cu_seqlens.size() > 2; }
  long long joint_valid_of(long long b) const { return joint_valid.empty() ? text_tokens : joint_valid[b]; }
  long long image_valid_of(long long b) const { return image_valid.empty() ? seq : image_valid[b]; }
  // Document of global image row i (0 when not packed).
  int document_of(long long i) const;
  // One line for reports: "GQA 40/8, joint rear Lt=256 (valid 200,256), packed 3 requests".
  std::string describe() const;
};

// The one validation layer of a (topology, workload) pair: UsageError with one message for
// every combination no layout serves (the seed's fail-closed cases included). Same arguments on
// every rank, so every rank throws alike (exit 2 everywhere).
void check_workload(const Topology& t, const Problem& p, int world);

// Packed query metadata of a rank whose query holds image rows [lo, hi) (the seed's remap):
// one entry per document, possibly of length zero, so the pairing with the global key
// cu_seqlens holds: local_len_i = max(0, min(cu[i+1], hi) - max(cu[i], lo)), returned as the
// cumulative sums [0, ...].
std::vector<long long> remap_cu_seqlens(const std::vector<long long>& cu, long long lo, long long hi);

// `n` requests of unequal lengths (ratios 1 : 2 : ... : n, the last absorbing the rounding)
// packed into S rows, as cu_seqlens. UsageError when S < n.
std::vector<long long> packed_requests(long long seq, int n);

}  // namespace layerbench::attention
