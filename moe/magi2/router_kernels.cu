// Fused router: logits, sigmoid, top-k of score + bias, L1 normalisation and scale in one
// kernel; the (heads, tokens, experts) logit tensor is never written.
//
// Precision. The logits are fp32-accurate on the bf16 tensor cores: x is bf16, so each product
// x * g is split exactly as x * g_hi + x * g_mid + x * g_lo with g = g_hi + g_mid + g_lo + r,
// three bf16 parts (|r| <= 2^-24 |g|, fp32's own rounding), each product exact in the fp32
// accumulator (8 x 8 significand bits). So the result equals the fp32 dot product up to the
// order of the fp32 additions, as cuBLAS's SGEMM does.
//
// Layout. One CTA = 128 tokens of one head, 8 warps of 16 tokens x all E = 256 experts (mma.sync
// m16n8k16, 32 n8 tiles, 128 fp32 accumulators per thread). The gate is prepared once per
// weight set (prepare_router_gate) in the B-fragment order of the MMA, per 32-wide k chunk:
//   gs[h][chunk][part][kstep][ntile][lane] = uint2 {b01, b23}
// with k permuted inside a chunk so that a lane's A values (token rows g and g+8) are 8
// contiguous bf16 of x: logical k (2t, 2t+1, 2t+8, 2t+9) of k step s sits at physical
// 8t + 4s + (0, 1, 2, 3) (t = lane % 4). The sum over k is the same sum in another order.
// Chunks stream into shared memory with cp.async (double-buffered, 48 KB each); x goes from
// global memory straight into registers (each element is read once), one chunk ahead.
//
// Selection. Per token the 256 scores lie in one lane quad (64 per lane). k rounds: each lane's
// best (ties: the lower expert id, as on the host), a quad reduction, removal of the winner.
// Scores are kept in shared memory for the winners' probabilities.
#include "collectives/error.hpp"
#include "moe/magi2/cuda_kernels.cuh"

#include <cublas_v2.h>

#include <cmath>
#include <cstdint>

namespace layerbench::moe::cuda {

namespace {

constexpr int kE = 256, kNT = kE / 8, kBM = 128, kThreads = 256, kChunk = 32, kMaxK = 8, kParts = 3;
constexpr int kChunkU2 = kParts * 2 * kNT * 32;                 // uint2 per (head, chunk)
constexpr int kChunkBytes = kChunkU2 * 8;                       // 48 KB
constexpr int kScoreRow = kE + 8;                               // padded score row (floats)
constexpr int kScoreBytes = (kThreads / 32) * 16 * kScoreRow * 4;  // 135 KB
constexpr int kSmem = kScoreBytes > 2 * kChunkBytes ? kScoreBytes : 2 * kChunkBytes;
static_assert(kSmem <= 227 * 1024, "fits one CTA per SM");

__device__ __forceinline__ std::uint32_t pack_bf16(float lo, float hi) {
  const std::uint32_t a = __bfloat16_as_ushort(__float2bfloat16_rn(lo));
  const std::uint32_t b = __bfloat16_as_ushort(__float2bfloat16_rn(hi));
  return a | (b << 16);
}

// Part p of the exact three-way bf16 split of g.
__device__ __forceinline__ float split_part(float g, int p) {
  const float hi = __bfloat162float(__float2bfloat16_rn(g));
  if (p == 0) return hi;
  const float r1 = g - hi;
  const float mid = __bfloat162float(__float2bfloat16_rn(r1));
  if (p == 1) return mid;
  return r1 - mid;  // rounded to bf16 by pack_bf16
}

__global__ void prepare_router_gate_kernel(const float* __restrict__ gate, uint2* __restrict__ gs, std::int64_t heads,
                                           int d) {
  const int chunks = d / kChunk;
  const std::int64_t n = heads * chunks * kChunkU2;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const int lane = static_cast<int>(i % 32), j = static_cast<int>((i / 32) % kNT);
    const int s = static_cast<int>((i / (32 * kNT)) % 2), p = static_cast<int>((i / (64 * kNT)) % kParts);
    const std::int64_t hc = i / kChunkU2;
    const int c = static_cast<int>(hc % chunks);
    const std::int64_t h = hc / chunks;
    const int e = 8 * j + (lane >> 2), k0 = kChunk * c + 8 * (lane & 3) + 4 * s;
    const float* g = gate + (h * kE + e) * d + k0;
    gs[i] = make_uint2(pack_bf16(split_part(g[0], p), split_part(g[1], p)),
                       pack_bf16(split_part(g[2], p), split_part(g[3], p)));
  }
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                         std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void cp_async16(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

__device__ __forceinline__ uint4 load_x(const bf16* row, int off, bool ok) {
  return ok ? __ldg(reinterpret_cast<const uint4*>(row + off)) : make_uint4(0, 0, 0, 0);
}

__global__ void __launch_bounds__(kThreads, 1)
    fused_route_kernel(const bf16* __restrict__ x, const uint2* __restrict__ gs, const float* __restrict__ bias,
                       int* __restrict__ idx, float* __restrict__ prob, int* __restrict__ vals, int tokens, int hl,
                       int hv, int d, int k, float scale) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(16) unsigned char smem[];
  const int h = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int chunks = d / kChunk;
  const int tok0 = blockIdx.x * kBM + warp * 16 + g, tok1 = tok0 + 8;
  const bool ok0 = tok0 < tokens, ok1 = tok1 < tokens;
  const bf16* row0 = x + (std::int64_t(ok0 ? tok0 : 0) * hl + h) * d + 8 * t;
  const bf16* row1 = x + (std::int64_t(ok1 ? tok1 : 0) * hl + h) * d + 8 * t;
  const uint2* gh = gs + std::int64_t(h) * chunks * kChunkU2;
  const std::uint32_t sbase = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));

