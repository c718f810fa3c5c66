#pragma once
// The standard block's expert GEMMs with FP8 (e4m3) operands and DeepSeek-V3's block scales on
// Hopper (sm_90a: TMA + wgmma m64n128k32 e4m3, moe/hopper/fp8_block_sm90.cu):
//   weights      128 x 128 blocks: W13 (E, 2I, h) as the gate and up matrices of each expert apart
//                (fp8::quantize(w13, 2E, I, h, block_128x128): scales (2E, ceil(I/128), ceil(h/128)),
//                the checkpoints' separate gate_proj / up_proj scales); Wd (E, h, I): scales
//                (E, ceil(h/128), ceil(I/128));
//   activations  1 x 128 per row (fp32): x (R, h) scales (R, ceil(h/128)); act (R, I) scales
//                (R, ceil(I/128)), all row-major (moe/fp8.hpp's layouts);
//   promotion    every 128 K elements (one scale block) the tensor cores start a fresh fp32
//                accumulator (4 wgmma k32) and the CUDA cores add it into the tile's fp32 sums:
//                final += sa[row][k] * sb[block][k] * acc (DeepSeek-V3 report s3.3.2, DeepGEMM's
//                SM90 1D2D kernel);
//   gate/up      glu(gate, up) of the promoted sums (gate and up rounded to bf16 first, as every
//                other expert path), written either as bf16 act (R, I), or quantized in the
//                epilogue to e4m3 act with its 1x128 scales (the row amax of each 128-column group
//                is one tile's, both 64-column halves in the warpgroup that holds the row), which
//                down reads directly;
//   down         y (R, h) bf16.
// Rows are expert-major and compact; the tile lists are std_grouped_tiles' built with 128-column
// blocks for gate/up (activation columns) and 256-column blocks for down (fp8_block_tiles).
#include "moe/config/model.hpp"
#include "moe/hopper/std_grouped_sm90.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace layerbench::moe::cuda {

// "" when the block-scaled kernels take the shape on this device, else why not: a compute
// capability 9.0 device, h and I positive multiples of 16 (16-byte TMA row strides of e4m3 and
// 16-byte stores), 1 to kStdGroupedMaxExperts experts, 32-bit coordinates.
std::string fp8_block_unsupported(std::int64_t h, std::int64_t inter, std::int64_t experts, std::int64_t rows_cap);

// Device quantization with the host's recipe (moe/fp8.hpp) bit for bit (IEEE division, the GPU's
// round-to-nearest-even saturating conversion); cols a multiple of 16.
//   1x128:   x (rows, cols) bf16 -> q (rows, cols) e4m3, scales (rows, ceil(cols / 128)).
//   128x128: w (groups, rows, cols) bf16 -> q, scales (groups, ceil(rows / 128), ceil(cols / 128)).
void fp8_quantize_1x128(const __nv_bfloat16* x, std::int64_t rows, std::int64_t cols, std::uint8_t* q, float* scales,
                        cudaStream_t s);
void fp8_quantize_128x128(const __nv_bfloat16* w, std::int64_t groups, std::int64_t rows, std::int64_t cols,
                          std::uint8_t* q, float* scales, cudaStream_t s);

// Both tile lists (128-row tiles; 128-column blocks for gate/up, 256-column for down) in `work`.
std::int64_t fp8_block_work_bytes(std::int64_t rows_cap, std::int64_t experts, std::int64_t h, std::int64_t inter);
StdGroupedWork fp8_block_work(void* base, std::int64_t rows_cap, std::int64_t experts, std::int64_t h,
                              std::int64_t inter);
void fp8_block_tiles(const int* counts, std::int64_t experts, std::int64_t h, std::int64_t inter,
                     const StdGroupedWork& w, cudaStream_t s);

// gate/up: x (rows_cap, h) e4m3 + 1x128 scales; w13 e4m3 + 128x128 scales (see above). Output:
// act_bf16 (rows_cap, I) when act_q is null; else act_q (rows_cap, I) e4m3 and act_scale
// (rows_cap, ceil(I / 128)) fp32 (act_bf16 unused).
void fp8_block_gate_up_sm90(const std::uint8_t* x, const float* x_scale, std::int64_t rows_cap, std::int64_t h,
                            const std::uint8_t* w13, const float* w13_scale, std::int64_t experts, std::int64_t inter,
                            __nv_bfloat16* act_bf16, std::uint8_t* act_q, float* act_scale, const StdTile* tiles,
                            std::int64_t max_tiles, const int* live, const ActivationSpec& a, cudaStream_t s);
// down: act (rows_cap, I) e4m3 + 1x128 scales; wd (E, h, I) e4m3 + 128x128 scales; y bf16.
void fp8_block_down_sm90(const std::uint8_t* act, const float* act_scale, std::int64_t rows_cap, std::int64_t inter,
                         const std::uint8_t* wd, const float* wd_scale, std::int64_t experts, std::int64_t h,
                         __nv_bfloat16* y, const StdTile* tiles, std::int64_t max_tiles, const int* live,
                         cudaStream_t s);

// The rowwise recipe's down on an act quantized per row per 128 columns (fp8_gate_up_q_sm90,
// moe/hopper/fp8_grouped_sm90.cuh): act (rows_cap, I) e4m3 + 1x128 scales, wd (E, h, I) e4m3 with one
// scale per output channel (E, h), 8-byte aligned; the act scale varies along K, so the partial
// sums are promoted every 128 K elements as above, and the channel scale applied at the end.
// Tile lists: fp8_block_tiles' down list.
void fp8_rowwise_down_1x128_sm90(const std::uint8_t* act, const float* act_scale, std::int64_t rows_cap,
                                 std::int64_t inter, const std::uint8_t* wd, const float* wd_scale, std::int64_t experts,
                                 std::int64_t h, __nv_bfloat16* y, const StdTile* tiles, std::int64_t max_tiles,
                                 const int* live, cudaStream_t s);

}  // namespace layerbench::moe::cuda
