// CUDA kernels of the standard MoE block: the warp-per-token router of every family and the
// vectorised GLU activations (moe/standard/std_kernels.cuh).
//
// Router layout. Expert e of a token lives in lane e % 32, register slot e / 32 (V slots, V a
// power of two with 32 V >= E), so the logit loads are coalesced and a token costs one warp:
// no shared-memory round trip except for the group limit (per-warp selection values and group
// flags). Reductions are warp shuffles; a selection round is each lane's best (ties to the lower
// expert id) then a 5-step (value, id) butterfly. Sums (softmax, renormalisation) are tree sums,
// so they differ from the host's sequential sums by rounding only.
#include "collectives/error.hpp"
#include "moe/fp8_device.cuh"
#include "moe/hopper/std_glu.cuh"
#include "moe/standard/std_kernels.cuh"

#include <cuda_fp8.h>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>

namespace layerbench::moe::cuda {

namespace {

using bf16 = __nv_bfloat16;
constexpr int kWarps = 4;  // tokens per block

struct RouteArgs {
  int sigmoid, bias, groups, topk_groups, top2, before, normalize;
  float scale;
};

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// (value, id) of the warp's best: larger value, ties to the lower id; id INT_MAX = none.
__device__ __forceinline__ void warp_argmax(float& v, int& id) {
  for (int o = 16; o > 0; o /= 2) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, id, o);
    if (oi != INT_MAX && (id == INT_MAX || ov > v || (ov == v && oi < id))) {
      v = ov;
      id = oi;
    }
  }
}
__device__ __forceinline__ float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

template <int V>
__global__ void __launch_bounds__(kWarps * 32) route_warp(const float* __restrict__ logits,
                                                          const float* __restrict__ bias, RouteArgs a, int n, int E,
                                                          int k, int* __restrict__ idx, float* __restrict__ weight) {
  extern __shared__ float smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long t = static_cast<long long>(blockIdx.x) * kWarps + warp;
  if (t >= n) return;  // whole warps leave; no block-wide barrier below
  const float* l = logits + t * E;
  float lg[V], sc[V], sel[V];
  unsigned ok = 0;  // bit v: expert lane + 32 v exists and may be selected
#pragma unroll
  for (int v = 0; v < V; ++v) {
    const int e = lane + 32 * v;
    lg[v] = e < E ? l[e] : -FLT_MAX;
    if (e < E) ok |= 1u << v;
  }
  // 1. scores.
  if (a.before) {
#pragma unroll
    for (int v = 0; v < V; ++v) sc[v] = lg[v];
  } else if (a.sigmoid) {
#pragma unroll
    for (int v = 0; v < V; ++v) sc[v] = sigm(lg[v]);
  } else {
    float mx = -FLT_MAX;
#pragma unroll
    for (int v = 0; v < V; ++v) mx = fmaxf(mx, lg[v]);
    mx = warp_max(mx);
    float s = 0;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      sc[v] = (ok >> v & 1u) ? expf(lg[v] - mx) : 0.0f;
      s += sc[v];
    }
    s = warp_sum(s);
#pragma unroll
    for (int v = 0; v < V; ++v) sc[v] /= s;
  }
  // 2. selection values.