  auto load_chunk = [&](int c) {
    const uint4* src = reinterpret_cast<const uint4*>(gh + std::int64_t(c) * kChunkU2);
    const std::uint32_t dst = sbase + (c & 1) * kChunkBytes;
    for (int i = threadIdx.x; i < kChunkBytes / 16; i += kThreads) cp_async16(dst + 16 * i, src + i);
    cp_async_commit();
  };

  float acc[kNT][4];
#pragma unroll
  for (int j = 0; j < kNT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;

  load_chunk(0);
  uint4 a0 = load_x(row0, 0, ok0), a1 = load_x(row1, 0, ok1);
  for (int c = 0; c < chunks; ++c) {
    cp_async_wait_all();
    __syncthreads();  // chunk c landed; every warp is done with the buffer chunk c + 1 reuses
    uint4 n0 = a0, n1 = a1;
    if (c + 1 < chunks) {
      load_chunk(c + 1);
      n0 = load_x(row0, kChunk * (c + 1), ok0);
      n1 = load_x(row1, kChunk * (c + 1), ok1);
    }
    const uint2* bs = reinterpret_cast<const uint2*>(smem + (c & 1) * kChunkBytes);
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const std::uint32_t r0 = s ? a0.z : a0.x, r2 = s ? a0.w : a0.y;  // token row g
      const std::uint32_t r1 = s ? a1.z : a1.x, r3 = s ? a1.w : a1.y;  // token row g + 8
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
#pragma unroll
        for (int p = kParts - 1; p >= 0; --p) {  // smallest part first
          const uint2 b = bs[((p * 2 + s) * kNT + j) * 32 + lane];
          mma_bf16(acc[j], r0, r1, r2, r3, b.x, b.y);
        }
      }
    }
    a0 = n0;
    a1 = n1;
  }
  __syncthreads();  // the chunk buffers become the score rows

  // Scores to shared memory (winners' probabilities), selection keys score + bias to registers.
  float* sc = reinterpret_cast<float*>(smem) + warp * 16 * kScoreRow;
  const float* bh = bias + std::int64_t(h) * kE;
#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    const float2 b = __ldg(reinterpret_cast<const float2*>(bh + 8 * j + 2 * t));
    const int e = 8 * j + 2 * t;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float s = 1.0f / (1.0f + expf(-acc[j][q]));
      sc[(q < 2 ? g : g + 8) * kScoreRow + e + (q & 1)] = s;
      acc[j][q] = s + ((q & 1) ? b.y : b.x);
    }
  }
  __syncwarp();

  int win0[kMaxK], win1[kMaxK];
#pragma unroll
  for (int r = 0; r < kMaxK; ++r) {
    if (r < k) {
      float best0 = -INFINITY, best1 = -INFINITY;
      int be0 = 0x7fffffff, be1 = 0x7fffffff;
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int q = 0; q < 2; ++q) {  // ascending expert id inside the lane: strict > keeps the lower on ties
          const int e = 8 * j + 2 * t + q;
          if (acc[j][q] > best0) { best0 = acc[j][q]; be0 = e; }
          if (acc[j][q + 2] > best1) { best1 = acc[j][q + 2]; be1 = e; }
        }
#pragma unroll
      for (int o = 1; o <= 2; o <<= 1) {
        const float ob0 = __shfl_xor_sync(0xffffffffu, best0, o), ob1 = __shfl_xor_sync(0xffffffffu, best1, o);
        const int oe0 = __shfl_xor_sync(0xffffffffu, be0, o), oe1 = __shfl_xor_sync(0xffffffffu, be1, o);
        if (ob0 > best0 || (ob0 == best0 && oe0 < be0)) { best0 = ob0; be0 = oe0; }
        if (ob1 > best1 || (ob1 == best1 && oe1 < be1)) { best1 = ob1; be1 = oe1; }
      }
      win0[r] = be0;
      win1[r] = be1;
      // Remove the winner: only its owner lane matches (be - 2t = 8j + q has no other solution).
      const int m0 = be0 - 2 * t, m1 = be1 - 2 * t;
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          if (m0 == 8 * j + q) acc[j][q] = -INFINITY;
          if (m1 == 8 * j + q) acc[j][q + 2] = -INFINITY;
        }
    }
  }
  if (t != 0) return;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int tok = half ? tok1 : tok0;
    if (tok >= tokens) continue;
    const float* srow = sc + (half ? g + 8 : g) * kScoreRow;
    float l1 = 0;
