// FP8 GEMMs through cuBLASLt (moe/fp8_lt.hpp). Row-major C[m, n] = A[m, k] W[n, k]^T is, in
// cuBLASLt's column-major terms, C^T (n x m) = W (k x n stored, transposed) x A^T (k x m stored):
// cuBLASLt's A operand is W with op T, its B operand is A with op N (the "TN" layout FP8 needs),
// so the outer-vector scales are W's per-channel scales (cuBLASLt's A, n values) and A's per-row
// scales (cuBLASLt's B, m values).
#include "collectives/cuda_internal.hpp"
#include "collectives/error.hpp"
#include "moe/dense_ops.hpp"
#include "moe/fp8_lt.hpp"
#include "moe/fp8_quant.cuh"
#include "moe/init.hpp"

#include <cublasLt.h>
#include <cuda_bf16.h>

#include <fmt/format.h>

#include <memory>
#include <string>

namespace layerbench::moe {

namespace {

#define LT_TRY(call)                                              \
  do {                                                            \
    const cublasStatus_t st_ = (call);                            \
    if (st_ != CUBLAS_STATUS_SUCCESS) return fail(#call, st_);    \
  } while (0)

// A planned cuBLASLt FP8 matmul: its descriptors and the heuristic's first algorithm.
struct LtPlan {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulHeuristicResult_t algo{};
  std::size_t workspace = 0;
  std::string error;  // "" when planned
  void* placeholder = nullptr;  // the scale pointers while planning

  LtPlan() = default;
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;
  ~LtPlan() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (op) cublasLtMatmulDescDestroy(op);
    if (handle) cublasLtDestroy(handle);
    if (placeholder) cudaFree(placeholder);
  }

  bool fail(const char* what, cublasStatus_t st) {
    error = fmt::format("cuBLASLt: {} returned {}", what, static_cast<int>(st));
    return false;
  }

  // Scale pointers are set per call (run); the plan needs only the modes.
  bool plan(std::int64_t m, std::int64_t n, std::int64_t k) {
    int dev = 0, major = 0, minor = 0;
    LB_CUDA_CHECK(cudaGetDevice(&dev));
    LB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    LB_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    if (major * 10 + minor < 89) {
      error = fmt::format("cuBLASLt runs e4m3 GEMMs on compute capability 8.9 or newer, this device is {}.{}", major,
                          minor);
      return false;
    }
    if (m <= 0 || n <= 0 || k <= 0 || k % 16 != 0 || n % 16 != 0) {
      error = fmt::format("cuBLASLt e4m3 GEMMs need positive sizes with k and n multiples of 16, not m {} n {} k {}",
                          m, n, k);
      return false;
    }
    LT_TRY(cublasLtCreate(&handle));
    LT_TRY(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    const std::int8_t fast = 1;
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
    const auto outer = static_cast<std::int32_t>(CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F);
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &outer, sizeof outer));
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &outer, sizeof outer));
    // The heuristic refuses a scale mode whose pointers are unset (it does not read them): a
    // device allocation of its own stands in until run() sets the call's.
    LB_CUDA_CHECK(cudaMalloc(&placeholder, 256));
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &placeholder, sizeof placeholder));
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &placeholder, sizeof placeholder));
    const auto M = static_cast<std::uint64_t>(m), N = static_cast<std::uint64_t>(n), K = static_cast<std::uint64_t>(k);
    LT_TRY(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, K, N, k));  // W: k x n column-major = W[n, k] row-major
    LT_TRY(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, K, M, k));  // A: k x m column-major = A[m, k] row-major
    LT_TRY(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, N, M, n));     // C^T: n x m column-major = C[m, n] row-major
    workspace = std::size_t{32} << 20;
    LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                sizeof workspace));
    int found = 0;
    LT_TRY(cublasLtMatmulAlgoGetHeuristic(handle, op, la, lb, lc, lc, pref, 1, &algo, &found));
    if (found < 1) {
      error = fmt::format("cuBLASLt has no e4m3 algorithm with rowwise scales for m {} n {} k {} on this device", m, n, k);
      return false;
    }
    return true;
  }
};
#undef LT_TRY

