// CUDA kernels of the MoE layer. Element-wise kernels use grid-stride loops; row movers use
// 16-byte vectors (8 bf16: d_head and widths are multiples of 8, checked in validate()).
#include "collectives/error.hpp"
#include "moe/magi2/cuda_kernels.cuh"
#include "moe/init.hpp"

#include <cub/block/block_scan.cuh>

namespace layerbench::moe::cuda {

namespace {

constexpr int kThreads = 256;
int blocks_for(std::int64_t n) {
  return static_cast<int>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, 65535LL * 8));
}


// One block per row: fp32 sum of squares, then scale; VEC: 8 bf16 per 16-byte access (h a
// multiple of 8, rows 16-byte aligned).
template <bool VEC>
__global__ void rms_norm_kernel(const bf16* x, const float* w, bf16* y, std::int64_t h) {
  const bf16* xr = x + blockIdx.x * h;  // (h)
  bf16* yr = y + blockIdx.x * h;        // (h)
  const std::int64_t step = VEC ? 8 : 1;
  float ss = 0;
  for (std::int64_t c = threadIdx.x * step; c < h; c += blockDim.x * step) {
    if constexpr (VEC) {
      const uint4 v4 = *reinterpret_cast<const uint4*>(xr + c);
      const bf16* v = reinterpret_cast<const bf16*>(&v4);
#pragma unroll
      for (int q = 0; q < 8; ++q) ss += __bfloat162float(v[q]) * __bfloat162float(v[q]);
    } else {
      const float v = __bfloat162float(xr[c]);
      ss += v * v;
    }
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
  for (std::int64_t c = threadIdx.x * step; c < h; c += blockDim.x * step) {
    if constexpr (VEC) {
      const uint4 v4 = *reinterpret_cast<const uint4*>(xr + c);
      const bf16* v = reinterpret_cast<const bf16*>(&v4);
      uint4 o4;
      bf16* o = reinterpret_cast<bf16*>(&o4);
#pragma unroll
      for (int q = 0; q < 8; ++q) o[q] = __float2bfloat16_rn(__bfloat162float(v[q]) * inv * (w[c + q] + 1.0f));
      *reinterpret_cast<uint4*>(yr + c) = o4;
    } else {
      yr[c] = __float2bfloat16_rn(__bfloat162float(xr[c]) * inv * (w[c] + 1.0f));
    }
  }
}

__global__ void swiglu_packed_kernel(const bf16* in, bf16* out, std::int64_t m, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < m * n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / n, j = i % n;
    const __nv_bfloat162 gu = reinterpret_cast<const __nv_bfloat162*>(in + r * 2 * n)[j];
    out[i] = __float2bfloat16_rn(swiglu7_dev(__low2float(gu), __high2float(gu)));
  }
}

// The same, 8 outputs per thread from two 16-byte loads (n a multiple of 8, 16-byte aligned).
__global__ void swiglu_packed8_kernel(const uint4* in, uint4* out, std::int64_t m, std::int64_t nv) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < m * nv;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const uint4 a = in[2 * i], b = in[2 * i + 1];  // row r's pairs 8v .. 8v + 7 (rows are 2 nv vectors)
    const __nv_bfloat162* pa = reinterpret_cast<const __nv_bfloat162*>(&a);
    const __nv_bfloat162* pb = reinterpret_cast<const __nv_bfloat162*>(&b);
    uint4 o4;
    bf16* o = reinterpret_cast<bf16*>(&o4);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      o[q] = __float2bfloat16_rn(swiglu7_dev(__low2float(pa[q]), __high2float(pa[q])));
      o[q + 4] = __float2bfloat16_rn(swiglu7_dev(__low2float(pb[q]), __high2float(pb[q])));
    }
    out[i] = o4;
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

// Keys arrive sorted, so a warp's keys are mostly equal: one atomic per distinct key per warp
// (__match_any_sync) instead of one per key on the same address.
__global__ void histogram_kernel(const int* keys, int* counts, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const int key = keys[i];
    const unsigned same = __match_any_sync(__activemask(), key);
    if ((threadIdx.x & 31) == __ffs(same) - 1) atomicAdd(counts + key, __popc(same));
  }
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

