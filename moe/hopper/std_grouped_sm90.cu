// The standard block's grouped expert GEMMs on Hopper (moe/hopper/std_grouped_sm90.cuh).
//
// One kernel, two epilogues. Persistent CTAs (one per SM, or 2-CTA clusters: see grouped_kernel) walk a device-built tile list with a
// stride of the grid; a tile is 128 rows of one expert times one 256-wide block of the weight's
// rows (N), accumulated in fp32 over ceil(K / 64) steps. Warpgroups 0 and 1 consume (rows 0-63
// and 64-127, one wgmma m64n256k16 per 16 of K); warpgroup 2 produces (it hands its registers to
// the consumers with setmaxnreg): one thread issues the TMA copies of each step's
//   A  (128, 64)   x or act rows of the tile (rows past the matrix and k >= K arrive as zeros)
//   B  (256, 64)   two (128, 64) boxes of the expert's weight rows
// into a 4-deep ring guarded by full / empty mbarriers, running ahead into the next tile while
// the consumers store the last one. Shared tiles use the 128-byte swizzle (moe/hopper/sm90.cuh); two
// 128-row boxes stacked make the same layout as one 256-row box.
//
// gate/up: the two B boxes are gate rows [128 b, 128 b + 128) and the matching up rows (I further
// on) of W13 (E, 2I, h), so accumulator columns c and c + 128 are the gate and the up value of
// activation column 128 b + c, both in one thread's registers: the epilogue rounds them to bf16
// (as the cuBLAS paths store them), applies the family's GLU and stores act (R, I) directly.
// down: the boxes are Wd (E, h, I) rows [256 b, 256 b + 256); a plain bf16 store of y (R, h).
// Columns that run past I (or h) into the next rows of the weight are computed and not stored;
// the last expert's run past the tensor arrives as zeros.
//
// Epilogue: at a tile's end each consumer packs its results to bf16 pairs in registers (for
// gate/up after the GLU, or half of it) and stores them through its staging buffer, either at
// once (in place) or beside the next tile's MMAs (deferred: the tensor cores work through the
// stores and the other half of the GLU; the whole GLU there needs more registers than the
// accumulators leave, and ptxas spills). Deferred, the epilogue runs either all once the next
// tile's first three K steps are issued, or spread (the default): one 64-column chunk after
// each further step issued, so that MMAs stay queued behind every part. Interleaved against
// torch, spread is 0.9-3.0% faster than at once (results/moe/2026-12-02-h200-u; at 22 K steps
// per tile the whole epilogue outlasted the three steps before it), and at once read the same
// as in place and 0.8-2.4% faster than storing straight from the accumulators with 288
// threads and no register move (results/moe/2026-12-02-h200-n).
// Handing the packed tile through shared memory to epilogue warps, with a 3-stage ring to make
// the room, measured 4-10% slower than in place (results/moe/2026-12-02-h200-m).
#include "collectives/error.hpp"
#include "moe/hopper/experts_sm90.cuh"
#include "moe/hopper/grouped_epilogue.cuh"
#include "moe/hopper/sm90.cuh"
#include "moe/hopper/std_grouped_sm90.cuh"

#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <cstdint>

