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
  for (int c = 8 * static_cast<int>(threadIdx.x); c < cols; c += 8 * Q_THREADS)
    amax = fp8::amax8(*reinterpret_cast<const uint4*>(xr + c), amax);
  __shared__ float red[Q_THREADS / 32];
  const float s = fp8::block_scale<Q_THREADS>(amax, red);
  if (threadIdx.x == 0) scale[row] = s;
  for (int c = 8 * static_cast<int>(threadIdx.x); c < cols; c += 8 * Q_THREADS)
    *reinterpret_cast<uint2*>(q + row * cols + c) = fp8::e4m3x8(*reinterpret_cast<const uint4*>(xr + c), s);
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
