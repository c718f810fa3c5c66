// The FP8 block-scaled path's plan and quantizers (moe/hopper/fp8_block_sm90.cuh): which shapes
// the kernels take, their tile lists and work space, and the 1x128 (activations) and 128x128
// (weights) quantization kernels. The grouped GEMM kernels and their launches are in
// moe/hopper/fp8_block_sm90.cu.
#include "collectives/error.hpp"
#include "moe/fp8_device.cuh"
#include "moe/hopper/fp8_block_sm90.cuh"
#include "moe/hopper/sm90.cuh"

#include <cuda_fp8.h>

#include <cstdint>
#include <string>

namespace layerbench::moe::cuda {

namespace {

std::int64_t blocks_of(std::int64_t n) { return (n + 127) / 128; }
// The down list's column blocks: two 128-row weight blocks, 256 output columns, per tile.
std::int64_t down_blocks_of(std::int64_t h) { return (h + 255) / 256; }

constexpr int Q_THREADS = 256;

// 1x128: one warp per (row, 128-column group), 4 columns per lane.
__global__ void __launch_bounds__(Q_THREADS)
    quantize_1x128_kernel(const bf16* __restrict__ x, std::int64_t rows, int cols, int cb, std::uint8_t* __restrict__ q,
                          float* __restrict__ scales) {
  const std::int64_t gid = static_cast<std::int64_t>(blockIdx.x) * (Q_THREADS / 32) + (threadIdx.x >> 5);
  if (gid >= rows * cb) return;
  const std::int64_t row = gid / cb;
  const int lane = static_cast<int>(threadIdx.x & 31), col = static_cast<int>(gid % cb) * 128 + 4 * lane;
  const bool ok = col < cols;
  float2 f0 = make_float2(0.0f, 0.0f), f1 = f0;
  if (ok) {
    const uint2 v = *reinterpret_cast<const uint2*>(x + row * cols + col);
    f0 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&v.x));
    f1 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&v.y));
  }
  float amax = fmaxf(fmaxf(fabsf(f0.x), fabsf(f0.y)), fmaxf(fabsf(f1.x), fabsf(f1.y)));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float s = fmaxf(amax, 1e-4f) / 448.0f;  // IEEE division (no fast math): the host's scale
  if (lane == 0) scales[gid] = s;
  if (ok) {
    const auto lo = static_cast<std::uint32_t>(
        __nv_cvt_float2_to_fp8x2(make_float2(f0.x / s, f0.y / s), __NV_SATFINITE, __NV_E4M3));
    const auto hi = static_cast<std::uint32_t>(
        __nv_cvt_float2_to_fp8x2(make_float2(f1.x / s, f1.y / s), __NV_SATFINITE, __NV_E4M3));
    *reinterpret_cast<std::uint32_t*>(q + row * cols + col) = lo | (hi << 16);
  }
}

// 128x128: one CTA per block, 8 chunks of 8 columns per thread.
__global__ void __launch_bounds__(Q_THREADS)
    quantize_128x128_kernel(const bf16* __restrict__ w, int rows, int cols, int rb, int cb,
                            std::uint8_t* __restrict__ q, float* __restrict__ scales) {
  const std::int64_t blk = blockIdx.x;
  const int cbi = static_cast<int>(blk % cb), rbi = static_cast<int>((blk / cb) % rb);
  const std::int64_t grp = blk / cb / rb;
  uint4 v[8];
  float amax = 0.0f;
#pragma unroll
  for (int p = 0; p < 8; ++p) {
    const int id = static_cast<int>(threadIdx.x) + Q_THREADS * p, rr = rbi * 128 + (id >> 4),
              cc = cbi * 128 + (id & 15) * 8;
    v[p] = make_uint4(0, 0, 0, 0);
    if (rr < rows && cc < cols) v[p] = *reinterpret_cast<const uint4*>(w + (grp * rows + rr) * cols + cc);
    amax = fp8::amax8(v[p], amax);
  }
  __shared__ float red[Q_THREADS / 32];
  const float s = fp8::block_scale<Q_THREADS>(amax, red);
  if (threadIdx.x == 0) scales[blk] = s;
#pragma unroll
  for (int p = 0; p < 8; ++p) {
    const int id = static_cast<int>(threadIdx.x) + Q_THREADS * p, rr = rbi * 128 + (id >> 4),
              cc = cbi * 128 + (id & 15) * 8;
    if (rr >= rows || cc >= cols) continue;
    *reinterpret_cast<uint2*>(q + (grp * rows + rr) * cols + cc) = fp8::e4m3x8(v[p], s);
  }
}

}  // namespace