#pragma unroll
  for (int v = 0; v < V; ++v) {
    const int e = lane + 32 * v;
    sel[v] = sc[v] + ((a.bias && e < E) ? bias[e] : 0.0f);
  }
  // 3. group limit: group values from the per-warp copy, the topk_groups best kept.
  if (a.groups > 1) {
    float* ws = smem + static_cast<long long>(warp) * (E + a.groups);
    float* wg = ws + E;
    const int G = a.groups, per = E / G;
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (ok >> v & 1u) ws[lane + 32 * v] = sel[v];
    __syncwarp();
    float gv[V];
    unsigned gok = 0;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const int g = lane + 32 * v;
      gv[v] = -FLT_MAX;
      if (g < G) {
        float b1 = -FLT_MAX, b2 = -FLT_MAX;
        for (int e = g * per; e < (g + 1) * per; ++e) {
          const float x = ws[e];
          if (x > b1) {
            b2 = b1;
            b1 = x;
          } else if (x > b2) {
            b2 = x;
          }
        }
        gv[v] = a.top2 ? b1 + b2 : b1;
        gok |= 1u << v;
      }
    }
    unsigned keep = 0;
    for (int r = 0; r < a.topk_groups; ++r) {
      float bv = -FLT_MAX;
      int bi = INT_MAX;
#pragma unroll
      for (int v = 0; v < V; ++v)
        if ((gok >> v & 1u) && (bi == INT_MAX || gv[v] > bv)) {
          bv = gv[v];
          bi = lane + 32 * v;
        }
      warp_argmax(bv, bi);
#pragma unroll
      for (int v = 0; v < V; ++v)
        if (bi == lane + 32 * v) {
          gok &= ~(1u << v);
          keep |= 1u << v;
        }
    }
    __syncwarp();  // every lane has read ws before it is overwritten with the kept flags
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (lane + 32 * v < G) wg[lane + 32 * v] = (keep >> v & 1u) ? 1.0f : 0.0f;
    __syncwarp();
#pragma unroll
    for (int v = 0; v < V; ++v)
      if ((ok >> v & 1u) && wg[(lane + 32 * v) / per] == 0.0f) ok &= ~(1u << v);
  }
  // 4. top-k; lane j keeps the j-th pick (its id, score and logit).
  int my_id = 0;
  float my_sc = 0, my_lg = -FLT_MAX;
  for (int j = 0; j < k; ++j) {
    float bv = -FLT_MAX, bs = 0, bl = 0;
    int bi = INT_MAX;
#pragma unroll
    for (int v = 0; v < V; ++v)
      if ((ok >> v & 1u) && (bi == INT_MAX || sel[v] > bv)) {
        bv = sel[v];
        bi = lane + 32 * v;
      }
    warp_argmax(bv, bi);
    const int owner = bi % 32;
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (bi == lane + 32 * v) {
        ok &= ~(1u << v);
        bs = sc[v];
        bl = lg[v];
      }
    bs = __shfl_sync(0xffffffffu, bs, owner);
    bl = __shfl_sync(0xffffffffu, bl, owner);
    if (lane == j) {
      my_id = bi;
      my_sc = bs;
      my_lg = bl;
    }
  }
  // 5. weights over lanes < k.
  const bool mine = lane < k;
  float w;
  if (a.before && !a.sigmoid) {
    const float mx = warp_max(mine ? my_lg : -FLT_MAX);
    w = mine ? expf(my_lg - mx) : 0.0f;
    w /= warp_sum(w);
  } else if (a.before) {
    w = mine ? sigm(my_lg) : 0.0f;
  } else {
    w = mine ? my_sc : 0.0f;
  }
  if (a.normalize) w /= fmaxf(warp_sum(w), 1e-20f);
  if (mine) {
    idx[t * k + lane] = my_id;
    weight[t * k + lane] = w * a.scale;
  }
}

template <int V>
void launch_route(const float* logits, const float* bias, const RouteArgs& a, std::int64_t n, std::int64_t e,
                  std::int64_t k, int* idx, float* weight, cudaStream_t st) {
  const std::size_t smem = a.groups > 1 ? static_cast<std::size_t>(kWarps) * static_cast<std::size_t>(e + a.groups) * 4 : 0;
  const auto blocks = static_cast<unsigned>((n + kWarps - 1) / kWarps);
  route_warp<V><<<blocks, kWarps * 32, smem, st>>>(logits, bias, a, static_cast<int>(n), static_cast<int>(e),
                                                     static_cast<int>(k), idx, weight);
  LB_CUDA_CHECK_LAUNCH();
}

