// The standard block's expert-MLP paths (moe/standard/std_expert_paths.cuh).
#include "collectives/error.hpp"
#include "moe/standard/std_expert_paths.cuh"
#include "moe/hopper/std_grouped_sm90.cuh"
#include "moe/standard/std_kernels.cuh"

#include <cuda_bf16.h>

#include <algorithm>

namespace layerbench::moe::cuda {

namespace {

using bf16 = __nv_bfloat16;

// Padded slot j (cap rows) -> compact rows [off[j], off[j+1]) of the live experts, 16-byte copies.
__global__ void unpad_rows_kernel(const uint4* src, uint4* dst, const int* off, long long cap, long long h8) {
  const int j = blockIdx.x;
  const long long r0 = off[j], n = off[j + 1] - r0;
  for (long long i = blockIdx.y * static_cast<long long>(blockDim.x) + threadIdx.x; i < n * h8;
       i += static_cast<long long>(gridDim.y) * blockDim.x)
    dst[r0 * h8 + i] = src[static_cast<long long>(j) * cap * h8 + i];
}

}  // namespace

struct ExpertPaths::State {
  explicit State(Device& dev) : dev_(dev) {
    LB_CUBLAS_CHECK(cublasCreate(&blas_));
    LB_CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
    for (int i = 0; i < kSide; ++i) {
      LB_CUDA_CHECK(cudaStreamCreateWithFlags(&side_[i], cudaStreamNonBlocking));
      LB_CUDA_CHECK(cudaEventCreateWithFlags(&join_[i], cudaEventDisableTiming));
      LB_CUBLAS_CHECK(cublasCreate(&side_blas_[i]));
      LB_CUBLAS_CHECK(cublasSetStream(side_blas_[i], side_[i]));
    }
  }
  ~State() {
    for (int i = 0; i < kSide; ++i) {
      cublasDestroy(side_blas_[i]);
      cudaEventDestroy(join_[i]);
      cudaStreamDestroy(side_[i]);
    }
    cudaEventDestroy(fork_);
    cublasDestroy(blas_);
  }

  // C_e (rows_e, m) = B_e (rows_e, kk) . A_e (m, kk)^T for every expert with rows, in one
  // cublasGemmGroupedBatchedEx call (one group per such expert). The device pointer table of
  // gate/up (which = 0) and down (which = 1) is uploaded from host memory per call.
  bool grouped_gemm_(const void* a, const void* b, void* c, const std::vector<std::int64_t>& rows, std::int64_t m,
                    std::int64_t kk, int which, cudaStream_t st) {
    const std::size_t E = rows.size();
    auto& H = host_[which];
    H.m.clear(); H.n.clear(); H.k.clear(); H.lda.clear(); H.ldb.clear(); H.ldc.clear(); H.alpha.clear();
    H.beta.clear(); H.size.clear(); H.ta.clear(); H.tb.clear(); H.ptr.assign(3 * E, nullptr);
    std::int64_t off = 0;
    std::size_t g = 0;
    for (std::size_t e = 0; e < E; ++e) {
      const std::int64_t n = rows[e];
      if (n > 0) {
        H.ptr[g] = static_cast<const bf16*>(a) + static_cast<std::int64_t>(e) * m * kk;
        H.ptr[E + g] = static_cast<const bf16*>(b) + off * kk;
        H.ptr[2 * E + g] = static_cast<bf16*>(c) + off * m;
        H.m.push_back(int(m)); H.n.push_back(int(n)); H.k.push_back(int(kk));
        H.lda.push_back(int(kk)); H.ldb.push_back(int(kk)); H.ldc.push_back(int(m));
        H.alpha.push_back(1.0f); H.beta.push_back(0.0f); H.size.push_back(1);
        H.ta.push_back(CUBLAS_OP_T); H.tb.push_back(CUBLAS_OP_N);
        ++g;
      }
      off += n;
    }
    if (g == 0) return true;
    const std::size_t bytes = 3 * E * sizeof(void*);
    if (ptrs_[which].bytes() < bytes) {
      ptrs_[which] = dev_.alloc(bytes);
      H.uploaded.clear();
    }
    if (H.uploaded != H.ptr) {  // the same load repeats: the table is uploaded once per distinct plan
      LB_CUDA_CHECK(cudaMemcpyAsync(ptrs_[which].data(), H.ptr.data(), bytes, cudaMemcpyHostToDevice, st));
      H.uploaded = H.ptr;
    }
    auto** dp = static_cast<void**>(ptrs_[which].data());
    LB_CUBLAS_CHECK(cublasSetStream(blas_, st));
    const cublasStatus_t st2 = cublasGemmGroupedBatchedEx(
        blas_, H.ta.data(), H.tb.data(), H.m.data(), H.n.data(), H.k.data(), H.alpha.data(), dp, CUDA_R_16BF,
        H.lda.data(), dp + E, CUDA_R_16BF, H.ldb.data(), H.beta.data(), dp + 2 * E, CUDA_R_16BF, H.ldc.data(),
        static_cast<int>(g), H.size.data(), CUBLAS_COMPUTE_32F);
    if (st2 == CUBLAS_STATUS_NOT_SUPPORTED) return false;
    LB_CUBLAS_CHECK(st2);
    return true;
  }