namespace layerbench::moe::cuda {

namespace {

using namespace sm90;

constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, THREADS = 384, GU_COLS = 128;
// Registers per thread: the producer warpgroup (one working thread) and the consumers (fp32
// accumulators of a 64 x 256 tile, the previous tile packed to bf16, addresses): 2 x 128 x 232
// + 128 x 40 <= 65536.
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
// Deferred epilogue of gate/up: the GLU of the last GLU_LATE of a consumer's 32 activation pairs
// runs in the next tile, beside its MMAs (the rest before: all 32 need more registers than the
// accumulators leave, and ptxas spills).
constexpr int GLU_LATE = 16;
constexpr int A_STAGE = BM * BK * 2, B_HALF = (BN / 2) * BK * 2, STAGE_BYTES = A_STAGE + 2 * B_HALF;
// Staged epilogue: per consumer 64 rows x 64 bf16 at a 72-element pitch (144 B): the fragment
// writes hit 32 distinct banks and each row reads back as 16-byte chunks.
constexpr int C_PITCH = 72, C_BYTES = 64 * C_PITCH * 2;
constexpr int SMEM = STAGES * STAGE_BYTES + 2 * C_BYTES + 2 * STAGES * 8 + 1024;  // ring, staging, mbarriers, slack
static_assert(SMEM <= 227 * 1024, "one CTA per SM");
constexpr int TILE_THREADS = 1024;

enum Epi : int { kStore = 0, kSiluGlu = 1, kClampedGlu = 2 };
__host__ __device__ constexpr bool clamped_epi(int e) { return e == kClampedGlu; }
static_assert(BN == grouped::kTileCols && GU_COLS == grouped::kGluCols && C_PITCH == grouped::kStagePitch,
              "the shared epilogue's tile (moe/hopper/grouped_epilogue.cuh)");

#ifdef LB_WGMMA
using grouped::glu_packed;  // the GLU and the staged store of a packed tile (moe/hopper/grouped_epilogue.cuh)
using grouped::store_tile;

// One consumer's accumulators (rows 16 w + l/4 (+8) of its 64; per n8 group q the columns
// 8q + 2(l%4) + {0,1}) rounded to bf16 pairs: kStore all 128 values; GLU the 64 gate values
// (columns c < 128) then the 64 up values (c + 128). The epilogue reads only these registers, so
// the accumulators are free for the next tile's MMAs while it runs.
template <int EPI>
__device__ __forceinline__ void pack_tile(const float (&acc)[128], std::uint32_t (&pk)[64]) {
#pragma unroll
  for (int j = 0; j < 64; ++j) {
    const int i = EPI == kStore ? 2 * j : j < 32 ? 2 * j : 64 + 2 * (j - 32);
    const __nv_bfloat162 v = __floats2bfloat162_rn(acc[i], acc[i + 1]);
    pk[j] = *reinterpret_cast<const std::uint32_t*>(&v);
  }
}
#endif  // LB_WGMMA

// b_rows: weight rows per expert (2I or h); up: the up rows' offset from the gate rows (I; GLU).
// halves: a tile of at most 64 live rows loads 64 A rows and runs consumer 0 alone. PAIR: 2-CTA
// clusters take list entries 2p and 2p + 1; when both are live tiles of one (expert, block) each
// CTA loads one half of the weight box and multicasts it into both (the box crosses L2 once),
// else each loads its own. A stage is refilled once the consumer warps of both CTAs released it.
// DEFER: 0 the epilogue in place; 1 deferred, beside the next tile's first three K steps; 2
// deferred and spread, one 64-column chunk after each further K step issued (consume_tile_hooked
// in parts).
template <int EPI, bool PAIR, int DEFER>
__global__ void __launch_bounds__(THREADS, 1)
    grouped_kernel(const __grid_constant__ CUtensorMap amap, const __grid_constant__ CUtensorMap amap64,
                   const __grid_constant__ CUtensorMap bmap, bf16* __restrict__ out, int n_cols,
                   const StdTile* tiles, int max_tiles, const int* live, int ksteps,
                   int b_rows, int up, int halves, float alpha, float limit, std::uint64_t a_l2,
                   std::uint64_t b_l2) {
#ifdef LB_WGMMA
  grid_dependents_may_start();  // the next GEMM's CTAs may take SMs as this grid's CTAs finish
  const int rank = PAIR ? cluster_rank() : 0;
  const int first = PAIR ? static_cast<int>(blockIdx.x) / 2 : static_cast<int>(blockIdx.x);
  const int stride = PAIR ? static_cast<int>(gridDim.x) / 2 : static_cast<int>(gridDim.x);
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t raw = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  const std::uint32_t base = (raw + 1023u) & ~1023u;
  const std::uint32_t c_base = base + STAGES * STAGE_BYTES;
  const std::uint32_t full = c_base + 2 * C_BYTES, empty = full + 8 * STAGES;
  init_ring<STAGES, PAIR>(full, empty);
  grid_dependency_wait();  // the tile list (and, for down, act) are complete and visible
  const int n_tiles = min(max_tiles, load_after_wait(live));
  const int units = PAIR ? n_tiles / 2 : n_tiles;  // pairs (the list has an even length), or tiles
  const int wg = threadIdx.x >> 7;  // 0, 1: consumers; 2: the producer warpgroup
  if (wg == 2) {
    regs_release<PRODUCER_REGS>();
    if (threadIdx.x == 256) {
      int s = 0;
      for (int u = first; u < units; u += stride) {
        const StdTile t = load16_after_wait(tiles + (PAIR ? 2 * u + rank : u));
        if (!PAIR && t.valid <= 0) continue;
        bool shared = false;
        if constexpr (PAIR) {
          const StdTile o = load16_after_wait(tiles + (2 * u + (rank ^ 1)));
          shared = t.valid > 0 && o.valid > 0 && t.expert == o.expert && t.block == o.block;
        }
        const int r0 = t.expert * b_rows + t.block * (EPI == kStore ? BN : GU_COLS);
        const int r1 = EPI == kStore ? r0 + BN / 2 : r0 + up;
        const bool half = halves && t.valid <= 64, none = t.valid <= 0;  // none: a paired padding tile
        for (int ks = 0; ks < ksteps; ++ks, ++s) {
          const int stage = s % STAGES;
          if (s >= STAGES) mbar_wait(empty + 8 * stage, ((s / STAGES) - 1) & 1);
          const std::uint32_t dst = base + stage * STAGE_BYTES, bar = full + 8 * stage;
          mbar_arrive_expect_tx(bar, none ? 0 : half ? STAGE_BYTES - A_STAGE / 2 : STAGE_BYTES);
          if (none) continue;  // nothing to load: the arrival alone completes the phase
          tma_load_2d<true>(dst, half ? &amap64 : &amap, ks * BK, t.row0, bar, a_l2);
          if (shared) {
            tma_load_2d_multicast<true>(dst + A_STAGE + rank * B_HALF, &bmap, ks * BK, rank ? r1 : r0, bar, 0x3, b_l2);
          } else {
            tma_load_2d<true>(dst + A_STAGE, &bmap, ks * BK, r0, bar, b_l2);
            tma_load_2d<true>(dst + A_STAGE + B_HALF, &bmap, ks * BK, r1, bar, b_l2);
          }
        }
      }
    }
  } else {
    regs_take<CONSUMER_REGS>();
    const int tid = threadIdx.x & 127, lane = tid & 31;
    auto release = [&](int stage) { release_stage<PAIR>(empty, stage, lane, rank); };
    float acc[128];
    std::uint32_t pk[64];        // the last tile's results, packed (pack_tile)
    StdTile pending{0, 0, 0, 0};  // DEFER: that tile, while its epilogue waits (valid > 0)
    auto epilogue = [&](const StdTile& t) {
      if constexpr (DEFER && EPI != kStore) glu_packed<clamped_epi(EPI), 32 - GLU_LATE, 32>(pk, alpha, limit);
      store_tile<EPI == kStore>(pk, out, t, n_cols, wg, tid, c_base + wg * C_BYTES);
    };
    // DEFER 2: chunk Q of the pending tile (chunk Q of a GLU tile holds activation pairs
    // [16 Q, 16 Q + 16); the late ones get their GLU just before).
    auto piece = [&]<int Q>() {
      if (pending.valid <= 0) return;
      if constexpr (EPI != kStore) {
        constexpr int j0 = 16 * Q > 32 - GLU_LATE ? 16 * Q : 32 - GLU_LATE, j1 = 16 * Q + 16;
        if constexpr (j0 < j1) glu_packed<clamped_epi(EPI), j0, j1>(pk, alpha, limit);
      }
      store_tile<EPI == kStore, Q, Q + 1>(pk, out, pending, n_cols, wg, tid, c_base + wg * C_BYTES);
    };
    int s = 0;
    for (int u = first; u < units; u += stride) {
      const StdTile t = load16_after_wait(tiles + (PAIR ? 2 * u + rank : u));
      if (!PAIR && t.valid <= 0) continue;
      if ((wg == 1 && halves && t.valid <= 64) || t.valid <= 0) {
        skip_tile<STAGES>(s, ksteps, full, release);  // no rows of this consumer
        continue;
      }
      if constexpr (DEFER == 2) {
        consume_tile_hooked<STAGES, STAGE_BYTES, A_STAGE, BK, 2, EPI == kStore ? BN / 64 : GU_COLS / 64>(
            acc, s, ksteps, full, base, wg, release, piece);
        pending = t;
      } else if constexpr (DEFER) {
        consume_tile_hooked<STAGES, STAGE_BYTES, A_STAGE, BK, 2, 1>(acc, s, ksteps, full, base, wg, release,
                                                                    [&]<int>() {
                                                                      if (pending.valid > 0) epilogue(pending);
                                                                    });
        pending = t;
      } else {
        consume_tile<STAGES, STAGE_BYTES, A_STAGE, BK>(acc, s, ksteps, full, base, wg, release);
      }
      pack_tile<EPI>(acc, pk);
      if constexpr (EPI != kStore) glu_packed<clamped_epi(EPI), 0, DEFER ? 32 - GLU_LATE : 32>(pk, alpha, limit);
      if constexpr (!DEFER) epilogue(t);
    }
    if (DEFER && pending.valid > 0) epilogue(pending);  // the last tile's
  }
  if constexpr (PAIR) cluster_sync();  // no CTA leaves while its peer may still write into it
#else
  __trap();  // never launched: the launcher requires a compute capability 9.0 device
#endif
}

using TileScan = cub::BlockScan<int, TILE_THREADS>;

// Exclusive prefix sum over the block; *total gets the sum. The barrier first frees `tmp`.
__device__ __forceinline__ int block_exclusive_scan(int v, TileScan::TempStorage& tmp, int* total) {
  __syncthreads();
  int out = 0;
  TileScan(tmp).ExclusiveSum(v, out, *total);
  return out;
}

// Tiles of one expert (c rows) in a list of nb column blocks. pack: a region of even length
// (one empty tile when odd), so that list pairs never straddle two experts.
__device__ __forceinline__ int region_tiles(int c, int nb, int pack) {
  const int n = (c + BM - 1) / BM * nb;
  return pack ? n + (n & 1) : n;
}

// Tile `l` of expert e's region. Unpacked: column block by block, 128-row tiles fastest. Packed
// (the pairs' order), column blocks two by two: the pairs of consecutive row tiles of the first
// block (a half tail included: they share the weight box), those of the second, then the odd last
// row tile of the two blocks side by side (same rows: a half tile pairs with a half tile); a last
// odd block's tiles in row order; then the padding tile (valid 0).
__device__ __forceinline__ StdTile region_tile(int e, int row0, int c, int nb, int l, int pack) {
  const int mt = (c + BM - 1) / BM;
  int m = 0, b = 0;
  if (!pack) {
    m = l % mt;
    b = l / mt;
  } else {
    const int p2 = mt & ~1;
    const int g = l / (2 * mt), r = l % (2 * mt);
    if (g < nb / 2) {
      if (r < 2 * p2) {  // the row-tile pairs of block 2g, then of block 2g + 1
        b = 2 * g + r / max(p2, 1);
        m = r % max(p2, 1);
      } else {  // the odd last row tile of each of the two blocks
        b = 2 * g + ((r - 2 * p2) & 1);
        m = p2 + (r - 2 * p2) / 2;
      }
    } else if ((l -= (nb / 2) * 2 * mt) < mt) {  // a last odd block
      b = nb - 1;
      m = l;
    } else {
      return StdTile{e, 0, 0, 0};
    }
  }
  return StdTile{e, row0 + m * BM, min(BM, c - m * BM), b};
}

// Both tile lists from the counts. Every CTA makes the offsets (per-thread chunks of experts,
// block scans of their rows and of their tiles per list); the CTAs then write the tiles in a
// grid stride, each found by a search of the tile offsets. Launched early (programmatic
// dependent launch): it waits for the kernel before it (the counts; the last GEMMs' reads of the
// lists) and lets the gate/up GEMM's CTAs set up beside it.
__global__ void __launch_bounds__(TILE_THREADS)
    tiles_kernel(const int* __restrict__ counts, int experts, int nb0, int nb1, StdTile* __restrict__ t0, int max0,
                 StdTile* __restrict__ t1, int max1, int* __restrict__ live, int pack) {
  __shared__ int row_off[kStdGroupedMaxExperts + 1], tile_off[kStdGroupedMaxExperts + 1];
  __shared__ TileScan::TempStorage scratch;
  grid_dependency_wait();
  grid_dependents_may_start();
  const int tid = threadIdx.x, chunk = (experts + TILE_THREADS - 1) / TILE_THREADS;
  const int lo = min(experts, tid * chunk), hi = min(experts, lo + chunk);
  int sum = 0, total = 0;
  for (int e = lo; e < hi; ++e) sum += max(counts[e], 0);
  sum = block_exclusive_scan(sum, scratch, &total);
  for (int e = lo; e < hi; ++e) {
    row_off[e] = sum;
    sum += max(counts[e], 0);
  }
  if (tid == 0) row_off[experts] = total;
  for (int list = 0; list < 2; ++list) {
    const int nb = list == 0 ? nb0 : nb1, cap = list == 0 ? max0 : max1;
    StdTile* out = list == 0 ? t0 : t1;
    __syncthreads();  // row_off complete; the last list's searches are done with tile_off
    sum = 0;
    for (int e = lo; e < hi; ++e) sum += region_tiles(row_off[e + 1] - row_off[e], nb, pack);
    sum = block_exclusive_scan(sum, scratch, &total);
    for (int e = lo; e < hi; ++e) {
      tile_off[e] = sum;
      sum += region_tiles(row_off[e + 1] - row_off[e], nb, pack);
    }
    if (tid == 0) tile_off[experts] = total;
    __syncthreads();
    int n = min(total, cap);
    const int grid_threads = static_cast<int>(gridDim.x) * TILE_THREADS;
    for (int t = static_cast<int>(blockIdx.x) * TILE_THREADS + tid; t < n; t += grid_threads) {
      int a = 0, b = experts - 1;
      while (a < b) {  // the last expert whose first tile is <= t (it has tiles: offsets rise past t)
        const int mid = (a + b + 1) / 2;
        if (tile_off[mid] <= t)
          a = mid;
        else
          b = mid - 1;
      }
      out[t] = region_tile(a, row_off[a], row_off[a + 1] - row_off[a], nb, t - tile_off[a], pack);
    }
    if (blockIdx.x == 0 && tid == 0) {
      if ((n & 1) && n < cap) out[n++] = StdTile{0, 0, 0, 0};  // an even length: the paired kernel's partners
      live[list] = n;
    }
  }
}

StdGroupedVariant g_variant;  // the launches' variant (std_grouped_set_variant)

std::uint64_t l2_policy(L2Priority p) {
  return p == L2Priority::evict_first ? kL2EvictFirst : p == L2Priority::evict_last ? kL2EvictLast : kL2EvictNormal;
}

template <int EPI, int DEFER>
void launch_as(const CUtensorMap& amap, const CUtensorMap& amap64, const CUtensorMap& bmap, bf16* out, int n_cols,
               const StdTile* tiles, std::int64_t max_tiles, const int* live, int ksteps, int b_rows, int up,
               const ActivationSpec& a, cudaStream_t s) {
  int dev = 0;
  const int sms = sm90::current_device_sms(dev);
  const int mt = static_cast<int>(max_tiles), half = g_variant.half_tiles ? 1 : 0;
  const auto alpha = static_cast<float>(a.alpha), limit = static_cast<float>(a.limit);
  const std::uint64_t a_l2 = l2_policy(g_variant.a_l2), b_l2 = l2_policy(g_variant.b_l2);
  if (!g_variant.paired) {
    ensure_max_dynamic_smem(reinterpret_cast<const void*>(grouped_kernel<EPI, false, DEFER>), SMEM);
    sm90::Launch l(static_cast<unsigned>(std::max(1, std::min(mt, sms))), THREADS, SMEM, s);
    l.early_start();
    LB_CUDA_CHECK(cudaLaunchKernelEx(&l.cfg, grouped_kernel<EPI, false, DEFER>, amap, amap64, bmap, out, n_cols, tiles,
                                     mt, live, ksteps, b_rows, up, half, alpha, limit, a_l2, b_l2));
    LB_CUDA_CHECK_LAUNCH();
    return;
  }
  ensure_max_dynamic_smem(reinterpret_cast<const void*>(grouped_kernel<EPI, true, DEFER>), SMEM);
  sm90::PairLaunch pl(static_cast<unsigned>(sms / 2 * 2), THREADS, SMEM, s);
  pl.early_start();
  static int resident[3][3][64] = {};  // co-resident 2-CTA clusters per device (SMs pair up inside a GPC)
  int& clusters = resident[EPI][DEFER][dev & 63];
  if (clusters == 0)
    LB_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, grouped_kernel<EPI, true, DEFER>, &pl.cfg));
  const int grid_clusters = std::max(1, std::min(clusters, std::max(1, mt / 2)));
  pl.cfg.gridDim = dim3(static_cast<unsigned>(2 * grid_clusters));
  LB_CUDA_CHECK(cudaLaunchKernelEx(&pl.cfg, grouped_kernel<EPI, true, DEFER>, amap, amap64, bmap, out, n_cols, tiles,
                                   mt, live, ksteps, b_rows, up, half, alpha, limit, a_l2, b_l2));
  LB_CUDA_CHECK_LAUNCH();
}