#pragma unroll
    for (int r = 0; r < kMaxK; ++r)
      if (r < k) l1 += fabsf(srow[half ? win1[r] : win0[r]]);
    const float norm = scale / fmaxf(l1, 1e-12f);
    const std::int64_t a0i = (std::int64_t(tok) * hv + h) * k;
#pragma unroll
    for (int r = 0; r < kMaxK; ++r)
      if (r < k) {
        const int e = half ? win1[r] : win0[r];
        idx[a0i + r] = h * kE + e;
        prob[a0i + r] = srow[e] * norm;
        vals[a0i + r] = static_cast<int>(a0i + r);
      }
  }
#else
  __trap();  // never launched: fused_route_supported() requires compute capability 8.0
#endif
}

}  // namespace

bool fused_route_supported(std::int64_t experts, std::int64_t d, std::int64_t k) {
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess)
    return false;
  return major >= 8 && experts == kE && d > 0 && d % kChunk == 0 && k >= 1 && k <= kMaxK;
}

std::int64_t router_gate_split_elems(std::int64_t heads, std::int64_t d) {
  return heads * (d / kChunk) * kChunkU2 * 4;  // bf16 elements (4 per uint2)
}

void prepare_router_gate(const float* gate, bf16* split, std::int64_t heads, std::int64_t experts, std::int64_t d,
                         cudaStream_t s) {
  LB_CHECK(fused_route_supported(experts, d, 1), "fused router: 256 experts, d_head a multiple of 32");
  const std::int64_t n = heads * (d / kChunk) * kChunkU2;
  if (n == 0) return;
  const int blocks = static_cast<int>(std::min<std::int64_t>((n + 255) / 256, 65535LL * 8));
  prepare_router_gate_kernel<<<blocks, 256, 0, s>>>(gate, reinterpret_cast<uint2*>(split), heads, static_cast<int>(d));
  LB_CUDA_CHECK_LAUNCH();
}

void fused_route(const bf16* x, std::int64_t heads_local, const bf16* gate_split, const float* bias, int* idx,
                 float* prob, int* vals, std::int64_t tokens, std::int64_t hv, std::int64_t experts, std::int64_t d,
                 std::int64_t k, float scale, cudaStream_t s) {
  LB_CHECK(fused_route_supported(experts, d, k), "fused router: 256 experts, d_head a multiple of 32, top-k <= 8");
  if (tokens == 0 || hv == 0) return;
  LB_CHECK(tokens * hv * k < (std::int64_t{1} << 31), "fused router: too many assignments for 32-bit ids");
  ensure_max_dynamic_smem(reinterpret_cast<const void*>(fused_route_kernel), kSmem);
  const dim3 grid(static_cast<unsigned>((tokens + kBM - 1) / kBM), static_cast<unsigned>(hv));
  fused_route_kernel<<<grid, kThreads, kSmem, s>>>(x, reinterpret_cast<const uint2*>(gate_split), bias, idx, prob, vals,
                                                    static_cast<int>(tokens), static_cast<int>(heads_local),
                                                    static_cast<int>(hv), static_cast<int>(d), static_cast<int>(k),
                                                    scale);
  LB_CUDA_CHECK_LAUNCH();
}

void route_sgemm(const bf16* x, std::int64_t heads_local, const float* gate, const float* bias, float* xf,
                 float* logits, int* idx, float* prob, int* vals, std::int64_t tokens, std::int64_t hv,
                 std::int64_t experts, std::int64_t d, std::int64_t k, float scale, cublasHandle_t blas, cudaStream_t s) {
  if (tokens == 0 || hv == 0) return;
  // x (T, Hl, d) -> fp32, then per head logits (T, E) = x_h (T, d) gate_h (E, d)^T as one
  // strided-batched SGEMM over heads.
  to_float(x, xf, tokens * heads_local * d, s);
  const float alpha = 1.0f, beta = 0.0f;
  LB_CUBLAS_CHECK(cublasSetStream(blas, s));
  LB_CUBLAS_CHECK(cublasGemmStridedBatchedEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, int(experts), int(tokens), int(d), &alpha,
                                             gate, CUDA_R_32F, int(d), experts * d, xf, CUDA_R_32F, int(heads_local * d),
                                             d, &beta, logits, CUDA_R_32F, int(experts), tokens * experts, int(hv),
                                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  topk(logits, bias, idx, prob, vals, tokens, hv, experts, k, scale, s);
}

}  // namespace layerbench::moe::cuda
