#pragma once
// The epilogue helpers shared by the standard block's grouped wgmma kernels: the BF16 ones
// (moe/hopper/std_grouped_sm90.cu) and the FP8 rowwise ones (moe/hopper/fp8_grouped_sm90.cu),
// and the shared-memory float load the FP8 kernels (rowwise and block-scaled,
// moe/hopper/fp8_block_sm90.cu) use. Both grouped kernels store a tile of 128 rows x 256
// accumulator columns (gate/up: 128 activation columns) through a staging buffer per consumer
// warpgroup of 64 rows x 64 bf16 at a 72-element pitch; the kernels assert that their own
// constants match these. Device code exists only in the sm_90a pass (LB_WGMMA).
#include "moe/hopper/sm90.cuh"
#include "moe/hopper/std_glu.cuh"
#include "moe/hopper/std_grouped_sm90.cuh"

#include <cstdint>

namespace layerbench::moe::cuda::grouped {

// A tile's accumulator columns (kStore: output columns), its activation columns (gate/up), and
// the staging buffer's row pitch in bf16 (the fragment writes hit 32 distinct banks and each row
// reads back as 16-byte chunks).
constexpr int kTileCols = 256, kGluCols = 128, kStagePitch = 72;

#ifdef LB_WGMMA
__device__ __forceinline__ float2 unpack_bf16x2(std::uint32_t v) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&v));
}

__device__ __forceinline__ float ld_shared_f32(std::uint32_t addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}

// GLU: the packed gate/up pairs j in [J0, J1) (gate pk[j], up pk[32 + j]) into packed activation
// pairs, in place (pk[j]); CLAMPED: gpt-oss's clamped SwiGLU, else SiLU-GLU (std_glu_value).
template <bool CLAMPED, int J0, int J1>
__device__ __forceinline__ void glu_packed(std::uint32_t (&pk)[64], float alpha, float limit) {
#pragma unroll
  for (int j = J0; j < J1; ++j) {
    const float2 g = unpack_bf16x2(pk[j]), u = unpack_bf16x2(pk[32 + j]);
    const __nv_bfloat162 r = __floats2bfloat162_rn(std_glu_value<CLAMPED>(g.x, u.x, alpha, limit),
                                                   std_glu_value<CLAMPED>(g.y, u.y, alpha, limit));
    pk[j] = *reinterpret_cast<const std::uint32_t*>(&r);
  }
}

// A packed tile into out, 64 output columns at a time through the consumer's staging buffer
// (c_base), stored as 16-byte chunks of whole 128-byte row segments. STORE: columns
// 256 block + c of y (ld = n_cols). GLU (glu_packed first): the pairs (c, c + 128), c < 128, into
// act column 128 block + c (ld = n_cols = I). n_cols is a multiple of 8: a 16-byte chunk is in or
// out whole. Chunks [Q0, Q1) of the tile's (STORE 4, GLU 2).
template <bool STORE, int Q0 = 0, int Q1 = (STORE ? kTileCols / 64 : kGluCols / 64)>
__device__ __forceinline__ void store_tile(std::uint32_t (&pk)[64], bf16* __restrict__ out, const StdTile& t,
                                           int n_cols, int g, int tid, std::uint32_t c_base) {
  const int lane = tid & 31, w = tid >> 5;
  const int r0 = w * 16 + (lane >> 2), c0 = (lane & 3) * 2;
  const int col0 = t.block * (STORE ? kTileCols : kGluCols), valid = t.valid - g * 64;
#pragma unroll
  for (int q = Q0; q < Q1; ++q) {
    if (col0 + q * 64 >= n_cols) break;  // uniform across the warpgroup
    sm90::consumer_pair_sync(g);         // the previous chunk's reads are done
#pragma unroll
    for (int i = 32 * q; i < 32 * q + 32; i += 2) {
      const int row = r0 + ((i >> 1) & 1) * 8, col = c0 + ((i >> 2) - 8 * q) * 8;
      sm90::st_shared_b32(c_base + (row * kStagePitch + col) * 2, pk[i / 2]);
    }
    sm90::consumer_pair_sync(g);
#pragma unroll
    for (int p = 0; p < 4; ++p) {  // 64 rows x 8 chunks of 16 B
      const int id = tid + 128 * p, row = id >> 3, ch = id & 7;
      const int col = col0 + q * 64 + ch * 8;
      if (row < valid && col < n_cols) {
        const uint4 v = sm90::ld_shared_v4(c_base + (row * kStagePitch + ch * 8) * 2);
        *reinterpret_cast<uint4*>(out + std::int64_t(t.row0 + g * 64 + row) * n_cols + col) = v;
      }
    }
  }
}
#endif  // LB_WGMMA

}  // namespace layerbench::moe::cuda::grouped