template <int EPI>
void launch(const CUtensorMap& amap, const CUtensorMap& amap64, const CUtensorMap& bmap, bf16* out, int n_cols,
            const StdTile* tiles, std::int64_t max_tiles, const int* live, int ksteps, int b_rows, int up,
            const ActivationSpec& a, cudaStream_t s) {
  if (g_variant.deferred_epilogue && g_variant.spread_epilogue)
    launch_as<EPI, 2>(amap, amap64, bmap, out, n_cols, tiles, max_tiles, live, ksteps, b_rows, up, a, s);
  else if (g_variant.deferred_epilogue)
    launch_as<EPI, 1>(amap, amap64, bmap, out, n_cols, tiles, max_tiles, live, ksteps, b_rows, up, a, s);
  else
    launch_as<EPI, 0>(amap, amap64, bmap, out, n_cols, tiles, max_tiles, live, ksteps, b_rows, up, a, s);
}

void check_sizes(std::int64_t rows_cap, std::int64_t experts, std::int64_t n_rows_per_expert, std::int64_t max_tiles) {
  LB_CHECK(rows_cap < (std::int64_t{1} << 31) && experts * n_rows_per_expert < (std::int64_t{1} << 31) &&
               max_tiles < (std::int64_t{1} << 31),
           "Hopper grouped expert GEMM: TMA coordinates and tile counts are 32-bit");
}