__device__ __forceinline__ float glu1(float g, float u, int clamped, float alpha, float limit) {
  return clamped ? std_glu_value<true>(g, u, alpha, limit) : std_glu_value<false>(g, u, alpha, limit);
}

// 8 outputs per thread step (I % 8 == 0): 16-byte loads of gate and up, one 16-byte store.
__global__ void glu_vec8(const bf16* __restrict__ in, bf16* __restrict__ out, long long m, long long inter8,
                         int clamped, float alpha, float limit) {
  const long long n = m * inter8;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = i / inter8, c = i % inter8;
    const uint4 gq = reinterpret_cast<const uint4*>(in)[r * 2 * inter8 + c];
    const uint4 uq = reinterpret_cast<const uint4*>(in)[r * 2 * inter8 + inter8 + c];
    const auto* g2 = reinterpret_cast<const __nv_bfloat162*>(&gq);
    const auto* u2 = reinterpret_cast<const __nv_bfloat162*>(&uq);
    uint4 oq;
    auto* o2 = reinterpret_cast<__nv_bfloat162*>(&oq);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float2 g = __bfloat1622float2(g2[q]), u = __bfloat1622float2(u2[q]);
      o2[q] = __floats2bfloat162_rn(glu1(g.x, u.x, clamped, alpha, limit), glu1(g.y, u.y, clamped, alpha, limit));
    }
    reinterpret_cast<uint4*>(out)[i] = oq;
  }
}

__global__ void glu_scalar(const bf16* __restrict__ in, bf16* __restrict__ out, long long m, long long inter,
                           int clamped, float alpha, float limit) {
  const long long n = m * inter;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = i / inter, c = i % inter;
    out[i] = __float2bfloat16(glu1(__bfloat162float(in[r * 2 * inter + c]),
                                   __bfloat162float(in[r * 2 * inter + inter + c]), clamped, alpha, limit));
  }
}

// FP8 dispatch rows (moe/standard/fp8_dispatch.hpp): one block of kFp8Threads per row, channel
// g * 128 + threadIdx.x of group g per thread. Row bytes: h e4m3, then ceil(h / 128) fp32 scales.
constexpr int kFp8Threads = 128;
constexpr int kFp8Group = 128;

__global__ void __launch_bounds__(kFp8Threads)
    gather_quantize_fp8(const bf16* __restrict__ src, const int* __restrict__ map, std::uint8_t* __restrict__ packed,
                        long long rows, long long h) {
  __shared__ float red[kFp8Threads / 32];
  const long long groups = (h + kFp8Group - 1) / kFp8Group, rb = h + 4 * groups;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {  // uniform over the block
    const bf16* x = src + static_cast<long long>(map[row]) * h;
    std::uint8_t* out = packed + row * rb;
    for (long long g = 0; g < groups; ++g) {
      const long long c = g * kFp8Group + threadIdx.x;
      const float v = c < h ? __bfloat162float(x[c]) : 0.0f;
      const float s = fp8::block_scale<kFp8Threads>(fabsf(v), red);
      if (c < h) out[c] = static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(v / s, __NV_SATFINITE, __NV_E4M3));
      if (threadIdx.x < 4) out[h + 4 * g + threadIdx.x] = static_cast<std::uint8_t>(__float_as_uint(s) >> (8 * threadIdx.x));
    }
  }
}

__global__ void __launch_bounds__(kFp8Threads)
    gather_dequantize_fp8(const std::uint8_t* __restrict__ packed, const int* __restrict__ map, bf16* __restrict__ dst,
                          long long rows, long long h) {
  const long long groups = (h + kFp8Group - 1) / kFp8Group, rb = h + 4 * groups;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::uint8_t* in = packed + static_cast<long long>(map[row]) * rb;
    for (long long c = threadIdx.x; c < h; c += kFp8Threads) {
      const std::uint8_t* sp = in + h + 4 * (c / kFp8Group);  // little-endian fp32, any alignment
      const float s = __uint_as_float(static_cast<unsigned>(sp[0]) | static_cast<unsigned>(sp[1]) << 8 |
                                      static_cast<unsigned>(sp[2]) << 16 | static_cast<unsigned>(sp[3]) << 24);
      __nv_fp8_e4m3 q;
      q.__x = in[c];
      dst[row * h + c] = __float2bfloat16(static_cast<float>(q) * s);
    }
  }
}

