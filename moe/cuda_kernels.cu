// CUDA kernels of the MoE layer. Element-wise kernels use grid-stride loops; row movers use
// 16-byte vectors (8 bf16: d_head and widths are multiples of 8, checked in validate()).
#include "collectives/error.hpp"
#include "moe/cuda_kernels.cuh"
#include "moe/init.hpp"

namespace layerbench::moe::cuda {

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

// One block per row: fp32 sum of squares, then scale.
__global__ void rms_norm_kernel(const bf16* x, const float* w, bf16* y, std::int64_t h) {
  const bf16* xr = x + blockIdx.x * h;  // (h)
  bf16* yr = y + blockIdx.x * h;        // (h)
  float ss = 0;
  for (std::int64_t c = threadIdx.x; c < h; c += blockDim.x) {
    const float v = __bfloat162float(xr[c]);
    ss += v * v;
  }
  __shared__ float red[32];
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) red[0] = v;
  }
  __syncthreads();
  const float inv = rsqrtf(red[0] / float(h) + 1e-6f);
  for (std::int64_t c = threadIdx.x; c < h; c += blockDim.x)
    yr[c] = __float2bfloat16_rn(__bfloat162float(xr[c]) * inv * (w[c] + 1.0f));
}

__global__ void swiglu_packed_kernel(const bf16* in, bf16* out, std::int64_t m, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < m * n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / n, j = i % n;
    const __nv_bfloat162 gu = reinterpret_cast<const __nv_bfloat162*>(in + r * 2 * n)[j];
    out[i] = __float2bfloat16_rn(swiglu7_dev(__low2float(gu), __high2float(gu)));
  }
}

__global__ void swiglu_split_kernel(const bf16* in, bf16* out, std::int64_t rows,
                                    std::int64_t inter, const int* counts, std::int64_t cap) {
  const std::int64_t nv = inter / 8;  // 8 outputs per thread
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < rows * nv;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / nv, v = i % nv;
    if (cap > 0 && (r % cap) >= counts[r / cap]) continue;  // padding row of an expert slot
    const uint4 g4 = reinterpret_cast<const uint4*>(in + r * 2 * inter)[v];
    const uint4 u4 = reinterpret_cast<const uint4*>(in + r * 2 * inter + inter)[v];
    const bf16* g = reinterpret_cast<const bf16*>(&g4);
    const bf16* u = reinterpret_cast<const bf16*>(&u4);
    uint4 o4;
    bf16* o = reinterpret_cast<bf16*>(&o4);
#pragma unroll
    for (int q = 0; q < 8; ++q) o[q] = __float2bfloat16_rn(swiglu7_dev(__bfloat162float(g[q]), __bfloat162float(u[q])));
    reinterpret_cast<uint4*>(out + r * inter)[v] = o4;
  }
}

// in (a, b, w) -> out (b, a, w), 8 elements per thread.
__global__ void transpose_blocks_kernel(const uint4* in, uint4* out, std::int64_t a,
                                        std::int64_t b, std::int64_t wv) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < a * b * wv;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t v = i % wv, ij = i / wv, ia = ij / b, ib = ij % b;
    out[(ib * a + ia) * wv + v] = in[i];
  }
}

__global__ void add_kernel(const bf16* x, const bf16* y, bf16* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16_rn(__bfloat162float(x[i]) + __bfloat162float(y[i]));
}

__global__ void to_float_kernel(const bf16* x, float* y, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    y[i] = __bfloat162float(x[i]);
}

