#pragma once
// The dense primitives' CUDA kernels (moe/dense_ops.cu): seeded fills, bf16 adds and widening.
// All launches go on `s` and check the launch.
#include "moe/init.hpp"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace layerbench::moe::cuda {

using bf16 = __nv_bfloat16;

// Writes the seeded slice `f` (moe/init.hpp) as bf16 or fp32.
void fill(void* dst, bool is_bf16, const SeededSlice& f, cudaStream_t s);
// out = x + y (fp32 math, bf16 result), n elements.
void add(const bf16* x, const bf16* y, bf16* out, std::int64_t n, cudaStream_t s);
// y = x widened to fp32, n elements.
void to_float(const bf16* x, float* y, std::int64_t n, cudaStream_t s);

}  // namespace layerbench::moe::cuda