unsigned fp8_row_blocks(std::int64_t rows) { return static_cast<unsigned>(std::min<std::int64_t>(rows, 1LL << 20)); }

}  // namespace

void std_gather_quantize_fp8(const bf16* src, const std::int32_t* map, std::uint8_t* packed, std::int64_t rows,
                             std::int64_t h, cudaStream_t st) {
  if (rows == 0) return;
  LB_CHECK(h > 0, "std_gather_quantize_fp8: hidden must be positive");
  gather_quantize_fp8<<<fp8_row_blocks(rows), kFp8Threads, 0, st>>>(src, map, packed, rows, h);
  LB_CUDA_CHECK_LAUNCH();
}

void std_gather_dequantize_fp8(const std::uint8_t* packed, const std::int32_t* map, bf16* dst, std::int64_t rows,
                               std::int64_t h, cudaStream_t st) {
  if (rows == 0) return;
  LB_CHECK(h > 0, "std_gather_dequantize_fp8: hidden must be positive");
  gather_dequantize_fp8<<<fp8_row_blocks(rows), kFp8Threads, 0, st>>>(packed, map, dst, rows, h);
  LB_CUDA_CHECK_LAUNCH();
}

void std_route(const float* logits, const float* bias, const RouterSpec& spec, std::int64_t n, std::int64_t e,
               std::int64_t k, std::int32_t* idx, float* weight, cudaStream_t st) {
  LB_CHECK(e >= 1 && e <= kStdRouteMaxExperts && k >= 1 && k <= kStdRouteMaxTopk && k <= e,
           "the warp router takes 1..512 experts and k <= 32");
  if (n == 0) return;
  const RouteArgs a{spec.score == Score::sigmoid, spec.selection_bias, static_cast<int>(spec.groups),
                    static_cast<int>(spec.topk_groups), spec.group_score == GroupScore::top2_sum,
                    spec.topk_before_score, spec.normalize, static_cast<float>(spec.scale)};
  if (e <= 32) launch_route<1>(logits, bias, a, n, e, k, idx, weight, st);
  else if (e <= 64) launch_route<2>(logits, bias, a, n, e, k, idx, weight, st);
  else if (e <= 128) launch_route<4>(logits, bias, a, n, e, k, idx, weight, st);
  else if (e <= 256) launch_route<8>(logits, bias, a, n, e, k, idx, weight, st);
  else launch_route<16>(logits, bias, a, n, e, k, idx, weight, st);
}

void std_glu(const bf16* in, bf16* out, std::int64_t m, std::int64_t inter, const ActivationSpec& a,
             cudaStream_t st) {
  if (m == 0) return;
  const int clamped = a.kind == Activation::swiglu_clamped;
  const auto alpha = static_cast<float>(a.alpha), limit = static_cast<float>(a.limit);
  const bool vec = inter % 8 == 0 && reinterpret_cast<std::uintptr_t>(in) % 16 == 0 &&
                   reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
  const long long work = vec ? m * inter / 8 : m * inter;
  const auto blocks = static_cast<unsigned>(std::min<long long>((work + 255) / 256, 132LL * 16));
  if (vec)
    glu_vec8<<<blocks, 256, 0, st>>>(in, out, m, inter / 8, clamped, alpha, limit);
  else
    glu_scalar<<<blocks, 256, 0, st>>>(in, out, m, inter, clamped, alpha, limit);
  LB_CUDA_CHECK_LAUNCH();
}

}  // namespace layerbench::moe::cuda
