#pragma once
// Launchers of the MAGI-2 layer's Hopper (sm_90a, wgmma) expert kernels
// (moe/hopper/expert_gemm_sm90.cu, expert_w13_sm90.cu, expert_down_sm90.cu) and what the Hopper kernels
// of both families share: the bf16 alias, SwiGLU7 on the device, the variants of the study and the
// shared-memory opt-in. The tile lists are moe::ExpertTile (moe/expert_buckets.hpp); the MAGI-2
// layer's other kernels and the device-side schedule are in moe/magi2/cuda_kernels.cuh.
#include "collectives/error.hpp"
#include "moe/expert_buckets.hpp"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace layerbench::moe::cuda {

using bf16 = __nv_bfloat16;
using moe::ExpertTile;

#ifdef __CUDACC__
// SwiGLU7 on one (gate, up) pair in fp32, as moe::swiglu7 on the host:
// min(g,7) * sigmoid(1.702 min(g,7)) * (clamp(u,-7,7) + 1).
__device__ __forceinline__ float swiglu7_dev(float g, float u) {
  const float gc = fminf(g, 7.0f);
  const float uc = fminf(fmaxf(u, -7.0f), 7.0f);
  return gc * (1.0f / (1.0f + __expf(-1.702f * gc))) * (uc + 1.0f);
}
// The same with an approximate reciprocal (MUFU.RCP, 1 ulp; 1 / inf = 0): no IEEE division slow
// path (two MUFU operations per value: exp and rcp).
__device__ __forceinline__ float swiglu7_dev_fast(float g, float u) {
  const float gc = fminf(g, 7.0f);
  const float uc = fminf(fmaxf(u, -7.0f), 7.0f);
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.0f + __expf(-1.702f * gc)));
  return gc * r * (uc + 1.0f);
}
// The same with sigmoid(z) = (1 + tanh(z / 2)) / 2 on tanh.approx (one MUFU operation per value;
// absolute error of the sigmoid below 2.5e-4, under the bf16 rounding of the result), for the
// Hopper kernel's epilogue.
__device__ __forceinline__ float swiglu7_dev_tanh(float g, float u) {
  const float gc = fminf(g, 7.0f);
  const float uc = fminf(fmaxf(u, -7.0f), 7.0f);
  float t;
  asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(0.851f * gc));  // 1.702 / 2
  const float h = 0.5f * gc;
  return fmaf(h, t, h) * (uc + 1.0f);
}
#endif

// Variants of the Hopper expert kernels (moe/hopper/expert_gemm_sm90.cu, moe/hopper/expert_down_sm90.cu),
// timed against each other by layerbench-moe-kernels --variants; every variant computes the
// same function (the down variants bit for bit). The defaults are the variants measured fastest.
struct Sm90Variant {
  bool tanh_sigmoid = true;     // gate/up: SwiGLU7's sigmoid by one tanh.approx instead of exp + rcp
  bool staged_epilogue = true;  // down: 16-byte row-chunk stores staged in shared memory
  bool half_tiles = false;      // down: tiles of <= 64 rows load 64 A rows, one warpgroup computes
                                // (measured 3-5% slower: off)
  int down_prefetch = 0;        // down: L2 prefetch of the A box this many k steps ahead (0: none;
                                // measured 12-25% slower, the L2 is the bound)
  bool down_prefetch_b = false; // down: with down_prefetch, the weight box of that step too
  int gate_up_prefetch = 0;     // gate/up: L2 prefetch of the weight box this many ring steps ahead
                                // (measured 1-24% slower)
};

// cudaFuncSetAttribute(kernel, MaxDynamicSharedMemorySize, bytes) once per (device, kernel):
// the opt-in is per device, and launches with more than 48 KB need it. Inline, so the kernels
// of both MoE libraries share one record.
inline void ensure_max_dynamic_smem(const void* kernel, int bytes) {
  static std::mutex m;
  static std::vector<std::pair<int, const void*>> done;
  int dev = 0;
  LB_CUDA_CHECK(cudaGetDevice(&dev));
  const std::lock_guard<std::mutex> lock(m);
  const std::pair<int, const void*> key{dev, kernel};
  if (std::find(done.begin(), done.end(), key) != done.end()) return;
  LB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  done.push_back(key);
}

