// CUDA dense primitives (moe/dense_ops.hpp): bf16 activations, cuBLAS for nn.Linear, seeded
// fills and element-wise adds (moe/dense_kernels.cuh).
#include "collectives/cuda_internal.hpp"
#include "collectives/error.hpp"
#include "moe/dense_kernels.cuh"
#include "moe/dense_ops.hpp"

#include <cublas_v2.h>

#include <algorithm>
#include <cstdint>

namespace layerbench::moe {
namespace cuda {

namespace {

constexpr int kThreads = 256;
int blocks_for(std::int64_t n) {
  return static_cast<int>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, 65535LL * 8));
}

__global__ void fill_kernel(void* dst, bool is_bf16, std::int64_t ld, std::uint64_t seed,
                            std::uint32_t tensor, std::int64_t rows, std::int64_t cols,
                            std::int64_t full_cols, std::int64_t row0, std::int64_t col0,
                            float scale) {
  const std::int64_t n = rows * cols;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / cols, c = i % cols;
    const float v = seeded_value(seed, tensor, std::uint64_t((row0 + r) * full_cols + col0 + c), scale);
    if (is_bf16)
      static_cast<bf16*>(dst)[r * ld + c] = __float2bfloat16_rn(v);
    else
      static_cast<float*>(dst)[r * ld + c] = v;
  }
}

__global__ void add_kernel(const bf16* x, const bf16* y, bf16* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16_rn(__bfloat162float(x[i]) + __bfloat162float(y[i]));
}

// 8 elements per thread (16-byte aligned; the tail goes to add_kernel).
__global__ void add8_kernel(const uint4* x, const uint4* y, uint4* out, std::int64_t nv) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < nv;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const uint4 a4 = x[i], b4 = y[i];
    const bf16* a = reinterpret_cast<const bf16*>(&a4);
    const bf16* b = reinterpret_cast<const bf16*>(&b4);
    uint4 o4;
    bf16* o = reinterpret_cast<bf16*>(&o4);
#pragma unroll
    for (int q = 0; q < 8; ++q) o[q] = __float2bfloat16_rn(__bfloat162float(a[q]) + __bfloat162float(b[q]));
    out[i] = o4;
  }
}

__global__ void to_float_kernel(const bf16* x, float* y, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    y[i] = __bfloat162float(x[i]);
}

}  // namespace

void fill(void* dst, bool is_bf16, const SeededSlice& f, cudaStream_t s) {
  if (f.rows * f.cols == 0) return;
  fill_kernel<<<blocks_for(f.rows * f.cols), kThreads, 0, s>>>(dst, is_bf16, f.ld, f.seed, f.tensor, f.rows,
                                                               f.cols, f.full_cols, f.row0, f.col0, f.scale);
  LB_CUDA_CHECK_LAUNCH();
}
void add(const bf16* x, const bf16* y, bf16* out, std::int64_t n, cudaStream_t s) {
  if (n == 0) return;
  std::int64_t done = 0;
  if ((reinterpret_cast<std::uintptr_t>(x) | reinterpret_cast<std::uintptr_t>(y) | reinterpret_cast<std::uintptr_t>(out)) %
          16 ==
      0) {
    done = n / 8 * 8;
    if (done > 0)
      add8_kernel<<<blocks_for(done / 8), kThreads, 0, s>>>(reinterpret_cast<const uint4*>(x),
                                                           reinterpret_cast<const uint4*>(y), reinterpret_cast<uint4*>(out),
                                                           done / 8);
  }
  if (done < n) add_kernel<<<blocks_for(n - done), kThreads, 0, s>>>(x + done, y + done, out + done, n - done);
  LB_CUDA_CHECK_LAUNCH();
}
void to_float(const bf16* x, float* y, std::int64_t n, cudaStream_t s) {
  if (n == 0) return;
  to_float_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, n);
  LB_CUDA_CHECK_LAUNCH();
}

}  // namespace cuda

namespace {

class CudaDenseOps final : public DenseOps {
 public:
  explicit CudaDenseOps(Device&) { LB_CUBLAS_CHECK(cublasCreate(&blas_)); }
  ~CudaDenseOps() override { cublasDestroy(blas_); }
  CudaDenseOps(const CudaDenseOps&) = delete;
  CudaDenseOps& operator=(const CudaDenseOps&) = delete;
  DType act() const override { return DType::bf16; }
  std::string describe() const override { return "cuda bf16, cuBLAS"; }
  void fill(void* dst, DType t, const SeededSlice& f, Stream s) override {
    cuda::fill(dst, t == DType::bf16, f, detail::cuda_stream(s));
  }
  void linear(const void* a, const void* w, void* c, const GemmShape& g, bool accumulate, Stream s) override {
    const std::int64_t m = g.m, n = g.n, k = g.k, lda = g.lda, ldw = g.ldw, ldc = g.ldc;
    if (m == 0 || n == 0) return;
    // Row-major C(m,n) = A(m,k) W(n,k)^T  ==  column-major C^T(n,m) = op(W^T) A^T.
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    LB_CUBLAS_CHECK(cublasSetStream(blas_, detail::cuda_stream(s)));
    LB_CUBLAS_CHECK(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, int(n), int(m), int(k), &alpha, w, CUDA_R_16BF,
                                 int(ldw), a, CUDA_R_16BF, int(lda), &beta, c, CUDA_R_16BF, int(ldc),
                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  void add(const void* x, const void* y, void* out, std::int64_t n, Stream s) override {
    cuda::add(static_cast<const cuda::bf16*>(x), static_cast<const cuda::bf16*>(y), static_cast<cuda::bf16*>(out), n,
              detail::cuda_stream(s));
  }

 private:
  cublasHandle_t blas_ = nullptr;
};

}  // namespace

std::unique_ptr<DenseOps> make_cuda_dense_ops(Device& dev) { return std::make_unique<CudaDenseOps>(dev); }

}  // namespace layerbench::moe
