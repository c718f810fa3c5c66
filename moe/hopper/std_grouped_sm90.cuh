#pragma once
// The standard block's expert MLPs as two persistent grouped GEMMs on Hopper (sm_90a: TMA +
// wgmma, moe/hopper/std_grouped_sm90.cu), any hidden size and intermediate size (multiples of 8):
//   gate/up   act (R, I) = glu(x W13[e][:I]^T, x W13[e][I:]^T)   K = h, the activation fused
//   down      y (R, h)   = act Wd[e]^T                            K = I
// Rows are expert-major and compact (counts[e] rows for local expert e). The weights are read in
// nn.Linear's own (out, in) layout, which is K-major: W13 (E, 2I, h), Wd (E, h, I); no copy.
// The tile lists (expert, 128 rows, one column block) and the row offsets are built on the device
// from the counts (std_grouped_tiles): nothing is read back, so the three launches of
// std_expert_mlp_sm90 can be captured in a CUDA graph and replayed for any counts whose rows fit.
#include "moe/config/model.hpp"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace layerbench::moe::cuda {

// One output tile: rows [row0, row0 + valid) of the compact layout (all of one expert) times
// column block `block` (128 activation columns for gate/up, 256 output columns for down).
struct StdTile {
  int expert, row0, valid, block;
};

// The largest local expert count the tile builder takes (its offsets live in shared memory).
inline constexpr std::int64_t kStdGroupedMaxExperts = 4096;

// Launch variants, process-wide (the kernel study times each): paired = 2-CTA clusters sharing
// the weight box of two row tiles of one expert and column block by TMA multicast; half_tiles =
// a tile of at most 64 live rows loads 64 A rows and runs one consumer warpgroup;
// pack_leftovers = the lists in pair order (std_grouped_tiles); deferred_epilogue = see
// moe/hopper/std_grouped_sm90.cu. Defaults: each variant timed interleaved against torch._grouped_mm
// (results/moe/2026-12-02-h200-n, variants/): pairs, half tiles and plain order are the best or
// inside the best's interval at every preset but Mixtral-8x7B (single CTAs 0.6% ahead); without
// the multicast the kernels lose 4-35% elsewhere; deferred and in place read the same.
// spread_epilogue: the deferred epilogue one 64-column chunk at a time between the next tile's
// K steps instead of all after its third (see grouped_kernel): 0.9-3.0% faster interleaved
// (results/moe/2026-12-02-h200-u). L2 priorities: the normal one is best (-r, -t).
// L2 eviction priority of the lines a GEMM's copies of A (rows) or B (weights) read.
enum class L2Priority { normal, evict_first, evict_last };
struct StdGroupedVariant {
  bool paired = true;
  bool half_tiles = true;
  bool pack_leftovers = false;
  bool deferred_epilogue = true;
  L2Priority a_l2 = L2Priority::normal;
  L2Priority b_l2 = L2Priority::normal;
  bool spread_epilogue = true;
  // The FP8 kernels' two consumer warpgroups (moe/hopper/fp8_grouped_sm90.cu, fp8_block_sm90.cu):
  // staggered, warpgroup 1 starts once warpgroup 0 has issued its first MMAs (the offset then
  // stays: one warpgroup's epilogue or promotion runs while the other's MMAs keep the tensor
  // cores busy); ordered (block-scaled only), in a tile where both have rows the two take turns
  // to issue every set of MMAs.
  bool staggered = false;
  bool ordered = false;
};
void std_grouped_set_variant(const StdGroupedVariant& v);
StdGroupedVariant std_grouped_variant();
// A variant as words ("paired, half tiles, plain order, deferred epilogue"), and from modifiers
// joined by '+' applied to the default variant: paired | unpaired, half-tiles | whole-tiles,
// plain-order | pair-order, deferred | in-place, spread | at-once, staggered | ordered | in-step,
// a-evict-first | a-evict-last | a-evict-normal and the same for b (UsageError naming the unknown word).
std::string describe(const StdGroupedVariant& v);
StdGroupedVariant parse_grouped_variant(std::string_view modifiers);

// A compute capability 9.0 device, h and I multiples of 8 (16-byte TMA row strides), at most
// kStdGroupedMaxExperts experts.
bool std_grouped_sm90_supported(std::int64_t h, std::int64_t inter, std::int64_t experts);

// Column blocks of each projection, and the tile capacity of a list for at most `rows_cap` rows.
std::int64_t std_gate_up_blocks(std::int64_t inter);
std::int64_t std_down_blocks(std::int64_t h);
std::int64_t std_grouped_max_tiles(std::int64_t rows_cap, std::int64_t experts, std::int64_t blocks);

// Both tile lists from the device counts (int32, `experts` of them), one launch: expert by
// expert, column block by column block, 128-row tiles fastest (the tiles that share a weight
// block run side by side). With pack_leftovers each expert's tiles are in pair order, column
// blocks two by two: the pairs of consecutive row tiles of each block (sharing its weight box),
// then the odd last row tile of the two blocks side by side (a half tile pairs with a half tile
// next to the weight blocks it reads), and one empty tile (valid 0) where the expert's count is
// odd. live[0] / live[1] receive the gate/up / down list lengths, even (an empty tile appended
// where needed).
void std_grouped_tiles(const int* counts, std::int64_t experts, std::int64_t gu_blocks, std::int64_t dn_blocks,
                       StdTile* gu_tiles, std::int64_t gu_max, StdTile* dn_tiles, std::int64_t dn_max, int* live,
                       cudaStream_t s);

// The two GEMMs over a built list (live: its device length). x / act have rows_cap rows.
void std_gate_up_sm90(const __nv_bfloat16* x, std::int64_t rows_cap, std::int64_t h, const __nv_bfloat16* w13,
                      std::int64_t experts, std::int64_t inter, __nv_bfloat16* act, const StdTile* tiles,
                      std::int64_t max_tiles, const int* live, const ActivationSpec& a, cudaStream_t s);
void std_down_sm90(const __nv_bfloat16* act, std::int64_t rows_cap, std::int64_t inter, const __nv_bfloat16* wd,
                   std::int64_t experts, std::int64_t h, __nv_bfloat16* y, const StdTile* tiles, std::int64_t max_tiles,
                   const int* live, cudaStream_t s);

// Workspace of std_expert_mlp_sm90: both tile lists and their lengths.
struct StdGroupedWork {
  StdTile* gu = nullptr;
  StdTile* dn = nullptr;
  int* live = nullptr;  // 2 ints
  std::int64_t gu_max = 0, dn_max = 0;
};
std::int64_t std_grouped_work_bytes(std::int64_t rows_cap, std::int64_t experts, std::int64_t h, std::int64_t inter);
StdGroupedWork std_grouped_work(void* base, std::int64_t rows_cap, std::int64_t experts, std::int64_t h,
                                std::int64_t inter);

// tiles + gate/up (activation fused) + down: three launches, no host read.
void std_expert_mlp_sm90(const __nv_bfloat16* x, const __nv_bfloat16* w13, const __nv_bfloat16* wd,
                         __nv_bfloat16* act, __nv_bfloat16* y, const int* counts, std::int64_t experts,
                         std::int64_t rows_cap, std::int64_t h, std::int64_t inter, const ActivationSpec& a,
                         const StdGroupedWork& w, cudaStream_t s);

}  // namespace layerbench::moe::cuda
