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

// The LSE merge of every partial at once: one thread per chunk of N values of one (row, request,
// head) output row; it walks the partials covering its row (online: rescaled when a larger LSE
// arrives), reads each partial's chunk once and writes the output chunk once.
template <int N>
struct alignas(2 * N) BfChunk {
  __nv_bfloat16 v[N];
};

template <int N>
__global__ void merge_kernel(const BfChunk<N>* __restrict__ parts, const float* __restrict__ lse,
                             const Partial* __restrict__ table, int n_parts, BfChunk<N>* __restrict__ o,
                             long long rows, long long batch, int heads, int cpr) {
  const long long total = rows * batch * heads * cpr, slot = total;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    long long x = i / cpr;
    const int h = static_cast<int>(x % heads);
    x /= heads;
    const long long b = x % batch, r = x / batch;
    float acc[N];
    for (int j = 0; j < N; ++j) acc[j] = 0.f;
    float mx = -INFINITY, sum = 0.f;
    for (int p = 0; p < n_parts; ++p) {
      const Partial t = table[p];
      if ((t.request >= 0 && t.request != b) || r < t.q0 || r >= t.q0 + t.nq) continue;
      const long long bi = t.request < 0 ? b : 0;
      const float l = lse[t.lse_off * heads + (bi * heads + h) * t.nq + (r - t.q0)];
      if (l > mx) {
        const float c = mx == -INFINITY ? 0.f : __expf(mx - l);
        sum *= c;
        for (int j = 0; j < N; ++j) acc[j] *= c;
        mx = l;
      }
      const float w = __expf(l - mx);
      sum += w;
      const BfChunk<N> v = parts[t.slot * slot + i];
      for (int j = 0; j < N; ++j) acc[j] += w * __bfloat162float(v.v[j]);
    }
    const float inv = 1.f / sum;
    BfChunk<N> out;
    for (int j = 0; j < N; ++j) out.v[j] = __float2bfloat16(acc[j] * inv);
    o[i] = out;
  }
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

void launch_merge(const void* parts, const float* lse, const Partial* table, int n_parts, void* o,
                  const MergeShape& m, cudaStream_t s) {
  const long long values = m.rows * m.batch * m.heads * m.head_dim;
  if (m.head_dim % 8 == 0) {  // 16-byte chunks (parts and o are cudaMalloc'd, row-aligned)
    const int cpr = m.head_dim / 8;
    merge_kernel<8><<<grid_for(values / 8), 256, 0, s>>>(static_cast<const BfChunk<8>*>(parts), lse, table, n_parts,
                                                         static_cast<BfChunk<8>*>(o), m.rows, m.batch, m.heads, cpr);
  } else {
    merge_kernel<1><<<grid_for(values), 256, 0, s>>>(static_cast<const BfChunk<1>*>(parts), lse, table, n_parts,
                                                     static_cast<BfChunk<1>*>(o), m.rows, m.batch, m.heads, m.head_dim);
  }
  LB_CUDA_CHECK_LAUNCH();
}

}  // namespace layerbench::attention::detail
