// Pack / unpack as vectorised gathers: every thread moves one chunk of a D-row (16 bytes when
// the row allows it), so both sides stay coalesced and the copies run near the device's copy
// bandwidth. Padding heads are written as zeros on the way in and never read on the way out.
#include "attention/layout_cuda.hpp"
#include "collectives/error.hpp"

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

}  // namespace layerbench::attention::detail
