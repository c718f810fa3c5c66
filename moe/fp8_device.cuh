#pragma once
// Device side of moe/fp8.hpp's scale recipe, shared by every FP8 quantization kernel (the dispatch
// rows, the rowwise and 1x128 / 128x128 quantizers): the block's scale, and 8 values' amax and
// conversion.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace layerbench::moe::fp8 {

// The scale of the values a thread block of `Threads` threads holds: the block's amax from each
// thread's partial `amax` (warp shuffles, then `red`, one float per warp in shared memory), then
// s = max(amax, 1e-4) / 448 with IEEE division (no fast math): the host's scale bit for bit. Every
// thread returns s; `red` may be rewritten as soon as it returns.
template <int Threads>
__device__ __forceinline__ float block_scale(float amax, float* red) {
  static_assert(Threads % 32 == 0, "whole warps");
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = amax;
  __syncthreads();
  amax = red[0];
#pragma unroll
  for (int w = 1; w < Threads / 32; ++w) amax = fmaxf(amax, red[w]);
  __syncthreads();
  return fmaxf(amax, 1e-4f) / 448.0f;
}

// The largest magnitude of 8 bf16 values (16 bytes), folded into amax.
__device__ __forceinline__ float amax8(const uint4& v, float amax) {
  const auto* p = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(p[i]);
    amax = fmaxf(amax, fmaxf(fabsf(f.x), fabsf(f.y)));
  }
  return amax;
}

// 8 bf16 values divided by s (IEEE division) and rounded to e4m3 (nearest even, saturating): 8 bytes.
__device__ __forceinline__ uint2 e4m3x8(const uint4& v, float s) {
  const auto* p = reinterpret_cast<const __nv_bfloat162*>(&v);
  std::uint32_t lo = 0, hi = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(p[i]);
    const auto two = static_cast<std::uint32_t>(
        __nv_cvt_float2_to_fp8x2(make_float2(f.x / s, f.y / s), __NV_SATFINITE, __NV_E4M3));
    (i < 2 ? lo : hi) |= two << (16 * (i & 1));
  }
  return make_uint2(lo, hi);
}

}  // namespace layerbench::moe::fp8
