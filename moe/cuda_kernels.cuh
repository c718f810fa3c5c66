#pragma once
// Launchers of the MoE CUDA kernels (cuda_kernels.cu). bf16 = __nv_bfloat16; shapes in the
// comments are row-major; all launches go on `s` and check the launch.
#include "collectives/error.hpp"
#include "moe/expert_buckets.hpp"
#include "moe/init.hpp"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace layerbench::moe::cuda {

using bf16 = __nv_bfloat16;

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

// Variants of the Hopper expert kernels (moe/expert_gemm_sm90.cu, moe/expert_down_sm90.cu),
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

// Writes the seeded slice `f` (moe/init.hpp) as bf16 or fp32.
void fill(void* dst, bool is_bf16, const SeededSlice& f, cudaStream_t s);
// x, y: (rows, h) bf16; w: fp32 (h) of the rows' modality.
void rms_norm(const bf16* x, const float* w, bf16* y, std::int64_t rows, std::int64_t h, cudaStream_t s);
void swiglu_packed(const bf16* in, bf16* out, std::int64_t m, std::int64_t n, cudaStream_t s);
// in (rows, 2I) = [gate | up] -> out (rows, I); padded layout: row r is live when
// r % cap < counts[r / cap] (cap = 0: every row is live).
void swiglu_split(const bf16* in, bf16* out, std::int64_t rows, std::int64_t inter,
                  const int* counts, std::int64_t cap, cudaStream_t s);
void transpose_blocks(const bf16* in, bf16* out, std::int64_t a, std::int64_t b, std::int64_t w,
                      cudaStream_t s);
void add(const bf16* x, const bf16* y, bf16* out, std::int64_t n, cudaStream_t s);
void to_float(const bf16* x, float* y, std::int64_t n, cudaStream_t s);
// logits fp32 (hv, T, E) -> idx int32 (T, hv, k) = h*E + e, prob fp32 (T, hv, k); vals = iota.
void topk(const float* logits, const float* bias, int* idx, float* prob, int* vals,
          std::int64_t tokens, std::int64_t hv, std::int64_t experts, std::int64_t k, float scale,
          cudaStream_t s);
// Fused router (moe/router_kernels.cu): logits on the bf16 tensor cores with the gate split
// exactly into three bf16 parts (fp32-accurate), sigmoid, top-k of score + bias (ties: lower
// id), L1 normalise, scale; same outputs as topk() without the fp32 logit tensor. The gate is
// read in a split copy made once per weight set by prepare_router_gate (router_gate_split_elems
// bf16 elements). supported(): compute capability >= 8.0, 256 experts, d a multiple of 32,
// k <= 8. x: (T, heads_local, d) bf16, heads [0, hv) routed.
bool fused_route_supported(std::int64_t experts, std::int64_t d, std::int64_t k);
std::int64_t router_gate_split_elems(std::int64_t heads, std::int64_t d);
void prepare_router_gate(const float* gate, bf16* split, std::int64_t heads, std::int64_t experts, std::int64_t d,
                         cudaStream_t s);
void fused_route(const bf16* x, std::int64_t heads_local, const bf16* gate_split, const float* bias, int* idx,
                 float* prob, int* vals, std::int64_t tokens, std::int64_t hv, std::int64_t experts, std::int64_t d,
                 std::int64_t k, float scale, cudaStream_t s);
// The unfused router: x -> fp32 (xf, T * heads_local * d), logits fp32 (hv, T, E) by cuBLAS
// SGEMM on `blas`, then topk(). Any E, d, k.
void route_sgemm(const bf16* x, std::int64_t heads_local, const float* gate, const float* bias, float* xf,
                 float* logits, int* idx, float* prob, int* vals, std::int64_t tokens, std::int64_t hv,
                 std::int64_t experts, std::int64_t d, std::int64_t k, float scale, cublasHandle_t blas, cudaStream_t s);
void histogram(const int* keys, int* counts, std::int64_t n, cudaStream_t s);
// Sorted assignments -> expert-major rows of xs (d per row); inv[a] = row of assignment a.
// Expert e's rows start at base[e] (base != nullptr), else at e * cap (cap > 0), else compact.
void gather(const bf16* x, const int* keys, const int* vals, const int* offsets, bf16* xs,
            int* inv, std::int64_t n, std::int64_t hl, std::int64_t hv, std::int64_t k,
            std::int64_t d, std::int64_t cap, const std::int64_t* base, cudaStream_t s);
// Tiles of the expert kernels: moe::ExpertTile (moe/expert_buckets.hpp), kExpertTileRows rows.
using moe::ExpertTile;
// The device-side expert schedule: tiles of the compact expert-major layout (expert e's rows
// from offsets[e]) built on the device from the counts, no host read. Experts in id order,
// ceil(count / kExpertTileRows) tiles each; entries [*n_tiles, max_tiles) are empty (valid = 0),
// which every tile-list kernel skips, so kernels launch over max_tiles without knowing the count.
// paired: each expert's tiles are padded to an even number: after an odd last tile comes its
// copy with valid negated (no rows of its own: the down kernel leaves it empty, the gate/up
// kernel splits that tile's column blocks between the pair), so entries 2p and 2p + 1 always
// belong to one expert.
// wide.tiles != nullptr: the same launch also writes the experts' unpaired tiles of wide.rows
// rows (e.g. kWideTileRows, the wide gate/up kernel's), padded to wide.max_tiles (from
// max_expert_tiles(assignments, experts, wide.rows)).
struct WideTiles {
  ExpertTile* tiles = nullptr;
  std::int64_t max_tiles = 0, rows = 0;
};
std::int64_t max_expert_tiles(std::int64_t assignments, std::int64_t experts, std::int64_t rows = kExpertTileRows);
void build_expert_tiles(const int* counts, const int* offsets, ExpertTile* tiles, int* n_tiles, std::int64_t experts,
                        std::int64_t max_tiles, bool paired, cudaStream_t s, const WideTiles& wide = {});
// The largest d the fused gate/up kernels take.
std::int64_t gate_up_swiglu_max_d();
// act (rows, I) = swiglu7(xs W13[e][:, :I], xs W13[e][:, I:]) for every tile, fp32 accumulation,
// one launch (moe/expert_gemm.cu). W13: (E, d, 2I) bf16; d and I multiples of 8.
void gate_up_swiglu(const bf16* xs, const bf16* w13, bf16* act, const ExpertTile* tiles,
                    std::int64_t n_tiles, std::int64_t d, std::int64_t inter, cudaStream_t s);
// Hopper (sm_90a, wgmma) version of gate_up_swiglu (moe/expert_gemm_sm90.cu). It reads W13 in
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
// inv[vals_sorted[i]] = i for i < n: the sorted row of every assignment (for combine()).
void invert_permutation(const int* vals_sorted, int* inv, std::int64_t n, cudaStream_t s);
// Hopper (sm_90a, wgmma) down projection yd (rows, d) = act (rows, I) W_down[e] for every tile
// (moe/expert_down_sm90.cu). It reads W_down in a K-major copy (E, 256, Ip) made once per
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
// y (T, hl, d) for heads < hv: sum_j prob[a_j] * yd[inv[a_j]] in j order, fp32.
void combine(const bf16* yd, const int* inv, const float* prob, bf16* y, std::int64_t tokens,
             std::int64_t hl, std::int64_t hv, std::int64_t k, std::int64_t d, cudaStream_t s);

}  // namespace layerbench::moe::cuda
