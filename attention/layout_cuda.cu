// Pack / unpack as vectorised gathers: every thread moves one chunk of a D-row (16 bytes when
// the row allows it), so both sides stay coalesced and the copies run near the device's copy
// bandwidth. Padding heads are written as zeros on the way in and never read on the way out.
#include "attention/layout_cuda.hpp"
#include "collectives/error.hpp"

#include <cuda_bf16.h>

#include <cstdint>

namespace layerbench::attention::detail {
namespace {

template <class Chunk>
__global__ void pack_kernel(const Chunk* __restrict__ x, Chunk* __restrict__ dst, long long batch,
                            long long seq, int heads, int slice_heads, int first, int n, int cpr) {
  // dst [n, S, B, Hl, cpr] <- x [B, S, H, cpr]
  const long long total = static_cast<long long>(n) * seq * batch * slice_heads * cpr;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    long long r = i;
    const int c = static_cast<int>(r % cpr);
    r /= cpr;
    const int hl = static_cast<int>(r % slice_heads);
    r /= slice_heads;
    const long long b = r % batch;
    r /= batch;
    const long long s = r % seq;
    const int j = static_cast<int>(r / seq);
    const long long h = static_cast<long long>(first + j) * slice_heads + hl;
    dst[i] = h < heads ? x[((b * seq + s) * heads + h) * cpr + c] : Chunk{};
  }
}

template <class Chunk>
__global__ void unpack_kernel(const Chunk* __restrict__ src, Chunk* __restrict__ out, long long batch,
                              long long seq, int heads, int slice_heads, int cpr) {
  // out [B, S, H, cpr] <- src [n, S, B, Hl, cpr]
  const long long total = batch * seq * heads * cpr;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    long long r = i;
    const int c = static_cast<int>(r % cpr);
    r /= cpr;
    const int h = static_cast<int>(r % heads);
    r /= heads;
    const long long s = r % seq;
    const long long b = r / seq;
    const int j = h / slice_heads, hl = h % slice_heads;
    out[i] = src[(((j * seq + s) * batch + b) * slice_heads + hl) * cpr + c];
  }
}

__global__ void merge_init_kernel(float* acc_o, float* acc_lse, long long n_lse, int head_dim) {
  const long long total = n_lse * head_dim;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    acc_o[i] = 0.f;
    if (i < n_lse) acc_lse[i] = -INFINITY;
  }
}

// One thread per (row, request, head, element): the row's weights are recomputed per element
// (cheap: two exps), the LSE written once by element 0 after every element of the row read it.
__global__ void merge_kernel(const __nv_bfloat16* __restrict__ part_o, const float* __restrict__ part_lse,
                             float* __restrict__ acc_o, float* __restrict__ acc_lse, long long batch,
                             int heads, int head_dim, long long row0, long long rows, long long request) {
  const long long bc = request < 0 ? batch : 1, b0 = request < 0 ? 0 : request;
  const long long total = rows * bc * heads;
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x / 32) + threadIdx.x / 32; t < total;
       t += static_cast<long long>(gridDim.x) * (blockDim.x / 32)) {
    long long x = t;
    const int h = static_cast<int>(x % heads);
    x /= heads;
    const long long bi = x % bc;
    const long long r = x / bc;
    const long long row = ((row0 + r) * batch + b0 + bi) * heads + h;
    const float l1 = acc_lse[row], l2 = part_lse[(bi * heads + h) * rows + r];
    const float mx = fmaxf(l1, l2);
    const float w1 = __expf(l1 - mx), w2 = __expf(l2 - mx);
    const float inv = 1.f / (w1 + w2);
    for (int d = threadIdx.x % 32; d < head_dim; d += 32) {
      const long long i = row * head_dim + d;
      acc_o[i] = acc_o[i] * (w1 * inv) + __bfloat162float(part_o[i]) * (w2 * inv);
    }
    __syncwarp();  // every lane has read acc_lse[row]
    if (threadIdx.x % 32 == 0) acc_lse[row] = mx + __logf(w1 + w2);
  }
}

