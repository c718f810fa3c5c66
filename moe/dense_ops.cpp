// Host dense primitives (moe/dense_ops.hpp): fp32, plain loops in a fixed order.
#include "moe/dense_ops.hpp"
#include "moe/fp8_lt.hpp"

#include "collectives/error.hpp"

namespace layerbench::moe {

namespace {

class HostDenseOps final : public DenseOps {
 public:
  DType act() const override { return DType::fp32; }
  std::string describe() const override { return "host fp32 loops"; }

  void fill(void* dst, DType t, const SeededSlice& f, Stream) override {
    LB_CHECK(t == DType::fp32, "host tensors are fp32");
    auto* out = static_cast<float*>(dst);
    for (std::int64_t r = 0; r < f.rows; ++r)
      for (std::int64_t c = 0; c < f.cols; ++c)
        out[r * f.ld + c] = seeded_value(
            f.seed, f.tensor, static_cast<std::uint64_t>((f.row0 + r) * f.full_cols + f.col0 + c), f.scale);
  }

  void linear(const void* a, const void* w, void* c, const GemmShape& g, bool accumulate, Stream) override {
    const std::int64_t m = g.m, n = g.n, k = g.k, lda = g.lda, ldw = g.ldw, ldc = g.ldc;
    const auto* A = static_cast<const float*>(a);
    const auto* W = static_cast<const float*>(w);
    auto* C = static_cast<float*>(c);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        float acc = 0;
        const float* ar = A + i * lda;
        const float* wr = W + j * ldw;
        for (std::int64_t q = 0; q < k; ++q) acc += ar[q] * wr[q];
        C[i * ldc + j] = accumulate ? C[i * ldc + j] + acc : acc;
      }
  }

  void add(const void* x, const void* y, void* out, std::int64_t n, Stream) override {
    const auto* a = static_cast<const float*>(x);
    const auto* b = static_cast<const float*>(y);
    auto* o = static_cast<float*>(out);
    for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] + b[i];
  }
};

}  // namespace

std::unique_ptr<DenseOps> make_host_dense_ops() { return std::make_unique<HostDenseOps>(); }

#if !defined(LAYERBENCH_HAVE_CUDA)
std::unique_ptr<DenseOps> make_cuda_dense_ops(Device&) {
  throw UsageError("this build has no CUDA support (use --backend host)");
}
std::string fp8_lt_unsupported(std::int64_t, std::int64_t, std::int64_t) { return "this build has no CUDA support"; }
std::unique_ptr<Fp8LtGemm> make_fp8_lt_gemm(Device&, std::int64_t, std::int64_t, std::int64_t) {
  throw UsageError("this build has no CUDA support (use --backend host)");
}
std::unique_ptr<Fp8DenseReference> make_fp8_dense_reference(Device&, std::int64_t, std::uint64_t) {
  throw UsageError("this build has no CUDA support (use --backend host)");
}
#endif

}  // namespace layerbench::moe