// One warp per (token, head): sigmoid scores in registers, k rounds of warp arg-max on
// score + bias (ties: lower expert id, as on the host), then L1 normalise and scale.
constexpr int kMaxPerLane = 32;  // experts <= 1024
__global__ void topk_kernel(const float* logits, const float* bias, int* idx, float* prob,
                            int* vals, std::int64_t tokens, std::int64_t hv, std::int64_t experts,
                            std::int64_t k, float scale) {
  const std::int64_t warp = (blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (warp >= tokens * hv) return;
  const std::int64_t t = warp / hv, h = warp % hv;
  const float* lg = logits + (h * tokens + t) * experts;  // (E)
  const float* bs = bias + h * experts;                   // (E)
  float sel[kMaxPerLane], sc[kMaxPerLane];
  const int per = static_cast<int>((experts + 31) / 32);
#pragma unroll
  for (int q = 0; q < kMaxPerLane; ++q) {
    const std::int64_t e = std::int64_t(q) * 32 + lane;
    const bool ok = q < per && e < experts;
    sc[q] = ok ? 1.0f / (1.0f + expf(-lg[e])) : 0.0f;
    sel[q] = ok ? sc[q] + bs[e] : -INFINITY;
  }
  float l1 = 0;
  float my_p[32];
  int my_e[32];
  for (int j = 0; j < k; ++j) {
    float best = -INFINITY;
    int be = 0x7fffffff;
    float bsc = 0;
#pragma unroll
    for (int q = 0; q < kMaxPerLane; ++q) {
      const int e = q * 32 + lane;
      if (sel[q] > best || (sel[q] == best && e < be)) { best = sel[q]; be = e; bsc = sc[q]; }
    }
    for (int o = 16; o > 0; o >>= 1) {
      const float ob = __shfl_xor_sync(0xffffffffu, best, o);
      const int oe = __shfl_xor_sync(0xffffffffu, be, o);
      const float os = __shfl_xor_sync(0xffffffffu, bsc, o);
      if (ob > best || (ob == best && oe < be)) { best = ob; be = oe; bsc = os; }
    }
    if ((be & 31) == lane) {
#pragma unroll
      for (int q = 0; q < kMaxPerLane; ++q)
        if (q == (be >> 5)) sel[q] = -INFINITY;
    }
    my_e[j] = be;
    my_p[j] = bsc;
    l1 += fabsf(bsc);
  }
  if (lane == 0) {
    const float norm = scale / fmaxf(l1, 1e-12f);
    for (int j = 0; j < k; ++j) {
      const std::int64_t a = warp * k + j;
      idx[a] = static_cast<int>(h * experts + my_e[j]);
      prob[a] = my_p[j] * norm;
      vals[a] = static_cast<int>(a);
    }
  }
}

__global__ void histogram_kernel(const int* keys, int* counts, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    atomicAdd(counts + keys[i], 1);
}

// One warp per sorted assignment: copy its (d) row, 8 bf16 per lane-step.
__global__ void gather_kernel(const bf16* x, const int* keys, const int* vals, const int* offsets,
                              bf16* xs, int* inv, std::int64_t n, std::int64_t hl, std::int64_t hv,
                              std::int64_t k, std::int64_t d, std::int64_t cap,
                              const std::int64_t* base) {
  const std::int64_t i = (blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (i >= n) return;
  const int e = keys[i], a = vals[i];
  // Row of this assignment: per-expert base (bucketed slots), fixed capacity, or compact.
  const std::int64_t row = base ? base[e] + (i - offsets[e])
                                : cap > 0 ? std::int64_t(e) * cap + (i - offsets[e]) : i;
  const std::int64_t pair = a / k, t = pair / hv, h = pair % hv;
  const uint4* src = reinterpret_cast<const uint4*>(x + (t * hl + h) * d);  // (d)
  uint4* dst = reinterpret_cast<uint4*>(xs + row * d);                      // (d)
  for (std::int64_t v = lane; v < d / 8; v += 32) dst[v] = src[v];
  if (lane == 0) inv[a] = static_cast<int>(row);
}

// 8 output columns per thread (16-byte loads and stores; d is a multiple of 8).
__global__ void combine_kernel(const bf16* yd, const int* inv, const float* prob, bf16* y,
                               std::int64_t tokens, std::int64_t hl, std::int64_t hv,
                               std::int64_t k, std::int64_t d) {
  const std::int64_t dv = d / 8;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < tokens * hv * dv;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t v = i % dv, pair = i / dv, t = pair / hv, h = pair % hv;
    float acc[8] = {};
    for (std::int64_t j = 0; j < k; ++j) {  // fixed order: deterministic
      const std::int64_t a = pair * k + j;
      const float p = prob[a];
      const uint4 r4 = reinterpret_cast<const uint4*>(yd + std::int64_t(inv[a]) * d)[v];
      const bf16* r = reinterpret_cast<const bf16*>(&r4);
#pragma unroll
      for (int q = 0; q < 8; ++q) acc[q] += p * __bfloat162float(r[q]);
    }
    uint4 o4;
    bf16* o = reinterpret_cast<bf16*>(&o4);
#pragma unroll
    for (int q = 0; q < 8; ++q) o[q] = __float2bfloat16_rn(acc[q]);
    reinterpret_cast<uint4*>(y + (t * hl + h) * d)[v] = o4;
  }
}

}  // namespace