class CudaFp8LtGemm final : public Fp8LtGemm {
 public:
  CudaFp8LtGemm(Device& dev, std::int64_t m, std::int64_t n, std::int64_t k) : m_(m), n_(n), k_(k) {
    if (!plan_.plan(m, n, k)) throw UsageError("FP8 GEMM: " + plan_.error);
    ws_ = dev.alloc(plan_.workspace);
  }

  void run(const void* a, const float* sa, const void* w, const float* sw, void* c, Stream s) override {
    LB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan_.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sw, sizeof sw));
    LB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan_.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sa, sizeof sa));
    const float alpha = 1.0f, beta = 0.0f;
    LB_CUBLAS_CHECK(cublasLtMatmul(plan_.handle, plan_.op, &alpha, w, plan_.la, a, plan_.lb, &beta, c, plan_.lc, c,
                                   plan_.lc, &plan_.algo.algo, ws_.data(), plan_.workspace, detail::cuda_stream(s)));
  }

  std::string describe() const override {
    return fmt::format("cuBLASLt e4m3 x e4m3 -> bf16, rowwise (outer-vector) fp32 scales, fast accumulation, "
                       "{} x {} x {}",
                       m_, n_, k_);
  }

 private:
  std::int64_t m_, n_, k_;
  LtPlan plan_;
  Buffer ws_;
};

class CudaFp8DenseReference final : public Fp8DenseReference {
 public:
  CudaFp8DenseReference(Device& dev, std::int64_t g, std::uint64_t seed) : gemm_(dev, g, g, g) {
    const auto n = static_cast<std::size_t>(g * g);
    a_ = dev.alloc(n);
    b_ = dev.alloc(n);
    c_ = dev.alloc(2 * n);
    sa_ = dev.alloc(4 * static_cast<std::size_t>(g));
    sb_ = dev.alloc(4 * static_cast<std::size_t>(g));
    Buffer tmp = dev.alloc(2 * n);
    auto ops = make_cuda_dense_ops(dev);
    const Stream s = dev.compute_stream();
    const auto st = detail::cuda_stream(s);
    // The bf16 reference's seeded operands (moe/init.hpp), quantized rowwise.
    ops->fill(tmp.data(), DType::bf16, {.seed = seed, .tensor = kDenseA, .scale = 1.0f, .rows = g, .cols = g, .full_cols = g, .ld = g}, s);
    cuda::fp8_quantize_rows(tmp.as<__nv_bfloat16>(), g, g, a_.as<std::uint8_t>(), sa_.as<float>(), st);
    ops->fill(tmp.data(), DType::bf16, {.seed = seed, .tensor = kDenseB, .scale = 1.0f, .rows = g, .cols = g, .full_cols = g, .ld = g}, s);
    cuda::fp8_quantize_rows(tmp.as<__nv_bfloat16>(), g, g, b_.as<std::uint8_t>(), sb_.as<float>(), st);
    dev.synchronize(s);
  }
  void run(Stream s) override { gemm_.run(a_.data(), sa_.as<float>(), b_.data(), sb_.as<float>(), c_.data(), s); }
  std::string describe() const override { return gemm_.describe(); }

 private:
  CudaFp8LtGemm gemm_;
  Buffer a_, b_, c_, sa_, sb_;
};

}  // namespace

std::string fp8_lt_unsupported(std::int64_t m, std::int64_t n, std::int64_t k) {
  LtPlan p;
  return p.plan(m, n, k) ? "" : p.error;
}

std::unique_ptr<Fp8LtGemm> make_fp8_lt_gemm(Device& dev, std::int64_t m, std::int64_t n, std::int64_t k) {
  return std::make_unique<CudaFp8LtGemm>(dev, m, n, k);
}

std::unique_ptr<Fp8DenseReference> make_fp8_dense_reference(Device& dev, std::int64_t g, std::uint64_t seed) {
  return std::make_unique<CudaFp8DenseReference>(dev, g, seed);
}

}  // namespace layerbench::moe