std::int64_t align_up(std::int64_t v, std::int64_t a) { return (v + a - 1) / a * a; }

}  // namespace

bool std_grouped_sm90_supported(std::int64_t h, std::int64_t inter, std::int64_t experts) {
  return sm90::device_is_sm90() && h > 0 && inter > 0 && h % 8 == 0 && inter % 8 == 0 && experts > 0 &&
         experts <= kStdGroupedMaxExperts;
}

void std_grouped_set_variant(const StdGroupedVariant& v) { g_variant = v; }

StdGroupedVariant std_grouped_variant() { return g_variant; }

std::int64_t std_gate_up_blocks(std::int64_t inter) { return (inter + GU_COLS - 1) / GU_COLS; }
std::int64_t std_down_blocks(std::int64_t h) { return (h + BN - 1) / BN; }
std::int64_t std_grouped_max_tiles(std::int64_t rows_cap, std::int64_t experts, std::int64_t blocks) {
  // sum of ceil(c_e / 128) over sum c_e <= rows_cap, one padding tile per expert, an even length
  return ((rows_cap / BM + std::min(experts, rows_cap)) * blocks + experts + 1) / 2 * 2;
}

void std_grouped_tiles(const int* counts, std::int64_t experts, std::int64_t gu_blocks, std::int64_t dn_blocks,
                       StdTile* gu_tiles, std::int64_t gu_max, StdTile* dn_tiles, std::int64_t dn_max, int* live,
                       cudaStream_t s) {
  LB_CHECK(experts > 0 && experts <= kStdGroupedMaxExperts, "Hopper grouped expert GEMM: 1 to 4096 local experts");
  LB_CHECK(gu_max < (std::int64_t{1} << 31) && dn_max < (std::int64_t{1} << 31), "tile lists are 32-bit");
  // One CTA per TILE_THREADS tiles of the longer list (at most one per SM): a thread writes about
  // one tile per list.
  int dev = 0;
  const int sms = sm90::current_device_sms(dev);
  const std::int64_t per_cta = TILE_THREADS, longest = std::max(gu_max, dn_max);
  const auto grid = static_cast<unsigned>(std::clamp<std::int64_t>((longest + per_cta - 1) / per_cta, 1, sms));
  sm90::Launch l(grid, TILE_THREADS, 0, s);
  l.early_start();
  LB_CUDA_CHECK(cudaLaunchKernelEx(&l.cfg, tiles_kernel, counts, static_cast<int>(experts), static_cast<int>(gu_blocks),
                                   static_cast<int>(dn_blocks), gu_tiles, static_cast<int>(gu_max), dn_tiles,
                                   static_cast<int>(dn_max), live, g_variant.pack_leftovers ? 1 : 0));
  LB_CUDA_CHECK_LAUNCH();
}

