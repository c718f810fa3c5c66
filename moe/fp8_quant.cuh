#pragma once
// FP8 (e4m3) quantization on the device with the host's recipe (moe/fp8.hpp) bit for bit, on any
// architecture the project builds for: the quantizers the Hopper kernels (moe/hopper/) and the
// cuBLASLt GEMMs (moe/fp8_lt.hpp) both read from.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace layerbench::moe::cuda {

// Rowwise quantization: per row of a (rows, cols) bf16 matrix (cols a multiple of 8)
// s = max(amax, 1e-4) / 448, q = e4m3(x / s) with IEEE division and the GPU's round-to-nearest-even,
// saturating conversion. One CTA per row.
void fp8_quantize_rows(const __nv_bfloat16* x, std::int64_t rows, std::int64_t cols, std::uint8_t* q, float* scale,
                       cudaStream_t s);

}  // namespace layerbench::moe::cuda