std::string fp8_block_unsupported(std::int64_t h, std::int64_t inter, std::int64_t experts, std::int64_t rows_cap) {
  if (!sm90::device_is_sm90())
    return "the FP8 block-scaled kernels need a compute capability 9.0 device (sm_90a wgmma)";
  if (h <= 0 || inter <= 0 || h % 16 != 0 || inter % 16 != 0)
    return "the FP8 block-scaled kernels need hidden and intermediate sizes that are positive multiples of 16 "
           "(16-byte TMA row strides of e4m3), not " +
           std::to_string(h) + " and " + std::to_string(inter);
  if (experts < 1 || experts > kStdGroupedMaxExperts)
    return "the FP8 block-scaled kernels take 1 to " + std::to_string(kStdGroupedMaxExperts) +
           " local experts, not " + std::to_string(experts);
  if (rows_cap >= (std::int64_t{1} << 31) || experts * 2 * inter >= (std::int64_t{1} << 31) ||
      experts * h >= (std::int64_t{1} << 31))
    return "the FP8 block-scaled kernels use 32-bit TMA coordinates: rows and expert weight rows under 2^31";
  return "";
}

void fp8_quantize_1x128(const bf16* x, std::int64_t rows, std::int64_t cols, std::uint8_t* q, float* scales,
                        cudaStream_t s) {
  if (rows == 0) return;
  LB_CHECK(cols > 0 && cols % 16 == 0 && cols < (std::int64_t{1} << 31), "fp8_quantize_1x128: cols must be a "
                                                                          "positive multiple of 16");
  const std::int64_t cb = blocks_of(cols), groups = rows * cb, per = Q_THREADS / 32;
  LB_CHECK((groups + per - 1) / per < (std::int64_t{1} << 31), "fp8_quantize_1x128: too many rows");
  quantize_1x128_kernel<<<static_cast<unsigned>((groups + per - 1) / per), Q_THREADS, 0, s>>>(
      x, rows, static_cast<int>(cols), static_cast<int>(cb), q, scales);
  LB_CUDA_CHECK_LAUNCH();
}

void fp8_quantize_128x128(const bf16* w, std::int64_t groups, std::int64_t rows, std::int64_t cols, std::uint8_t* q,
                          float* scales, cudaStream_t s) {
  if (groups == 0 || rows == 0) return;
  LB_CHECK(cols > 0 && cols % 16 == 0 && rows < (std::int64_t{1} << 31) && cols < (std::int64_t{1} << 31),
           "fp8_quantize_128x128: cols must be a positive multiple of 16");
  const std::int64_t rb = blocks_of(rows), cb = blocks_of(cols), n = groups * rb * cb;
  LB_CHECK(n < (std::int64_t{1} << 31), "fp8_quantize_128x128: too many blocks");
  quantize_128x128_kernel<<<static_cast<unsigned>(n), Q_THREADS, 0, s>>>(w, static_cast<int>(rows),
                                                                          static_cast<int>(cols), static_cast<int>(rb),
                                                                          static_cast<int>(cb), q, scales);
  LB_CUDA_CHECK_LAUNCH();
}

std::int64_t fp8_block_work_bytes(std::int64_t rows_cap, std::int64_t experts, std::int64_t h, std::int64_t inter) {
  const auto n = static_cast<std::int64_t>(sizeof(StdTile));
  auto up256 = [](std::int64_t b) { return (b + 255) / 256 * 256; };
  return up256(std_grouped_max_tiles(rows_cap, experts, blocks_of(inter)) * n) +
         up256(std_grouped_max_tiles(rows_cap, experts, down_blocks_of(h)) * n) + 256;
}

StdGroupedWork fp8_block_work(void* base, std::int64_t rows_cap, std::int64_t experts, std::int64_t h,
                              std::int64_t inter) {
  auto up256 = [](std::int64_t b) { return (b + 255) / 256 * 256; };
  StdGroupedWork w;
  w.gu_max = std_grouped_max_tiles(rows_cap, experts, blocks_of(inter));
  w.dn_max = std_grouped_max_tiles(rows_cap, experts, down_blocks_of(h));
  auto* p = static_cast<unsigned char*>(base);
  w.gu = reinterpret_cast<StdTile*>(p);
  p += up256(w.gu_max * static_cast<std::int64_t>(sizeof(StdTile)));
  w.dn = reinterpret_cast<StdTile*>(p);
  p += up256(w.dn_max * static_cast<std::int64_t>(sizeof(StdTile)));
  w.live = reinterpret_cast<int*>(p);
  return w;
}

void fp8_block_tiles(const int* counts, std::int64_t experts, std::int64_t h, std::int64_t inter,
                     const StdGroupedWork& w, cudaStream_t s) {
  std_grouped_tiles(counts, experts, blocks_of(inter), down_blocks_of(h), w.gu, w.gu_max, w.dn, w.dn_max, w.live, s);
}

}  // namespace layerbench::moe::cuda
