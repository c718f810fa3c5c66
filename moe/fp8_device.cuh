#pragma once
// Device side of moe/fp8.hpp's scale recipe, shared by every FP8 quantization kernel (the dispatch
// rows, the rowwise and 1x128 / 128x128 quantizers).
#include <cuda_runtime.h>

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

}  // namespace layerbench::moe::fp8