void std_gate_up_sm90(const bf16* x, std::int64_t rows_cap, std::int64_t h, const bf16* w13, std::int64_t experts,
                      std::int64_t inter, bf16* act, const StdTile* tiles, std::int64_t max_tiles, const int* live,
                      const ActivationSpec& a, cudaStream_t s) {
  if (rows_cap == 0 || max_tiles == 0) return;
  LB_CHECK(std_grouped_sm90_supported(h, inter, experts),
           "Hopper grouped gate/up: needs a compute capability 9.0 device, h and I multiples of 8");
  check_sizes(rows_cap, experts, 2 * inter, max_tiles);
  const CUtensorMap amap = sm90::encode_tma_2d(x, static_cast<std::uint64_t>(h), static_cast<std::uint64_t>(rows_cap), BK, BM);
  const CUtensorMap amap64 =
      sm90::encode_tma_2d(x, static_cast<std::uint64_t>(h), static_cast<std::uint64_t>(rows_cap), BK, BM / 2);
  const CUtensorMap bmap =
      sm90::encode_tma_2d(w13, static_cast<std::uint64_t>(h), static_cast<std::uint64_t>(experts * 2 * inter), BK, BN / 2);
  const int ks = static_cast<int>((h + BK - 1) / BK), I = static_cast<int>(inter);
  if (a.kind == Activation::swiglu_clamped)
    launch<kClampedGlu>(amap, amap64, bmap, act, I, tiles, max_tiles, live, ks, 2 * I, I, a, s);
  else
    launch<kSiluGlu>(amap, amap64, bmap, act, I, tiles, max_tiles, live, ks, 2 * I, I, a, s);
}

