// CUDA primitives of the standard MoE block: bf16 activations, fp32 router, activation and
// accumulation; cuBLAS for the logits GEMM (fp32 output), the warp-per-token router of every
// family (moe/standard/std_kernels.cu; a block-per-token kernel past 512 experts or k > 32), the expert
// MLPs as one cuBLAS GEMM per expert or one cuBLAS grouped GEMM (cublasGemmGroupedBatchedEx)
// per projection with the vectorised activation kernel between, row gathers/scatters, the
// weighted combine and the shared-expert gate.
#include "collectives/cuda_internal.hpp"
#include "collectives/error.hpp"
#include "moe/standard/std_expert_paths.cuh"
#include "moe/hopper/std_grouped_sm90.cuh"
#include "moe/standard/std_kernels.cuh"
#include "moe/standard/std_ops.hpp"

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

class CudaStdOps final : public StdOps {
 public:
  explicit CudaStdOps(Device& dev) : dense_(make_cuda_dense_ops(dev)), paths_(dev) {
    LB_CUBLAS_CHECK(cublasCreate(&blas_));
  }
  ~CudaStdOps() override { cublasDestroy(blas_); }
  DenseOps& dense() override { return *dense_; }

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
    const auto st = detail::cuda_stream(s);
    const auto E = static_cast<std::int64_t>(rows.size());
    StdExpertPath p = expert_path_for(h, inter, E);
    if (path_ == StdExpertPath::automatic && !table_.count({h, inter, E}))  // the default, decided on this call's rows
      p = default_expert_path(cuda::std_grouped_sm90_supported(h, inter, E), E, rows);
    if (p == StdExpertPath::wgmma) wgmma_ran_ = paths_.wgmma(x, w13, wd, act, y, rows, h, inter, a, st);
    if (p == StdExpertPath::wgmma && wgmma_ran_) {
      // done: tiles, gate/up with the activation, down
    } else if (p == StdExpertPath::padded && h % 8 == 0) {
      paths_.padded(x, w13, wd, y, rows, h, inter, a, st);
    } else if (p == StdExpertPath::multi_stream) {
      paths_.multi_stream(x, w13, wd, gu, act, y, rows, h, inter, a, st);
    } else if (p != StdExpertPath::grouped || grouped_failed_ ||
               !paths_.grouped(x, w13, wd, gu, act, y, rows, h, inter, a, st)) {
      grouped_failed_ = grouped_failed_ || p == StdExpertPath::grouped;  // this cuBLAS refused: per expert
      StdOps::expert_mlp(x, w13, wd, gu, act, y, rows, h, inter, a, s);
    }
  }
  void set_expert_path(StdExpertPath p) override { path_ = p; }
  StdExpertPath expert_path_for(std::int64_t h, std::int64_t inter, std::int64_t experts) const override {
    if (path_ != StdExpertPath::automatic) return path_;
    const auto it = table_.find({h, inter, experts});
    return it == table_.end() ? default_expert_path(cuda::std_grouped_sm90_supported(h, inter, experts), experts, {})
                              : it->second;
  }
  std::string expert_choice_reason(std::int64_t h, std::int64_t inter, std::int64_t experts) const override {
    if (path_ != StdExpertPath::automatic) return "chosen by the caller";
    if (table_.count({h, inter, experts})) return "the --expert-table row for this shape";
    return default_expert_path_reason(cuda::std_grouped_sm90_supported(h, inter, experts), experts);
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
    if (c == "expert_compute" && path_ == StdExpertPath::wgmma)
      return wgmma_ran_ ? "row gather, tile list built on the device from the counts, one persistent TMA + wgmma grouped "
                          "GEMM per projection (the activation in the gate/up epilogue), row scatter"
                        : "row gather, one cuBLAS GEMM per local expert with rows (the wgmma kernels need a compute "
                          "capability 9.0 device and hidden, inter multiples of 8), activation kernel, row scatter";
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
                       : "row gather, per-expert cuBLAS GEMMs (one stream or 4), one cuBLAS grouped or padded "
                         "batched GEMM per projection with an activation kernel, or the grouped wgmma kernels with "
                         "the activation fused (a --expert-table row for the shape, else the device's default: the "
                         "grouped wgmma kernels on compute capability 9.0), row scatter";
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

  std::unique_ptr<DenseOps> dense_;
  cuda::ExpertPaths paths_;
  cublasHandle_t blas_ = nullptr;
  StdExpertPath path_ = StdExpertPath::automatic;
  bool wgmma_ran_ = false;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, StdExpertPath> table_;
  bool grouped_failed_ = false;
};

}  // namespace

std::unique_ptr<StdOps> make_cuda_std_ops(Device& dev) { return std::make_unique<CudaStdOps>(dev); }

}  // namespace layerbench::moe