  // The per-expert GEMMs spread round-robin over kSide streams (one cuBLAS handle each), forked
  // from and joined back into s around each projection: small experts' GEMMs overlap their tails.
  void multi_stream(const void* x, const void* w13, const void* wd, void* gu, void* act, void* y,
                        const std::vector<std::int64_t>& rows, std::int64_t h, std::int64_t inter,
                        const ActivationSpec& a, cudaStream_t st) {
    std::int64_t total = 0;
    for (auto r : rows) total += r;
    if (total == 0) return;
    auto spread = [&](const void* w, const void* in, void* out, std::int64_t m, std::int64_t kk) {
      LB_CUDA_CHECK(cudaEventRecord(fork_, st));
      for (int i = 0; i < kSide; ++i) LB_CUDA_CHECK(cudaStreamWaitEvent(side_[i], fork_, 0));
      const float one = 1.0f, zero = 0.0f;
      std::int64_t off = 0;
      int j = 0;
      for (std::size_t e = 0; e < rows.size(); ++e) {
        const std::int64_t n = rows[e];
        if (n > 0)
          LB_CUBLAS_CHECK(cublasGemmEx(side_blas_[j++ % kSide], CUBLAS_OP_T, CUBLAS_OP_N, int(m), int(n), int(kk), &one,
                                       static_cast<const bf16*>(w) + static_cast<std::int64_t>(e) * m * kk, CUDA_R_16BF,
                                       int(kk), static_cast<const bf16*>(in) + off * kk, CUDA_R_16BF, int(kk), &zero,
                                       static_cast<bf16*>(out) + off * m, CUDA_R_16BF, int(m), CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT));
        off += n;
      }
      for (int i = 0; i < kSide; ++i) {
        LB_CUDA_CHECK(cudaEventRecord(join_[i], side_[i]));
        LB_CUDA_CHECK(cudaStreamWaitEvent(st, join_[i], 0));
      }
    };
    spread(w13, x, gu, 2 * inter, h);
    std_glu(static_cast<const bf16*>(gu), static_cast<bf16*>(act), total, inter, a, st);
    spread(wd, act, y, h, inter);
  }