void std_down_sm90(const bf16* act, std::int64_t rows_cap, std::int64_t inter, const bf16* wd, std::int64_t experts,
                   std::int64_t h, bf16* y, const StdTile* tiles, std::int64_t max_tiles, const int* live,
                   cudaStream_t s) {
  if (rows_cap == 0 || max_tiles == 0) return;
  LB_CHECK(std_grouped_sm90_supported(h, inter, experts),
           "Hopper grouped down: needs a compute capability 9.0 device, h and I multiples of 8");
  check_sizes(rows_cap, experts, h, max_tiles);
  const CUtensorMap amap =
      sm90::encode_tma_2d(act, static_cast<std::uint64_t>(inter), static_cast<std::uint64_t>(rows_cap), BK, BM);
  const CUtensorMap amap64 =
      sm90::encode_tma_2d(act, static_cast<std::uint64_t>(inter), static_cast<std::uint64_t>(rows_cap), BK, BM / 2);
  const CUtensorMap bmap =
      sm90::encode_tma_2d(wd, static_cast<std::uint64_t>(inter), static_cast<std::uint64_t>(experts * h), BK, BN / 2);
  const int ks = static_cast<int>((inter + BK - 1) / BK), H = static_cast<int>(h);
  launch<kStore>(amap, amap64, bmap, y, H, tiles, max_tiles, live, ks, H, 0, ActivationSpec{}, s);
}

