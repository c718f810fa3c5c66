#pragma once
// Geometry and run configuration of the MAGI-2 multi-head MoE layer, validated once.
// NOTES: every invariant the layer relies on is checked by validate() in bench/moe/run_config.hpp
// (UsageError), so the layer and the kernels can assume a consistent geometry.
#include <cstdint>
#include <string>
#include <vector>

namespace layerbench::moe {

enum class Layout { sp, tp };

// The layer's shape. Defaults are the released MAGI-2 preview preset.
struct Geometry {
  std::int64_t hidden = 3072;
  std::int64_t heads = 12;         // MoE heads; d_head = hidden / heads
  std::int64_t experts = 256;      // per head (each head owns its own bank)
  std::int64_t topk = 6;
  std::int64_t intermediate = 1280;  // routed experts, shared MLP and modality-shared MLP
  double scale = 4.9;                // routing scale
  std::int64_t d_head() const { return hidden / heads; }
};

inline constexpr int kNumModalities = 3;  // video, text, audio

Layout parse_layout(const std::string& s);

// Who owns what on one rank. SP: heads padded to a multiple of P and sharded; tokens uneven.
// TP: heads sharded contiguously (T | heads), tokens replicated.
struct Plan {
  Layout layout = Layout::sp;
  int rank = 0, world = 1;
  std::int64_t hidden = 0, heads = 0, d_head = 0, experts = 0, topk = 0, inter = 0;
  double scale = 4.9;
  std::int64_t heads_padded = 0;  // SP: ceil(H/P)*P; TP: H
  std::int64_t heads_local = 0;   // Hl
  std::int64_t head0 = 0;         // first global head owned here
  std::int64_t heads_valid = 0;   // local heads below H (the rest are zero padding)
  std::vector<std::int64_t> splits;  // SP: tokens per rank; TP: {tokens}
  std::int64_t local_tokens = 0;     // N
  std::int64_t token0 = 0;           // first global token of this rank
  std::int64_t moe_tokens = 0;       // tokens the local experts see: sum(splits) (SP) or N (TP)
  std::int64_t global_tokens = 0;    // the whole sequence
  std::int64_t inter_local = 0;      // shared-branch intermediate per rank (TP: I / T)
  std::int64_t hidden_in_local = 0;  // split_linear output columns used per rank (TP: H*dh/T)

  std::int64_t width_local() const { return heads_local * d_head; }  // rw
};
// A plan for `rank` of `world` ranks; `splits` for SP (size world).
Plan make_plan(const Geometry& g, Layout layout, int rank, int world,
               const std::vector<std::int64_t>& splits);

// Modality of a global token, following the reference profiler over the whole sequence:
// TEXT for the first max(L/20,1) tokens, AUDIO for [L/2, L/2+max(L/20,1)), VIDEO elsewhere.
enum Modality : int { kVideo = 0, kText = 1, kAudio = 2 };
int modality_of(std::int64_t token, std::int64_t total);

// Runs of equal modality inside [begin, begin+count) of a sequence of `total` tokens, with
// `begin` relative to the slice.
struct Segment {
  std::int64_t begin = 0, count = 0;
  int modality = 0;
};
std::vector<Segment> modality_segments(std::int64_t begin, std::int64_t count, std::int64_t total);

}  // namespace layerbench::moe
