#pragma once
// The standard block's expert GEMMs with FP8 (e4m3) operands on Hopper (sm_90a: TMA + wgmma
// m64n256k32 e4m3, moe/hopper/fp8_grouped_sm90.cu), rowwise scales (one fp32 scale per activation row,
// one per weight output channel, applied to the fp32 accumulators in the epilogue):
//   gate/up   act (R, I) bf16 = glu(sx x W13[e][:I]^T sw, sx x W13[e][I:]^T sw)   K = h
//   down      y (R, h) bf16   = sa a Wd[e]^T sw                                   K = I
// x, a (R, K) e4m3 with scales (R); W13 (E, 2I, h), Wd (E, h, I) e4m3 in nn.Linear's own
// (out, in) layout (K-major, as FP8 wgmma needs both operands) with scales (E, 2I) / (E, h).
// Rows are expert-major and compact; the tile lists are std_grouped_tiles' (moe/hopper/std_grouped_sm90.cuh,
// the same 128-row tiles and column blocks), and the launch follows its variant's pairing and
// half tiles (the epilogue is always deferred and spread). The partial sums are not promoted:
// rowwise scales do not vary along K, so the tensor cores accumulate all of K (as
// torch._scaled_grouped_mm's use_fast_accum and CUTLASS's FP8FastAccum schedules do); the error
// against the oracle on the dequantized operands is measured by layerbench-moe-kernels --precision.
#include "moe/config/model.hpp"
#include "moe/fp8_quant.cuh"
#include "moe/hopper/std_grouped_sm90.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace layerbench::moe::cuda {

// "" when the kernels take the shape on this device, else why not: a compute capability 9.0
// device, h and I multiples of 16 (16-byte TMA row strides of one-byte elements), 1 to
// kStdGroupedMaxExperts experts.
std::string fp8_grouped_unsupported(std::int64_t h, std::int64_t inter, std::int64_t experts);

void fp8_gate_up_sm90(const std::uint8_t* x, const float* x_scale, std::int64_t rows_cap, std::int64_t h,
                      const std::uint8_t* w13, const float* w13_scale, std::int64_t experts, std::int64_t inter,
                      __nv_bfloat16* act, const StdTile* tiles, std::int64_t max_tiles, const int* live,
                      const ActivationSpec& a, cudaStream_t s);
// gate/up with the act quantized in the epilogue (the GLU's bf16 values, then moe/fp8.hpp's recipe
// per row per 128 columns, the tile's column block): act_q (R, I) e4m3 and act_scale
// (R, ceil(I / 128)) fp32, for fp8_rowwise_down_1x128_sm90 (moe/hopper/fp8_block_sm90.cuh). One scale per
// row would need the row's amax across all of I's column blocks, which other CTAs compute.
void fp8_gate_up_q_sm90(const std::uint8_t* x, const float* x_scale, std::int64_t rows_cap, std::int64_t h,
                        const std::uint8_t* w13, const float* w13_scale, std::int64_t experts, std::int64_t inter,
                        std::uint8_t* act_q, float* act_scale, const StdTile* tiles, std::int64_t max_tiles,
                        const int* live, const ActivationSpec& a, cudaStream_t s);
void fp8_down_sm90(const std::uint8_t* act, const float* act_scale, std::int64_t rows_cap, std::int64_t inter,
                   const std::uint8_t* wd, const float* wd_scale, std::int64_t experts, std::int64_t h,
                   __nv_bfloat16* y, const StdTile* tiles, std::int64_t max_tiles, const int* live, cudaStream_t s);

}  // namespace layerbench::moe::cuda
