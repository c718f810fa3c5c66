// The device quantizers of moe/fp8_quant.cuh.
#include "collectives/error.hpp"
#include "moe/fp8_device.cuh"
#include "moe/fp8_quant.cuh"

#include <cuda_fp8.h>

#include <cstdint>

namespace layerbench::moe::cuda {

namespace {

constexpr int Q_THREADS = 256;

__global__ void __launch_bounds__(Q_THREADS)
    quantize_rows_kernel(const __nv_bfloat16* __restrict__ x, int cols, std::uint8_t* __restrict__ q, float* __restrict__ scale) {
  const std::int64_t row = blockIdx.x;
  const __nv_bfloat16* xr = x + row * cols;
  float amax = 0.0f;
  for (int c = 8 * static_cast<int>(threadIdx.x); c < cols; c += 8 * Q_THREADS) {
    const uint4 v = *reinterpret_cast<const uint4*>(xr + c);
    const auto* p = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __bfloat1622float2(p[i]);
      amax = fmaxf(amax, fmaxf(fabsf(f.x), fabsf(f.y)));
    }
  }
  __shared__ float red[Q_THREADS / 32];
  const float s = fp8::block_scale<Q_THREADS>(amax, red);
  if (threadIdx.x == 0) scale[row] = s;
  for (int c = 8 * static_cast<int>(threadIdx.x); c < cols; c += 8 * Q_THREADS) {
    const uint4 v = *reinterpret_cast<const uint4*>(xr + c);
    const auto* p = reinterpret_cast<const __nv_bfloat162*>(&v);
    std::uint32_t lo = 0, hi = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __bfloat1622float2(p[i]);
      const auto two = static_cast<std::uint32_t>(
          __nv_cvt_float2_to_fp8x2(make_float2(f.x / s, f.y / s), __NV_SATFINITE, __NV_E4M3));
      (i < 2 ? lo : hi) |= two << (16 * (i & 1));
    }
    *reinterpret_cast<uint2*>(q + row * cols + c) = make_uint2(lo, hi);
  }
}

}  // namespace

void fp8_quantize_rows(const __nv_bfloat16* x, std::int64_t rows, std::int64_t cols, std::uint8_t* q, float* scale,
                       cudaStream_t s) {
  if (rows == 0) return;
  LB_CHECK(cols > 0 && cols % 8 == 0 && cols < (std::int64_t{1} << 31) && rows < (std::int64_t{1} << 31),
           "fp8_quantize_rows: cols must be a positive multiple of 8");
  quantize_rows_kernel<<<static_cast<unsigned>(rows), Q_THREADS, 0, s>>>(x, static_cast<int>(cols), q, scale);
  LB_CUDA_CHECK_LAUNCH();
}

}  // namespace layerbench::moe::cuda