void fill(void* dst, bool is_bf16, const SeededSlice& f, cudaStream_t s) {
  if (f.rows * f.cols == 0) return;
  fill_kernel<<<blocks_for(f.rows * f.cols), kThreads, 0, s>>>(dst, is_bf16, f.ld, f.seed, f.tensor, f.rows,
                                                               f.cols, f.full_cols, f.row0, f.col0, f.scale);
  LB_CUDA_CHECK_LAUNCH();
}
void rms_norm(const bf16* x, const float* w, bf16* y, std::int64_t rows, std::int64_t h, cudaStream_t s) {
  if (rows == 0) return;
  rms_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, w, y, h);
  LB_CUDA_CHECK_LAUNCH();
}
void swiglu_packed(const bf16* in, bf16* out, std::int64_t m, std::int64_t n, cudaStream_t s) {
  if (m * n == 0) return;
  swiglu_packed_kernel<<<blocks_for(m * n), kThreads, 0, s>>>(in, out, m, n);
  LB_CUDA_CHECK_LAUNCH();
}
void swiglu_split(const bf16* in, bf16* out, std::int64_t rows, std::int64_t inter,
                  const int* counts, std::int64_t cap, cudaStream_t s) {
  if (rows == 0) return;
  swiglu_split_kernel<<<blocks_for(rows * inter / 8), kThreads, 0, s>>>(in, out, rows, inter, counts, cap);
  LB_CUDA_CHECK_LAUNCH();
}
void transpose_blocks(const bf16* in, bf16* out, std::int64_t a, std::int64_t b, std::int64_t w,
                      cudaStream_t s) {
  if (a * b * w == 0) return;
  transpose_blocks_kernel<<<blocks_for(a * b * w / 8), kThreads, 0, s>>>(
      reinterpret_cast<const uint4*>(in), reinterpret_cast<uint4*>(out), a, b, w / 8);
  LB_CUDA_CHECK_LAUNCH();
}
void add(const bf16* x, const bf16* y, bf16* out, std::int64_t n, cudaStream_t s) {
  if (n == 0) return;
  add_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, out, n);
  LB_CUDA_CHECK_LAUNCH();
}
void to_float(const bf16* x, float* y, std::int64_t n, cudaStream_t s) {
  if (n == 0) return;
  to_float_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, n);
  LB_CUDA_CHECK_LAUNCH();
}
void topk(const float* logits, const float* bias, int* idx, float* prob, int* vals,
          std::int64_t tokens, std::int64_t hv, std::int64_t experts, std::int64_t k, float scale,
          cudaStream_t s) {
  const std::int64_t warps = tokens * hv;
  if (warps == 0) return;
  topk_kernel<<<static_cast<unsigned>((warps * 32 + 127) / 128), 128, 0, s>>>(
      logits, bias, idx, prob, vals, tokens, hv, experts, k, scale);
  LB_CUDA_CHECK_LAUNCH();
}
void histogram(const int* keys, int* counts, std::int64_t n, cudaStream_t s) {
  if (n == 0) return;
  histogram_kernel<<<blocks_for(n), kThreads, 0, s>>>(keys, counts, n);
  LB_CUDA_CHECK_LAUNCH();
}
void gather(const bf16* x, const int* keys, const int* vals, const int* offsets, bf16* xs,
            int* inv, std::int64_t n, std::int64_t hl, std::int64_t hv, std::int64_t k,
            std::int64_t d, std::int64_t cap, const std::int64_t* base, cudaStream_t s) {
  if (n == 0) return;
  gather_kernel<<<static_cast<unsigned>((n * 32 + 255) / 256), 256, 0, s>>>(
      x, keys, vals, offsets, xs, inv, n, hl, hv, k, d, cap, base);
  LB_CUDA_CHECK_LAUNCH();
}
void combine(const bf16* yd, const int* inv, const float* prob, bf16* y, std::int64_t tokens,
             std::int64_t hl, std::int64_t hv, std::int64_t k, std::int64_t d, cudaStream_t s) {
  if (tokens * hv * d == 0) return;
  combine_kernel<<<blocks_for(tokens * hv * d / 8), kThreads, 0, s>>>(yd, inv, prob, y, tokens, hl, hv, k, d);
  LB_CUDA_CHECK_LAUNCH();
}


}  // namespace layerbench::moe::cuda