std::int64_t std_grouped_work_bytes(std::int64_t rows_cap, std::int64_t experts, std::int64_t h, std::int64_t inter) {
  const auto n = static_cast<std::int64_t>(sizeof(StdTile));
  return align_up(std_grouped_max_tiles(rows_cap, experts, std_gate_up_blocks(inter)) * n, 256) +
         align_up(std_grouped_max_tiles(rows_cap, experts, std_down_blocks(h)) * n, 256) + 256;
}

StdGroupedWork std_grouped_work(void* base, std::int64_t rows_cap, std::int64_t experts, std::int64_t h,
                                std::int64_t inter) {
  StdGroupedWork w;
  w.gu_max = std_grouped_max_tiles(rows_cap, experts, std_gate_up_blocks(inter));
  w.dn_max = std_grouped_max_tiles(rows_cap, experts, std_down_blocks(h));
  auto* p = static_cast<unsigned char*>(base);
  w.gu = reinterpret_cast<StdTile*>(p);
  p += align_up(w.gu_max * static_cast<std::int64_t>(sizeof(StdTile)), 256);
  w.dn = reinterpret_cast<StdTile*>(p);
  p += align_up(w.dn_max * static_cast<std::int64_t>(sizeof(StdTile)), 256);
  w.live = reinterpret_cast<int*>(p);
  return w;
}

void std_expert_mlp_sm90(const bf16* x, const bf16* w13, const bf16* wd, bf16* act, bf16* y, const int* counts,
                         std::int64_t experts, std::int64_t rows_cap, std::int64_t h, std::int64_t inter,
                         const ActivationSpec& a, const StdGroupedWork& w, cudaStream_t s) {
  if (rows_cap == 0) return;
  std_grouped_tiles(counts, experts, std_gate_up_blocks(inter), std_down_blocks(h), w.gu, w.gu_max, w.dn, w.dn_max,
                    w.live, s);
  std_gate_up_sm90(x, rows_cap, h, w13, experts, inter, act, w.gu, w.gu_max, w.live, a, s);
  std_down_sm90(act, rows_cap, inter, wd, experts, h, y, w.dn, w.dn_max, w.live + 1, s);
}

}  // namespace layerbench::moe::cuda
