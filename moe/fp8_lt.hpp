#pragma once
// FP8 (e4m3) GEMMs through cuBLASLt, on any device cuBLASLt runs them on (compute capability 8.9
// or newer), with the rowwise recipe of moe/fp8.hpp (torch._scaled_mm's RowWise: one fp32 scale
// per row of A, one per output channel of W, cuBLASLt's outer-vector scale mode):
//   C[m, n] (bf16, row-major, ldc = n) = diag(sa) (A[m, k] W[n, k]^T) diag(sw)
// A and W e4m3, row-major and K-major (nn.Linear's (out, in) layout: FP8 GEMMs take no transposed
// operand), sa (m) and sw (n) fp32 on the device. The profile's FP8 dense reference GEMM runs on
// it (the rate of every FP8 component is compared with it, not with the bf16 reference).
#include "collectives/device.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace layerbench::moe {

// "" where cuBLASLt takes an e4m3 GEMM of this shape with rowwise scales on the current device
// (it is asked for an algorithm), else why not. Throws without CUDA.
std::string fp8_lt_unsupported(std::int64_t m, std::int64_t n, std::int64_t k);

class Fp8LtGemm {
 public:
  virtual ~Fp8LtGemm() = default;
  virtual void run(const void* a, const float* sa, const void* w, const float* sw, void* c, Stream s) = 0;
  // The algorithm cuBLASLt chose (for the header).
  virtual std::string describe() const = 0;
};

// Plans the GEMM once (cuBLASLt's heuristic; fast accumulation, as torch's use_fast_accum=True):
// throws UsageError where fp8_lt_unsupported says why.
std::unique_ptr<Fp8LtGemm> make_fp8_lt_gemm(Device& dev, std::int64_t m, std::int64_t n, std::int64_t k);

// The dense FP8 reference of a profile: a g x g x g e4m3 GEMM from the seeded bf16 fills
// quantized rowwise on the device (moe/fp8_quant.cuh), output bf16.
class Fp8DenseReference {
 public:
  virtual ~Fp8DenseReference() = default;
  virtual void run(Stream s) = 0;
  virtual std::string describe() const = 0;
};
std::unique_ptr<Fp8DenseReference> make_fp8_dense_reference(Device& dev, std::int64_t g, std::uint64_t seed);

}  // namespace layerbench::moe
