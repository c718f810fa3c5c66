#pragma once
// Launchers of the MoE CUDA kernels (cuda_kernels.cu). bf16 = __nv_bfloat16; shapes in the
// comments are row-major; all launches go on `s` and check the launch.
#include "collectives/error.hpp"
#include "moe/dense_kernels.cuh"
#include "moe/expert_buckets.hpp"
#include "moe/hopper/experts_sm90.cuh"
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

// x, y: (rows, h) bf16; w: fp32 (h) of the rows' modality.
void rms_norm(const bf16* x, const float* w, bf16* y, std::int64_t rows, std::int64_t h, cudaStream_t s);
void swiglu_packed(const bf16* in, bf16* out, std::int64_t m, std::int64_t n, cudaStream_t s);
// in (rows, 2I) = [gate | up] -> out (rows, I); padded layout: row r is live when
// r % cap < counts[r / cap] (cap = 0: every row is live).
void swiglu_split(const bf16* in, bf16* out, std::int64_t rows, std::int64_t inter,
                  const int* counts, std::int64_t cap, cudaStream_t s);
void transpose_blocks(const bf16* in, bf16* out, std::int64_t a, std::int64_t b, std::int64_t w,
                      cudaStream_t s);
// logits fp32 (hv, T, E) -> idx int32 (T, hv, k) = h*E + e, prob fp32 (T, hv, k); vals = iota.
void topk(const float* logits, const float* bias, int* idx, float* prob, int* vals,
          std::int64_t tokens, std::int64_t hv, std::int64_t experts, std::int64_t k, float scale,
          cudaStream_t s);
// Fused router (moe/magi2/router_kernels.cu): logits on the bf16 tensor cores with the gate split
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
// one launch (moe/magi2/expert_gemm.cu). W13: (E, d, 2I) bf16; d and I multiples of 8.
void gate_up_swiglu(const bf16* xs, const bf16* w13, bf16* act, const ExpertTile* tiles,
                    std::int64_t n_tiles, std::int64_t d, std::int64_t inter, cudaStream_t s);
// inv[vals_sorted[i]] = i for i < n: the sorted row of every assignment (for combine()).
void invert_permutation(const int* vals_sorted, int* inv, std::int64_t n, cudaStream_t s);
// y (T, hl, d) for heads < hv: sum_j prob[a_j] * yd[inv[a_j]] in j order, fp32.
void combine(const bf16* yd, const int* inv, const float* prob, bf16* y, std::int64_t tokens,
             std::int64_t hl, std::int64_t hv, std::int64_t k, std::int64_t d, cudaStream_t s);

}  // namespace layerbench::moe::cuda