// One block: tile counts per expert, a block-wide scan (carried over blocks of 1024 experts),
// then every expert writes its own tiles; the rest of the list is padded with empty tiles.
// wide != nullptr: the same experts also in unpaired tiles of `wide_rows` rows.
constexpr int kTileThreads = 1024;
__global__ void build_tiles_kernel(const int* __restrict__ counts, const int* __restrict__ offsets,
                                   ExpertTile* __restrict__ tiles, int* __restrict__ n_out, int experts, int max_tiles,
                                   bool paired, ExpertTile* __restrict__ wide, int max_wide, int wide_rows) {
  using Scan = cub::BlockScan<int, kTileThreads>;
  __shared__ typename Scan::TempStorage tmp;
  constexpr int R = static_cast<int>(kExpertTileRows);
  int carry = 0, carry_w = 0;
  for (int e0 = 0; e0 < experts; e0 += kTileThreads) {
    const int e = e0 + static_cast<int>(threadIdx.x);
    const int c = e < experts ? counts[e] : 0;
    const int live = (c + R - 1) / R, nt = paired ? live + (live & 1) : live;
    int first = 0, total = 0;
    Scan(tmp).ExclusiveSum(nt, first, total);
    first += carry;
    const std::int64_t row0 = e < experts ? offsets[e] : 0;
    for (int i = 0; i < nt && first + i < max_tiles; ++i)
      tiles[first + i] = i < live ? ExpertTile{row0 + std::int64_t(i) * R, e, min(R, c - i * R)}
                                  : ExpertTile{row0 + std::int64_t(live - 1) * R, e, -min(R, c - (live - 1) * R)};
    carry += total;
    __syncthreads();  // the scan's storage is reused
    if (wide != nullptr) {
      const int nw = (c + wide_rows - 1) / wide_rows;
      Scan(tmp).ExclusiveSum(nw, first, total);
      first += carry_w;
      for (int i = 0; i < nw && first + i < max_wide; ++i)
        wide[first + i] = ExpertTile{row0 + std::int64_t(i) * wide_rows, e, min(wide_rows, c - i * wide_rows)};
      carry_w += total;
      __syncthreads();
    }
  }
  for (int i = carry + static_cast<int>(threadIdx.x); i < max_tiles; i += kTileThreads) tiles[i] = ExpertTile{0, 0, 0};
  if (wide != nullptr)
    for (int i = carry_w + static_cast<int>(threadIdx.x); i < max_wide; i += kTileThreads) wide[i] = ExpertTile{0, 0, 0};
  if (threadIdx.x == 0) *n_out = carry;
}

__global__ void invert_permutation_kernel(const int* __restrict__ vals, int* __restrict__ inv, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    inv[vals[i]] = static_cast<int>(i);
}

}  // namespace

void invert_permutation(const int* vals_sorted, int* inv, std::int64_t n, cudaStream_t s) {
  if (n == 0) return;
  invert_permutation_kernel<<<blocks_for(n), kThreads, 0, s>>>(vals_sorted, inv, n);
  LB_CUDA_CHECK_LAUNCH();
}

std::int64_t max_expert_tiles(std::int64_t assignments, std::int64_t experts, std::int64_t rows) {
  // Every expert at most one partial tile, and one empty partner when paired; even.
  return (assignments / rows + 2 * std::min(assignments, experts) + 2 + 1) / 2 * 2;
}

void build_expert_tiles(const int* counts, const int* offsets, ExpertTile* tiles, int* n_tiles, std::int64_t experts,
                        std::int64_t max_tiles, bool paired, cudaStream_t s, const WideTiles& wide) {
  LB_CHECK(max_tiles < (std::int64_t{1} << 31) && wide.max_tiles < (std::int64_t{1} << 31) &&
               experts < (std::int64_t{1} << 31),
           "too many expert tiles");
  LB_CHECK(wide.tiles == nullptr || (wide.rows > 0 && wide.rows <= (std::int64_t{1} << 20)), "wide tiles: rows > 0");
  build_tiles_kernel<<<1, kTileThreads, 0, s>>>(counts, offsets, tiles, n_tiles, static_cast<int>(experts),
                                                static_cast<int>(max_tiles), paired, wide.tiles,
                                                static_cast<int>(wide.max_tiles), static_cast<int>(wide.rows));
  LB_CUDA_CHECK_LAUNCH();
}

void rms_norm(const bf16* x, const float* w, bf16* y, std::int64_t rows, std::int64_t h, cudaStream_t s) {
  if (rows == 0) return;
  const bool vec = h % 8 == 0 && (reinterpret_cast<std::uintptr_t>(x) | reinterpret_cast<std::uintptr_t>(y)) % 16 == 0;
  if (vec)
    rms_norm_kernel<true><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, w, y, h);
  else
    rms_norm_kernel<false><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x, w, y, h);
  LB_CUDA_CHECK_LAUNCH();
}
void swiglu_packed(const bf16* in, bf16* out, std::int64_t m, std::int64_t n, cudaStream_t s) {
  if (m * n == 0) return;
  if (n % 8 == 0 && (reinterpret_cast<std::uintptr_t>(in) | reinterpret_cast<std::uintptr_t>(out)) % 16 == 0)
    swiglu_packed8_kernel<<<blocks_for(m * n / 8), kThreads, 0, s>>>(reinterpret_cast<const uint4*>(in),
                                                                      reinterpret_cast<uint4*>(out), m, n / 8);
  else
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