// Hopper (sm_90a, wgmma) version of gate_up_swiglu (moe/hopper/expert_gemm_sm90.cu). It reads W13 in
// a K-major, block-interleaved copy (E, 2 Ip, dp) made once per weight set by
// prepare_w13_kmajor (w13_kmajor_elems bf16 elements). supported(): a compute capability 9.0
// device and 64 <= d <= 256, d and I multiples of 8. xs has `rows` rows (TMA bounds); W13k
// holds `experts` experts. Empty tiles (valid = 0) are skipped.
bool gate_up_swiglu_sm90_supported(std::int64_t d, std::int64_t inter);
std::int64_t w13_kmajor_elems(std::int64_t experts, std::int64_t d, std::int64_t inter);
void prepare_w13_kmajor(const bf16* w13, bf16* w13k, std::int64_t experts, std::int64_t d, std::int64_t inter,
                        cudaStream_t s);
// tile_rows: the list's tile height, kExpertTileRows or (unpaired, tanh sigmoid) kWideTileRows.
void gate_up_swiglu_sm90(const bf16* xs, std::int64_t rows, const bf16* w13k, std::int64_t experts, bf16* act,
                         const ExpertTile* tiles, std::int64_t n_tiles, std::int64_t d, std::int64_t inter,
                         cudaStream_t s, bool paired = false, const Sm90Variant& v = {},
                         std::int64_t tile_rows = kExpertTileRows);
// The same kernel reading its A rows straight from the token rows (no expert-major copy): tile
// row r is sorted assignment row0 + r, vals_sorted[row0 + r] = (token * hv + head) * k + j, so
// it is row token * hl + head of x (x_rows rows of d). The device-side schedule uses it.
// paired: a list from build_expert_tiles with paired, run in 2-CTA clusters: two tiles of one
// expert share each weight stage (TMA multicast), a lone tile's column blocks are split.
void gate_up_swiglu_sm90_gathered(const bf16* x, std::int64_t x_rows, const int* vals_sorted, std::int64_t hl,
                                  std::int64_t hv, std::int64_t k, const bf16* w13k, std::int64_t experts, bf16* act,
                                  const ExpertTile* tiles, std::int64_t n_tiles, std::int64_t d, std::int64_t inter,
                                  cudaStream_t s, bool paired = false, const Sm90Variant& v = {},
                                  std::int64_t tile_rows = kExpertTileRows);
// Hopper (sm_90a, wgmma) down projection yd (rows, d) = act (rows, I) W_down[e] for every tile
// (moe/hopper/expert_down_sm90.cu). It reads W_down in a K-major copy (E, 256, Ip) made once per
// weight set by prepare_wdown_kmajor (wdown_kmajor_elems bf16 elements). supported(): a compute
// capability 9.0 device, 0 < d <= 256, I >= 64, d and I multiples of 8.
bool down_sm90_supported(std::int64_t d, std::int64_t inter);
std::int64_t wdown_kmajor_elems(std::int64_t experts, std::int64_t inter);
void prepare_wdown_kmajor(const bf16* wd, bf16* wdk, std::int64_t experts, std::int64_t d, std::int64_t inter,
                          cudaStream_t s);
// n_live (device, optional): the live length of a device-built list (build_expert_tiles).
// paired: the list is in pairs of one expert (build_expert_tiles with paired); the two CTAs of
// a 2-CTA cluster take a pair and share its weight stream (TMA multicast).
void down_sm90(const bf16* act, std::int64_t rows, const bf16* wdk, std::int64_t experts, bf16* yd,
               const ExpertTile* tiles, std::int64_t n_tiles, std::int64_t d, std::int64_t inter, cudaStream_t s,
               const int* n_live = nullptr, bool paired = false, const Sm90Variant& v = {});
}  // namespace layerbench::moe::cuda