__global__ void merge_finish_kernel(const float* __restrict__ acc_o, __nv_bfloat16* __restrict__ o, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    o[i] = __float2bfloat16(acc_o[i]);
}

unsigned grid_for(long long total) {
  const long long blocks = (total + 255) / 256;
  return static_cast<unsigned>(blocks < 65535LL * 8 ? (blocks > 0 ? blocks : 1) : 65535LL * 8);
}

}  // namespace

void launch_pack_heads(const void* x, void* dst, const SliceShape& p, int first, int n,
                       std::size_t elem_bytes, cudaStream_t s) {
  const std::size_t row = static_cast<std::size_t>(p.head_dim) * elem_bytes;
  const long long rows = static_cast<long long>(n) * p.seq * p.batch * p.slice_heads;
  if (row % 16 == 0) {
    const int cpr = static_cast<int>(row / 16);
    pack_kernel<<<grid_for(rows * cpr), 256, 0, s>>>(static_cast<const uint4*>(x), static_cast<uint4*>(dst),
                                                     p.batch, p.seq, p.heads, p.slice_heads, first, n, cpr);
  } else {
    const int cpr = static_cast<int>(row / 2);
    pack_kernel<<<grid_for(rows * cpr), 256, 0, s>>>(static_cast<const std::uint16_t*>(x),
                                                     static_cast<std::uint16_t*>(dst), p.batch, p.seq,
                                                     p.heads, p.slice_heads, first, n, cpr);
  }
  LB_CUDA_CHECK_LAUNCH();
}

void launch_unpack_heads(const void* src, void* out, const SliceShape& p, int n,
                         std::size_t elem_bytes, cudaStream_t s) {
  LB_CHECK(static_cast<long long>(n) * p.slice_heads >= p.heads, "unpack: too few slices");
  const std::size_t row = static_cast<std::size_t>(p.head_dim) * elem_bytes;
  const long long rows = p.batch * p.seq * p.heads;
  if (row % 16 == 0) {
    const int cpr = static_cast<int>(row / 16);
    unpack_kernel<<<grid_for(rows * cpr), 256, 0, s>>>(static_cast<const uint4*>(src), static_cast<uint4*>(out),
                                                       p.batch, p.seq, p.heads, p.slice_heads, cpr);
  } else {
    const int cpr = static_cast<int>(row / 2);
    unpack_kernel<<<grid_for(rows * cpr), 256, 0, s>>>(static_cast<const std::uint16_t*>(src),
                                                       static_cast<std::uint16_t*>(out), p.batch, p.seq,
                                                       p.heads, p.slice_heads, cpr);
  }
  LB_CUDA_CHECK_LAUNCH();
}

void launch_merge_init(float* acc_o, float* acc_lse, long long n_lse, int head_dim, cudaStream_t s) {
  merge_init_kernel<<<grid_for(n_lse * head_dim), 256, 0, s>>>(acc_o, acc_lse, n_lse, head_dim);
  LB_CUDA_CHECK_LAUNCH();
}

void launch_merge(const void* part_o, const float* part_lse, float* acc_o, float* acc_lse, const MergeShape& m,
                  cudaStream_t s) {
  const long long rows = m.rows * (m.request < 0 ? m.batch : 1) * m.heads;  // one warp each
  merge_kernel<<<grid_for(rows * 32), 256, 0, s>>>(static_cast<const __nv_bfloat16*>(part_o), part_lse, acc_o,
                                                   acc_lse, m.batch, m.heads, m.head_dim, m.row0, m.rows, m.request);
  LB_CUDA_CHECK_LAUNCH();
}

void launch_merge_finish(const float* acc_o, void* o, long long n, cudaStream_t s) {
  merge_finish_kernel<<<grid_for(n), 256, 0, s>>>(acc_o, static_cast<__nv_bfloat16*>(o), n);
  LB_CUDA_CHECK_LAUNCH();
}

}  // namespace layerbench::attention::detail