  // Every expert with rows padded to the largest count (cap) and run as one cuBLAS batched GEMM
  // per projection (uniform shapes): gate/up reads each expert's compact rows in place (its cap
  // rows run into the next expert's, whose results land in padding; the last experts, whose cap
  // rows would pass the end, are staged into a padded buffer first), writes (slots, cap, 2I); the
  // activation and down run on the padded slots; the live rows are copied back compact.
  void padded(const void* x, const void* w13, const void* wd, void* y, const std::vector<std::int64_t>& rows,
                  std::int64_t h, std::int64_t inter, const ActivationSpec& a, cudaStream_t st) {
    std::int64_t total = 0, cap = 0;
    for (auto r : rows) {
      total += r;
      cap = std::max(cap, r);
    }
    if (total == 0) return;
    auto& P = pad_;
    P.ptr.clear();
    P.off.assign(1, 0);
    std::vector<std::int64_t> tail;  // (slot, expert, compact offset) of staged experts
    std::int64_t off = 0;
    for (std::size_t e = 0; e < rows.size(); ++e) {
      if (rows[e] > 0) {
        if (off + cap > total) tail.insert(tail.end(), {static_cast<std::int64_t>(P.off.size() - 1), static_cast<std::int64_t>(e), off});
        P.off.push_back(static_cast<int>(off + rows[e]));
      }
      off += rows[e];
    }
    const auto slots = static_cast<std::int64_t>(P.off.size() - 1);
    const std::size_t es = 2;
    auto grow = [&](Buffer& b, std::size_t bytes) {
      if (b.bytes() < bytes) b = dev_.alloc(bytes);
    };
    grow(P.gu, static_cast<std::size_t>(slots * cap * 2 * inter) * es);
    grow(P.act, static_cast<std::size_t>(slots * cap * inter) * es);
    grow(P.y, static_cast<std::size_t>(slots * cap * h) * es);
    grow(P.stage, static_cast<std::size_t>(std::max<std::size_t>(tail.size() / 3, 1) * cap * h) * es);
    // pointer table: [A13 | B13 | C13 | Ad | Bd | Cd], slots each
    std::vector<const void*> A13, B13, C13, Ad, Bd, Cd;
    std::size_t t = 0;
    for (std::int64_t j = 0, e = 0; e < static_cast<std::int64_t>(rows.size()); ++e) {
      if (rows[static_cast<std::size_t>(e)] == 0) continue;
      A13.push_back(static_cast<const bf16*>(w13) + e * 2 * inter * h);
      const bool staged = t < tail.size() && tail[t] == j;
      B13.push_back(staged ? static_cast<const bf16*>(P.stage.data()) + static_cast<std::int64_t>(t / 3) * cap * h
                           : static_cast<const bf16*>(x) + static_cast<std::int64_t>(P.off[static_cast<std::size_t>(j)]) * h);
      if (staged) t += 3;
      C13.push_back(static_cast<bf16*>(P.gu.data()) + j * cap * 2 * inter);
      Ad.push_back(static_cast<const bf16*>(wd) + e * h * inter);
      Bd.push_back(static_cast<bf16*>(P.act.data()) + j * cap * inter);
      Cd.push_back(static_cast<bf16*>(P.y.data()) + j * cap * h);
      ++j;
    }
    for (auto* v : {&A13, &B13, &C13, &Ad, &Bd, &Cd}) P.ptr.insert(P.ptr.end(), v->begin(), v->end());
    const std::size_t pbytes = P.ptr.size() * sizeof(void*), obytes = P.off.size() * 4;
    grow(P.dptr, pbytes);
    grow(P.doff, obytes);
    if (P.ptr != P.uploaded_ptr || P.off != P.uploaded_off) {  // a repeated load uploads nothing
      LB_CUDA_CHECK(cudaMemcpyAsync(P.dptr.data(), P.ptr.data(), pbytes, cudaMemcpyHostToDevice, st));
      LB_CUDA_CHECK(cudaMemcpyAsync(P.doff.data(), P.off.data(), obytes, cudaMemcpyHostToDevice, st));
      P.uploaded_ptr = P.ptr;
      P.uploaded_off = P.off;
    }
    for (std::size_t q = 0; q < tail.size(); q += 3) {  // stage the last experts' rows
      const std::int64_t n = rows[static_cast<std::size_t>(tail[q + 1])];
      LB_CUDA_CHECK(cudaMemcpyAsync(static_cast<bf16*>(P.stage.data()) + static_cast<std::int64_t>(q / 3) * cap * h,
                                    static_cast<const bf16*>(x) + tail[q + 2] * h, static_cast<std::size_t>(n * h) * es,
                                    cudaMemcpyDeviceToDevice, st));
    }
    auto** dp = static_cast<const void**>(P.dptr.data());
    const auto S = static_cast<std::size_t>(slots);
    const float one = 1.0f, zero = 0.0f;
    LB_CUBLAS_CHECK(cublasSetStream(blas_, st));
    LB_CUBLAS_CHECK(cublasGemmBatchedEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, int(2 * inter), int(cap), int(h), &one, dp,
                                        CUDA_R_16BF, int(h), dp + S, CUDA_R_16BF, int(h), &zero,
                                        const_cast<void**>(dp + 2 * S), CUDA_R_16BF, int(2 * inter), int(slots),
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    std_glu(P.gu.as<bf16>(), P.act.as<bf16>(), slots * cap, inter, a, st);
    LB_CUBLAS_CHECK(cublasGemmBatchedEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, int(h), int(cap), int(inter), &one, dp + 3 * S,
                                        CUDA_R_16BF, int(inter), dp + 4 * S, CUDA_R_16BF, int(inter), &zero,
                                        const_cast<void**>(dp + 5 * S), CUDA_R_16BF, int(h), int(slots),
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    const dim3 grid(static_cast<unsigned>(slots), static_cast<unsigned>(std::min<std::int64_t>((cap * h / 8 + 255) / 256, 64)));
    unpad_rows_kernel<<<grid, 256, 0, st>>>(static_cast<const uint4*>(P.y.data()), static_cast<uint4*>(y), P.doff.as<int>(),
                                            cap, h / 8);
    LB_CUDA_CHECK_LAUNCH();
  }

  bool wgmma(const void* x, const void* w13, const void* wd, void* act, void* y, const std::vector<std::int64_t>& rows,
             std::int64_t h, std::int64_t inter, const ActivationSpec& a, cudaStream_t st) {
    const auto E = static_cast<std::int64_t>(rows.size());
    if (!std_grouped_sm90_supported(h, inter, E)) return false;
    std::int64_t total = 0;
    for (auto r : rows) total += r;
    if (total == 0) return true;
    auto& W = wg_;
    W.counts.assign(rows.begin(), rows.end());
    const auto cbytes = static_cast<std::size_t>(E) * sizeof(int);
    const auto wbytes = static_cast<std::size_t>(std_grouped_work_bytes(total, E, h, inter));
    if (W.dcounts.bytes() < cbytes) {
      W.dcounts = dev_.alloc(cbytes);
      W.uploaded.clear();
    }
    if (W.work.bytes() < wbytes) W.work = dev_.alloc(wbytes);
    if (W.counts != W.uploaded) {  // a repeated load uploads nothing
      LB_CUDA_CHECK(cudaMemcpyAsync(W.dcounts.data(), W.counts.data(), cbytes, cudaMemcpyHostToDevice, st));
      W.uploaded = W.counts;
    }
    std_expert_mlp_sm90(static_cast<const bf16*>(x), static_cast<const bf16*>(w13), static_cast<const bf16*>(wd),
                        static_cast<bf16*>(act), static_cast<bf16*>(y), W.dcounts.as<int>(), E, total, h, inter, a,
                        std_grouped_work(W.work.data(), total, E, h, inter), st);
    return true;
  }

  struct WgmmaState {
    Buffer dcounts, work;
    std::vector<int> counts, uploaded;
  };

  struct PaddedState {
    Buffer gu, act, y, stage, dptr, doff;
    std::vector<const void*> ptr, uploaded_ptr;
    std::vector<int> off, uploaded_off;
  };

  struct GroupedHost {
    std::vector<int> m, n, k, lda, ldb, ldc, size;
    std::vector<float> alpha, beta;
    std::vector<cublasOperation_t> ta, tb;
    std::vector<const void*> ptr, uploaded;
  };

  Device& dev_;
  cublasHandle_t blas_ = nullptr;
  GroupedHost host_[2];
  Buffer ptrs_[2];
  PaddedState pad_;
  WgmmaState wg_;
  static constexpr int kSide = 4;
  cudaStream_t side_[kSide] = {};
  cudaEvent_t fork_ = nullptr, join_[kSide] = {};
  cublasHandle_t side_blas_[kSide] = {};
};

ExpertPaths::ExpertPaths(Device& dev) : s_(std::make_unique<State>(dev)) {}
ExpertPaths::~ExpertPaths() = default;

bool ExpertPaths::grouped(const void* x, const void* w13, const void* wd, void* gu, void* act, void* y,
                          const std::vector<std::int64_t>& rows, std::int64_t h, std::int64_t inter,
                          const ActivationSpec& a, cudaStream_t st) {
  std::int64_t total = 0;
  for (auto r : rows) total += r;
  if (total == 0) return true;
  if (!s_->grouped_gemm_(w13, x, gu, rows, 2 * inter, h, 0, st)) return false;
  std_glu(static_cast<const bf16*>(gu), static_cast<bf16*>(act), total, inter, a, st);
  LB_CHECK(s_->grouped_gemm_(wd, act, y, rows, h, inter, 1, st), "cuBLAS grouped GEMM (down) refused after gate/up ran");
  return true;
}

void ExpertPaths::multi_stream(const void* x, const void* w13, const void* wd, void* gu, void* act, void* y,
                               const std::vector<std::int64_t>& rows, std::int64_t h, std::int64_t inter,
                               const ActivationSpec& a, cudaStream_t st) {
  s_->multi_stream(x, w13, wd, gu, act, y, rows, h, inter, a, st);
}

bool ExpertPaths::wgmma(const void* x, const void* w13, const void* wd, void* act, void* y,
                        const std::vector<std::int64_t>& rows, std::int64_t h, std::int64_t inter,
                        const ActivationSpec& a, cudaStream_t st) {
  return s_->wgmma(x, w13, wd, act, y, rows, h, inter, a, st);
}

void ExpertPaths::padded(const void* x, const void* w13, const void* wd, void* y, const std::vector<std::int64_t>& rows,
                         std::int64_t h, std::int64_t inter, const ActivationSpec& a, cudaStream_t st) {
  s_->padded(x, w13, wd, y, rows, h, inter, a, st);
}

}  // namespace layerbench::moe::cuda
