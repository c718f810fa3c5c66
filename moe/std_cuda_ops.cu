// CUDA primitives of the standard MoE block: bf16 activations, fp32 router, activation and
// accumulation; cuBLAS for the logits GEMM (fp32 output), the warp-per-token router of every
// family (moe/std_kernels.cu; a block-per-token kernel past 512 experts or k > 32), the expert
// MLPs as one cuBLAS GEMM per expert or one cuBLAS grouped GEMM (cublasGemmGroupedBatchedEx)
// per projection with the vectorised activation kernel between, row gathers/scatters, the
// weighted combine and the shared-expert gate.
#include "collectives/cuda_internal.hpp"
#include "collectives/error.hpp"
#include "moe/std_kernels.cuh"
#include "moe/std_ops.hpp"

#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <cfloat>
#include <map>
#include <tuple>
#include <vector>

namespace layerbench::moe {

namespace {

using bf16 = __nv_bfloat16;
constexpr int kRouteThreads = 128;

struct RouteArgs {
  int score_sigmoid, selection_bias, groups, topk_groups, group_top2, topk_before_score, normalize;
  float scale;
};

__device__ float sigmoidf_(float x) { return 1.0f / (1.0f + expf(-x)); }

// Block-wide argmax of v over [0, n) where ok(i); ties to the lower index. Result in *out.
template <class Ok>
__device__ void block_argmax(const float* v, int n, Ok ok, int* out, float* red_v, int* red_i) {
  float best = -FLT_MAX;
  int bi = -1;
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    if (ok(i) && (bi < 0 || v[i] > best)) {
      best = v[i];
      bi = i;
    }
  red_v[threadIdx.x] = best;
  red_i[threadIdx.x] = bi;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      const float ov = red_v[threadIdx.x + w];
      const int oi = red_i[threadIdx.x + w];
      const float mv = red_v[threadIdx.x];
      const int mi = red_i[threadIdx.x];
      if (oi >= 0 && (mi < 0 || ov > mv || (ov == mv && oi < mi))) {
        red_v[threadIdx.x] = ov;
        red_i[threadIdx.x] = oi;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = red_i[0];
  __syncthreads();
}

// One block per token: scores, selection values, group limit, top-k, weights.
__global__ void route_kernel(const float* logits, const float* bias, RouteArgs a, int E, int k, int* idx,
                             float* weight) {
  extern __shared__ float sm[];
  float* score = sm;
  float* sel = sm + E;
  float* gval = sm + 2 * E;
  char* flags = reinterpret_cast<char*>(sm + 3 * E);  // E allowed/taken flags, G kept flags
  __shared__ float red_v[kRouteThreads];
  __shared__ int red_i[kRouteThreads];
  __shared__ float stat;
  __shared__ int pick;
  const float* l = logits + static_cast<long long>(blockIdx.x) * E;
  if (!a.topk_before_score && !a.score_sigmoid) {  // softmax: max, then sum (thread 0, fixed order)
    for (int e = threadIdx.x; e < E; e += blockDim.x) score[e] = l[e];
    __syncthreads();
    if (threadIdx.x == 0) {
      float mx = -FLT_MAX;
      for (int e = 0; e < E; ++e) mx = fmaxf(mx, score[e]);
      stat = mx;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < E; e += blockDim.x) score[e] = expf(l[e] - stat);
    __syncthreads();
    if (threadIdx.x == 0) {
      float sum = 0;
      for (int e = 0; e < E; ++e) sum += score[e];
      stat = sum;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < E; e += blockDim.x) score[e] /= stat;
  } else {
    for (int e = threadIdx.x; e < E; e += blockDim.x) score[e] = a.topk_before_score ? l[e] : sigmoidf_(l[e]);
  }
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    sel[e] = score[e] + (a.selection_bias ? bias[e] : 0.0f);
    flags[e] = 1;  // allowed
  }
  __syncthreads();
  if (a.groups > 1) {
    const int G = a.groups, per = E / G;
    char* keep = flags + E;
    for (int g = threadIdx.x; g < G; g += blockDim.x) {
      float b1 = -FLT_MAX, b2 = -FLT_MAX;
      for (int e = g * per; e < (g + 1) * per; ++e) {
        const float v = sel[e];
        if (v > b1) {
          b2 = b1;
          b1 = v;
        } else if (v > b2) {
          b2 = v;
        }
      }
      gval[g] = a.group_top2 ? b1 + b2 : b1;
      keep[g] = 0;
    }
    __syncthreads();
    if (threadIdx.x == 0)
      for (int r = 0; r < a.topk_groups; ++r) {
        int best = -1;
        for (int g = 0; g < G; ++g)
          if (!keep[g] && (best < 0 || gval[g] > gval[best])) best = g;
        keep[best] = 1;
      }
    __syncthreads();
    for (int e = threadIdx.x; e < E; e += blockDim.x) flags[e] = keep[e / per];
    __syncthreads();
  }
  int* my_idx = idx + static_cast<long long>(blockIdx.x) * k;
  for (int j = 0; j < k; ++j) {
    block_argmax(sel, E, [&](int e) { return flags[e] == 1; }, &pick, red_v, red_i);
    if (threadIdx.x == 0) {
      my_idx[j] = pick;
      flags[pick] = 2;  // taken
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    float* w = weight + static_cast<long long>(blockIdx.x) * k;
    if (a.topk_before_score && !a.score_sigmoid) {
      float mx = -FLT_MAX, sum = 0;
      for (int j = 0; j < k; ++j) mx = fmaxf(mx, l[my_idx[j]]);
      for (int j = 0; j < k; ++j) {
        w[j] = expf(l[my_idx[j]] - mx);
        sum += w[j];
      }
      for (int j = 0; j < k; ++j) w[j] /= sum;
    } else if (a.topk_before_score) {
      for (int j = 0; j < k; ++j) w[j] = sigmoidf_(l[my_idx[j]]);
    } else {
      for (int j = 0; j < k; ++j) w[j] = score[my_idx[j]];
    }
    if (a.normalize) {
      float sum = 0;
      for (int j = 0; j < k; ++j) sum += w[j];
      sum = fmaxf(sum, 1e-20f);
      for (int j = 0; j < k; ++j) w[j] /= sum;
    }
    for (int j = 0; j < k; ++j) w[j] *= a.scale;
  }
}

__global__ void gather_kernel(const bf16* src, const int* map, bf16* dst, long long h, int scatter) {
  const long long row = blockIdx.x;
  const long long from = scatter ? row : map[row], to = scatter ? map[row] : row;
  for (long long q = threadIdx.x; q < h; q += blockDim.x) dst[to * h + q] = src[from * h + q];
}

__global__ void combine_kernel(const bf16* rows, const int* slot, const float* w, bf16* out, int k, long long h) {
  const long long t = blockIdx.x;
  for (long long q = threadIdx.x; q < h; q += blockDim.x) {
    float acc = 0;
    for (int j = 0; j < k; ++j) acc += w[t * k + j] * __bfloat162float(rows[static_cast<long long>(slot[t * k + j]) * h + q]);
    out[t * h + q] = __float2bfloat16(acc);
  }
}

__global__ void gate_kernel(bf16* y, const float* g, long long h) {
  const long long t = blockIdx.x;
  const float s = 1.0f / (1.0f + expf(-g[t]));
  for (long long q = threadIdx.x; q < h; q += blockDim.x) y[t * h + q] = __float2bfloat16(__bfloat162float(y[t * h + q]) * s);
}

// Padded slot j (cap rows) -> compact rows [off[j], off[j+1]) of the live experts, 16-byte copies.
__global__ void unpad_rows_kernel(const uint4* src, uint4* dst, const int* off, long long cap, long long h8) {
  const int j = blockIdx.x;
  const long long r0 = off[j], n = off[j + 1] - r0;
  for (long long i = blockIdx.y * static_cast<long long>(blockDim.x) + threadIdx.x; i < n * h8;
       i += static_cast<long long>(gridDim.y) * blockDim.x)
    dst[r0 * h8 + i] = src[static_cast<long long>(j) * cap * h8 + i];
}

class CudaStdOps final : public StdOps {
 public:
  explicit CudaStdOps(Device& dev) : dev_(dev), base_(make_cuda_ops(dev, ExpertPath::automatic)) {
    LB_CUBLAS_CHECK(cublasCreate(&blas_));
    LB_CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
    for (int i = 0; i < kSide; ++i) {
      LB_CUDA_CHECK(cudaStreamCreateWithFlags(&side_[i], cudaStreamNonBlocking));
      LB_CUDA_CHECK(cudaEventCreateWithFlags(&join_[i], cudaEventDisableTiming));
      LB_CUBLAS_CHECK(cublasCreate(&side_blas_[i]));
      LB_CUBLAS_CHECK(cublasSetStream(side_blas_[i], side_[i]));
    }
  }
  ~CudaStdOps() override {
    for (int i = 0; i < kSide; ++i) {
      cublasDestroy(side_blas_[i]);
      cudaEventDestroy(join_[i]);
      cudaStreamDestroy(side_[i]);
    }
    cudaEventDestroy(fork_);
    cublasDestroy(blas_);
  }
  Ops& base() override { return *base_; }

  void logits(const void* x, const void* w, float* out, std::int64_t n, std::int64_t h, std::int64_t e,
              Stream s) override {
    if (n == 0) return;
    const float one = 1.0f, zero = 0.0f;
    LB_CUBLAS_CHECK(cublasSetStream(blas_, detail::cuda_stream(s)));
    LB_CUBLAS_CHECK(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, int(e), int(n), int(h), &one, w, CUDA_R_16BF, int(h),
                                 x, CUDA_R_16BF, int(h), &zero, out, CUDA_R_32F, int(e), CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT));
  }
  void route(const float* logits, const float* bias, const RouterSpec& spec, std::int64_t n, std::int64_t e,
             std::int64_t k, std::int32_t* idx, float* weight, Stream s) override {
    if (n == 0) return;
    if (e <= cuda::kStdRouteMaxExperts && k <= cuda::kStdRouteMaxTopk) {
      cuda::std_route(logits, bias, spec, n, e, k, idx, weight, detail::cuda_stream(s));
      return;
    }
    const RouteArgs a{spec.score == Score::sigmoid, spec.selection_bias, int(spec.groups), int(spec.topk_groups),
                      spec.group_score == GroupScore::top2_sum, spec.topk_before_score, spec.normalize,
                      static_cast<float>(spec.scale)};
    const std::size_t smem = static_cast<std::size_t>(3 * e) * 4 + static_cast<std::size_t>(e + spec.groups) + 16;
    route_kernel<<<static_cast<unsigned>(n), kRouteThreads, smem, detail::cuda_stream(s)>>>(logits, bias, a, int(e),
                                                                                             int(k), idx, weight);
    LB_CUDA_CHECK_LAUNCH();
  }
  void gather_rows(const void* src, const std::int32_t* map, void* dst, std::int64_t rows, std::int64_t h,
                   Stream s) override {
    launch_gather(src, map, dst, rows, h, 0, s);
  }
  void scatter_rows(const void* src, const std::int32_t* map, void* dst, std::int64_t rows, std::int64_t h,
                    Stream s) override {
    launch_gather(src, map, dst, rows, h, 1, s);
  }
  void glu(const void* in, void* out, std::int64_t m, std::int64_t inter, const ActivationSpec& a, Stream s) override {
    cuda::std_glu(static_cast<const bf16*>(in), static_cast<bf16*>(out), m, inter, a, detail::cuda_stream(s));
  }
  void expert_mlp(const void* x, const void* w13, const void* wd, void* gu, void* act, void* y,
                  const std::vector<std::int64_t>& rows, std::int64_t h, std::int64_t inter, const ActivationSpec& a,
                  Stream s) override {
    const auto E = static_cast<std::int64_t>(rows.size());
    const StdExpertPath p = expert_path_for(h, inter, E);
    if (p == StdExpertPath::padded && h % 8 == 0) {
      padded_mlp(x, w13, wd, y, rows, h, inter, a, s);
      return;
    }
    if (p == StdExpertPath::multi_stream) {
      multi_stream_mlp(x, w13, wd, gu, act, y, rows, h, inter, a, s);
      return;
    }
    if (p != StdExpertPath::grouped || grouped_failed_) {
      StdOps::expert_mlp(x, w13, wd, gu, act, y, rows, h, inter, a, s);
      return;
    }
    std::int64_t total = 0;
    for (auto r : rows) total += r;
    if (total == 0) return;
    if (!grouped_gemm(w13, x, gu, rows, 2 * inter, h, 0, s)) {  // this cuBLAS refuses: per expert from now on
      grouped_failed_ = true;
      StdOps::expert_mlp(x, w13, wd, gu, act, y, rows, h, inter, a, s);
      return;
    }
    glu(gu, act, total, inter, a, s);
    LB_CHECK(grouped_gemm(wd, act, y, rows, h, inter, 1, s), "cuBLAS grouped GEMM (down) refused after gate/up ran");
  }
  void set_expert_path(StdExpertPath p) override { path_ = p; }
  StdExpertPath expert_path_for(std::int64_t h, std::int64_t inter, std::int64_t experts) const override {
    if (path_ != StdExpertPath::automatic) return path_;
    const auto it = table_.find({h, inter, experts});
    return it == table_.end() ? StdExpertPath::per_expert : it->second;
  }
  void set_expert_choice(std::int64_t h, std::int64_t inter, std::int64_t experts, StdExpertPath p) override {
    table_[{h, inter, experts}] = p;
  }
  void combine(const void* rows, const std::int32_t* slot, const float* weight, void* out, std::int64_t n,
               std::int64_t k, std::int64_t h, Stream s) override {
    if (n == 0) return;
    combine_kernel<<<static_cast<unsigned>(n), 256, 0, detail::cuda_stream(s)>>>(
        static_cast<const bf16*>(rows), slot, weight, static_cast<bf16*>(out), int(k), h);
    LB_CUDA_CHECK_LAUNCH();
  }
  void gate_scale(void* y, const float* g, std::int64_t n, std::int64_t h, Stream s) override {
    if (n == 0) return;
    gate_kernel<<<static_cast<unsigned>(n), 256, 0, detail::cuda_stream(s)>>>(static_cast<bf16*>(y), g, h);
    LB_CUDA_CHECK_LAUNCH();
  }
  std::string path(std::string_view c) const override {
    if (c == "router")
      return "cuBLAS GEMM (bf16 in, fp32 logits) + one scoring/selection kernel, one warp per token (every family)";
    if (c == "dispatch_permute") return "ids read back, permutation planned on the host, row-gather kernel";
    if (c == "ep_counts_exchange") return "NCCL all-to-all of int64 counts, host read-back";
    if (c == "ep_dispatch" || c == "ep_combine") return "NCCL all-to-allv (grouped send/recv)";
    if (c == "expert_compute" && grouped_failed_)
      return "row gather, one cuBLAS GEMM per local expert with rows (this cuBLAS refused the grouped GEMM), "
             "vectorised activation kernel, row scatter";
    if (c == "expert_compute")
      return path_ == StdExpertPath::grouped
                 ? "row gather, one cuBLAS grouped GEMM per projection over the experts with rows (gate/up, then "
                   "down), vectorised activation kernel, row scatter"
                 : path_ == StdExpertPath::padded
                 ? "row gather, every expert padded to the largest row count and one cuBLAS batched GEMM per "
                   "projection, vectorised activation kernel, live rows copied back, row scatter"
                 : path_ == StdExpertPath::multi_stream
                 ? "row gather, one cuBLAS GEMM per local expert with rows spread over 4 streams (gate/up, then "
                   "down), vectorised activation kernel, row scatter"
                 : path_ == StdExpertPath::per_expert
                       ? "row gather, one cuBLAS GEMM per local expert with rows (gate/up, then down), vectorised "
                         "activation kernel, row scatter"
                       : "row gather, per-expert cuBLAS GEMMs (one stream or 4) or one cuBLAS grouped GEMM per "
                         "projection (the fastest in layerbench-moe-kernels' table for the shape), vectorised "
                         "activation kernel, row scatter";
    if (c == "weighted_sum") return "per-token fp32 combine kernel";
    if (c == "shared_experts") return "cuBLAS GEMMs, activation kernel, gate GEMV + sigmoid scale";
    return "";
  }

 private:
  void launch_gather(const void* src, const std::int32_t* map, void* dst, std::int64_t rows, std::int64_t h,
                     int scatter, Stream s) {
    if (rows == 0) return;
    gather_kernel<<<static_cast<unsigned>(rows), 256, 0, detail::cuda_stream(s)>>>(
        static_cast<const bf16*>(src), map, static_cast<bf16*>(dst), h, scatter);
    LB_CUDA_CHECK_LAUNCH();
  }

  // C_e (rows_e, m) = B_e (rows_e, kk) . A_e (m, kk)^T for every expert with rows, in one
  // cublasGemmGroupedBatchedEx call (one group per such expert). The device pointer table of
  // gate/up (which = 0) and down (which = 1) is uploaded from host memory per call.
  bool grouped_gemm(const void* a, const void* b, void* c, const std::vector<std::int64_t>& rows, std::int64_t m,
                    std::int64_t kk, int which, Stream s) {
    const auto st = detail::cuda_stream(s);
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
  void multi_stream_mlp(const void* x, const void* w13, const void* wd, void* gu, void* act, void* y,
                        const std::vector<std::int64_t>& rows, std::int64_t h, std::int64_t inter,
                        const ActivationSpec& a, Stream s) {
    const auto st = detail::cuda_stream(s);
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
    glu(gu, act, total, inter, a, s);
    spread(wd, act, y, h, inter);
  }

  // Every expert with rows padded to the largest count (cap) and run as one cuBLAS batched GEMM
  // per projection (uniform shapes): gate/up reads each expert's compact rows in place (its cap
  // rows run into the next expert's, whose results land in padding; the last experts, whose cap
  // rows would pass the end, are staged into a padded buffer first), writes (slots, cap, 2I); the
  // activation and down run on the padded slots; the live rows are copied back compact.
  void padded_mlp(const void* x, const void* w13, const void* wd, void* y, const std::vector<std::int64_t>& rows,
                  std::int64_t h, std::int64_t inter, const ActivationSpec& a, Stream s) {
    const auto st = detail::cuda_stream(s);
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
    glu(P.gu.data(), P.act.data(), slots * cap, inter, a, s);
    LB_CUBLAS_CHECK(cublasGemmBatchedEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, int(h), int(cap), int(inter), &one, dp + 3 * S,
                                        CUDA_R_16BF, int(inter), dp + 4 * S, CUDA_R_16BF, int(inter), &zero,
                                        const_cast<void**>(dp + 5 * S), CUDA_R_16BF, int(h), int(slots),
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    const dim3 grid(static_cast<unsigned>(slots), static_cast<unsigned>(std::min<std::int64_t>((cap * h / 8 + 255) / 256, 64)));
    unpad_rows_kernel<<<grid, 256, 0, st>>>(static_cast<const uint4*>(P.y.data()), static_cast<uint4*>(y), P.doff.as<int>(),
                                            cap, h / 8);
    LB_CUDA_CHECK_LAUNCH();
  }

  struct PaddedState {
    Buffer gu, act, y, stage, dptr, doff;
    std::vector<const void*> ptr, uploaded_ptr;
    std::vector<int> off, uploaded_off;
  };
  PaddedState pad_;

  struct GroupedHost {
    std::vector<int> m, n, k, lda, ldb, ldc, size;
    std::vector<float> alpha, beta;
    std::vector<cublasOperation_t> ta, tb;
    std::vector<const void*> ptr, uploaded;
  };

  Device& dev_;
  std::unique_ptr<Ops> base_;
  cublasHandle_t blas_ = nullptr;
  StdExpertPath path_ = StdExpertPath::automatic;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, StdExpertPath> table_;
  GroupedHost host_[2];
  bool grouped_failed_ = false;
  static constexpr int kSide = 4;
  cudaStream_t side_[kSide] = {};
  cudaEvent_t fork_ = nullptr, join_[kSide] = {};
  cublasHandle_t side_blas_[kSide] = {};
  Buffer ptrs_[2];
};

}  // namespace

std::unique_ptr<StdOps> make_cuda_std_ops(Device& dev) { return std::make_unique<CudaStdOps>(dev); }

}  // namespace layerbench::moe
