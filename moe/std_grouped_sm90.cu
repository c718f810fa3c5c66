// The standard block's grouped expert GEMMs on Hopper (moe/std_grouped_sm90.cuh).
//
// One kernel, two epilogues. Persistent CTAs (one per SM, or 2-CTA clusters: see grouped_kernel) walk a device-built tile list with a
// stride of the grid; a tile is 128 rows of one expert times one 256-wide block of the weight's
// rows (N), accumulated in fp32 over ceil(K / 64) steps. Warpgroups 0 and 1 consume (rows 0-63
// and 64-127, one wgmma m64n256k16 per 16 of K); warpgroup 2 produces (it hands its registers to
// the consumers with setmaxnreg): one thread issues the TMA copies of each step's
//   A  (128, 64)   x or act rows of the tile (rows past the matrix and k >= K arrive as zeros)
//   B  (256, 64)   two (128, 64) boxes of the expert's weight rows
// into a 4-deep ring guarded by full / empty mbarriers, running ahead into the next tile while
// the consumers store the last one. Shared tiles use the 128-byte swizzle (moe/sm90.cuh); two
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
// Epilogue modes (StdGroupedVariant::epilogue; Plan below): in place, each consumer stores its
// tile (through its staging buffer) before the next; deferred (the default), it packs its results
// to bf16 pairs in registers (for gate/up half of the GLU first) and stores them once the next
// tile's first three K steps are issued, so that the tensor cores work through the stores and
// the other half of the GLU; warps, it writes the packed pairs into a hand-off buffer in shared
// memory and goes on, and a warp of the producer warpgroup applies the GLU and stores (a 3-stage
// ring makes the room).
#include "collectives/error.hpp"
#include "moe/cuda_kernels.cuh"
#include "moe/sm90.cuh"
#include "moe/std_glu.cuh"
#include "moe/std_grouped_sm90.cuh"

#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <cstdint>

namespace layerbench::moe::cuda {

namespace {

using namespace sm90;

constexpr int BM = 128, BN = 256, BK = 64, THREADS = 384, GU_COLS = 128;
constexpr int A_STAGE = BM * BK * 2, B_HALF = (BN / 2) * BK * 2, STAGE_BYTES = A_STAGE + 2 * B_HALF;
// Staged epilogue: per consumer 64 rows x 64 bf16 at a 72-element pitch (144 B): the fragment
// writes hit 32 distinct banks and each row reads back as 16-byte chunks.
constexpr int C_PITCH = 72, C_BYTES = 64 * C_PITCH * 2;
// Hand-off buffer of the epilogue warps: a consumer's 64 packed words per thread, word j of
// thread t at 4 (128 j + t); then 16 bytes of tile data (row0, valid rows, first column).
constexpr int HANDOFF_BYTES = 128 * 64 * 4, HANDOFF_META = 16;

// Epilogue modes (StdEpilogue): in place (the consumers store each tile before the next),
// deferred (the consumers pack a tile to bf16 in registers and store it beside the next tile's
// first MMAs: 232 registers each, the producer warpgroup keeps 40), warps (the consumers hand
// the packed tile to two warps of the producer warpgroup through shared memory, which apply the
// GLU and store while the consumers go on: 3 stages make the room; 216 and 64 registers).
enum Mode : int { kInPlace = 0, kDeferred = 1, kWarps = 2 };
template <int MODE>
struct Plan {
  static constexpr int stages = MODE == kWarps ? 3 : 4;
  static constexpr int epi_bytes = MODE == kWarps ? 2 * (HANDOFF_BYTES + HANDOFF_META) : 2 * C_BYTES;
  static constexpr int barriers = 2 * stages + 4;  // ring full / empty, hand-off full / empty per consumer
  static constexpr int smem = stages * STAGE_BYTES + epi_bytes + barriers * 8 + 1024;  // + alignment slack
  static constexpr int producer_regs = MODE == kWarps ? 64 : 40;
  static constexpr int consumer_regs = MODE == kWarps ? 216 : 232;
  static_assert(smem <= 227 * 1024, "one CTA per SM");
  static_assert(2 * 128 * consumer_regs + 128 * producer_regs <= 65536, "the register file");
};
// Deferred epilogue of gate/up: the GLU of the last GLU_LATE of a consumer's 32 activation pairs
// runs in the next tile, beside its MMAs (the rest before: all 32 need more registers than the
// accumulators leave, and ptxas spills).
constexpr int GLU_LATE = 16;
constexpr int TILE_THREADS = 1024;

enum Epi : int { kStore = 0, kSiluGlu = 1, kClampedGlu = 2 };

#ifdef LB_WGMMA
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

__device__ __forceinline__ float2 unpack_bf16x2(std::uint32_t v) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&v));
}

// GLU of a packed gate pair and up pair into a packed activation pair.
template <int EPI>
__device__ __forceinline__ std::uint32_t glu_pair(std::uint32_t gp, std::uint32_t up, float alpha, float limit) {
  const float2 g = unpack_bf16x2(gp), u = unpack_bf16x2(up);
  const __nv_bfloat162 r = __floats2bfloat162_rn(std_glu_value<EPI == kClampedGlu>(g.x, u.x, alpha, limit),
                                                 std_glu_value<EPI == kClampedGlu>(g.y, u.y, alpha, limit));
  return *reinterpret_cast<const std::uint32_t*>(&r);
}

// GLU: the packed gate/up pairs j in [J0, J1) into packed activation pairs, in place (pk[j]).
template <int EPI, int J0, int J1>
__device__ __forceinline__ void glu_packed(std::uint32_t (&pk)[64], float alpha, float limit) {
#pragma unroll
  for (int j = J0; j < J1; ++j) pk[j] = glu_pair<EPI>(pk[j], pk[32 + j], alpha, limit);
}

// kWarps, consumer side: the accumulators packed as pack_tile does, straight into the hand-off
// buffer (word j of thread t at 4 (128 j + t): conflict-free).
template <int EPI>
__device__ __forceinline__ void hand_off_tile(const float (&acc)[128], std::uint32_t buf, int tid) {
#pragma unroll
  for (int j = 0; j < 64; ++j) {
    const int i = EPI == kStore ? 2 * j : j < 32 ? 2 * j : 64 + 2 * (j - 32);
    const __nv_bfloat162 v = __floats2bfloat162_rn(acc[i], acc[i + 1]);
    st_shared_b32(buf + (128 * j + tid) * 4, *reinterpret_cast<const std::uint32_t*>(&v));
  }
}

// kWarps, epilogue warp side: every tile one consumer hands off, until it hands off one with
// valid < 0. A 16-byte chunk (row r, n8 group G) is word j = 2 G + (r / 8) % 2 of the four
// threads 32 (r / 16) + 4 (r % 8) + {0..3}; lanes take 32 rows of one group, so that each load
// reads 512 contiguous bytes. GLU: the gate chunk and the up chunk (j + 32) into 8 activations.
template <int EPI>
__device__ __forceinline__ void drain_hand_offs(bf16* __restrict__ out, int n_cols, std::uint32_t buf,
                                                std::uint32_t full_bar, std::uint32_t empty_bar, float alpha,
                                                float limit) {
  const int lane = threadIdx.x & 31, l8 = lane & 7, w = lane >> 3;
  const std::uint32_t meta = buf + HANDOFF_BYTES;
  constexpr int GROUPS = EPI == kStore ? BN / 8 : GU_COLS / 8;
  for (int n = 0;; ++n) {
    mbar_wait(full_bar, n & 1);
    const uint4 m = ld_shared_v4(meta);
    const int row0 = static_cast<int>(m.x), valid = static_cast<int>(m.y), col0 = static_cast<int>(m.z);
    if (valid < 0) break;  // the consumer's last hand-off
#pragma unroll 4
    for (int k = 0; k < 2 * GROUPS; ++k) {
      const int G = k >> 1, h = k & 1, r = 16 * w + 8 * h + l8, j = 2 * G + h;
      const std::uint32_t at = buf + (128 * j + 32 * w + 4 * l8) * 4;
      uint4 v = ld_shared_v4(at);
      if constexpr (EPI != kStore) {
        const uint4 u = ld_shared_v4(at + 32 * 128 * 4);
        v = make_uint4(glu_pair<EPI>(v.x, u.x, alpha, limit), glu_pair<EPI>(v.y, u.y, alpha, limit),
                       glu_pair<EPI>(v.z, u.z, alpha, limit), glu_pair<EPI>(v.w, u.w, alpha, limit));
      }
      const int col = col0 + 8 * G;
      if (r < valid && col < n_cols) *reinterpret_cast<uint4*>(out + std::int64_t(row0 + r) * n_cols + col) = v;
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(empty_bar);  // the buffer is free
  }
}

// A packed tile (pack_tile) into out, 64 output columns at a time through the consumer's staging
// buffer (c_base), stored as 16-byte chunks of whole 128-byte row segments. kStore: columns
// 256 block + c of y (ld = n_cols). GLU (glu_packed first): the pairs (c, c + 128), c < 128, into
// act column 128 block + c (ld = n_cols = I). n_cols is a multiple of 8: a 16-byte chunk is in or
// out whole.
template <int EPI>
__device__ __forceinline__ void store_tile(std::uint32_t (&pk)[64], bf16* __restrict__ out, const StdTile& t,
                                           int n_cols, int g, int tid, std::uint32_t c_base, float alpha, float limit) {
  const int lane = tid & 31, w = tid >> 5;
  const int r0 = w * 16 + (lane >> 2), c0 = (lane & 3) * 2;
  const int col0 = t.block * (EPI == kStore ? BN : GU_COLS), valid = t.valid - g * 64;
  constexpr int CHUNKS = EPI == kStore ? BN / 64 : GU_COLS / 64;
#pragma unroll
  for (int q = 0; q < CHUNKS; ++q) {
    if (col0 + q * 64 >= n_cols) break;  // uniform across the warpgroup
    consumer_pair_sync(g);  // the previous chunk's reads are done
#pragma unroll
    for (int i = 32 * q; i < 32 * q + 32; i += 2) {
      const int row = r0 + ((i >> 1) & 1) * 8, col = c0 + ((i >> 2) - 8 * q) * 8;
      st_shared_b32(c_base + (row * C_PITCH + col) * 2, pk[i / 2]);
    }
    consumer_pair_sync(g);
#pragma unroll
    for (int p = 0; p < 4; ++p) {  // 64 rows x 8 chunks of 16 B
      const int id = tid + 128 * p, row = id >> 3, ch = id & 7;
      const int col = col0 + q * 64 + ch * 8;
      if (row < valid && col < n_cols) {
        const uint4 v = ld_shared_v4(c_base + (row * C_PITCH + ch * 8) * 2);
        *reinterpret_cast<uint4*>(out + std::int64_t(t.row0 + g * 64 + row) * n_cols + col) = v;
      }
    }
  }
}
#endif  // LB_WGMMA

// b_rows: weight rows per expert (2I or h); up: the up rows' offset from the gate rows (I; GLU).
// halves: a tile of at most 64 live rows loads 64 A rows and runs consumer 0 alone. PAIR: 2-CTA
// clusters take list entries 2p and 2p + 1; when both are live tiles of one (expert, block) each
// CTA loads one half of the weight box and multicasts it into both (the box crosses L2 once),
// else each loads its own. A stage is refilled once the consumer warps of both CTAs released it.
template <int EPI, bool PAIR, int MODE>
__global__ void __launch_bounds__(THREADS, 1)
    grouped_kernel(const __grid_constant__ CUtensorMap amap, const __grid_constant__ CUtensorMap amap64,
                   const __grid_constant__ CUtensorMap bmap, bf16* __restrict__ out, int n_cols,
                   const StdTile* __restrict__ tiles, int max_tiles, const int* __restrict__ live, int ksteps,
                   int b_rows, int up, int halves, float alpha, float limit) {
#ifdef LB_WGMMA
  using P = Plan<MODE>;
  constexpr int STAGES = P::stages;
  grid_dependents_may_start();  // the next GEMM's CTAs may take SMs as this grid's CTAs finish
  const int rank = PAIR ? cluster_rank() : 0;
  const int first = PAIR ? static_cast<int>(blockIdx.x) / 2 : static_cast<int>(blockIdx.x);
  const int stride = PAIR ? static_cast<int>(gridDim.x) / 2 : static_cast<int>(gridDim.x);
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t raw = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  const std::uint32_t base = (raw + 1023u) & ~1023u;
  const std::uint32_t c_base = base + STAGES * STAGE_BYTES;  // staging, or the two hand-off buffers
  const std::uint32_t full = c_base + P::epi_bytes, empty = full + 8 * STAGES;
  const std::uint32_t hand_full = empty + 8 * STAGES, hand_empty = hand_full + 16;  // 2 each
  if (threadIdx.x == 0) {
    for (int i = 0; i < STAGES; ++i) {
      mbar_init(full + 8 * i, 1);
      mbar_init(empty + 8 * i, PAIR ? 2 * 8 : 2 * 128);  // paired: the consumer warps of both CTAs
    }
    for (int g = 0; g < 2; ++g) {
      mbar_init(hand_full + 8 * g, 128);  // every thread of consumer g
      mbar_init(hand_empty + 8 * g, 1);   // its epilogue warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if constexpr (PAIR)
    cluster_sync();  // the peer's barriers exist before anything arrives on them
  else
    __syncthreads();
  grid_dependency_wait();  // the tile list (and, for down, act) are complete and visible
  const int n_tiles = min(max_tiles, *live);
  const int units = PAIR ? n_tiles / 2 : n_tiles;  // pairs (the list has an even length), or tiles
  const int wg = threadIdx.x >> 7;  // 0, 1: consumers; 2: the producer warpgroup
  if (wg == 2) {
    regs_release<P::producer_regs>();
    const int warp = (threadIdx.x >> 5) - 8;
    if (MODE == kWarps && (warp == 1 || warp == 2)) {  // the epilogue warp of consumer warp - 1
      const int g = warp - 1;
      drain_hand_offs<EPI>(out, n_cols, c_base + g * (HANDOFF_BYTES + HANDOFF_META), hand_full + 8 * g,
                           hand_empty + 8 * g, alpha, limit);
    } else if (threadIdx.x == 256) {
      int s = 0;
      for (int u = first; u < units; u += stride) {
        const StdTile t = tiles[PAIR ? 2 * u + rank : u];
        if (!PAIR && t.valid <= 0) continue;
        bool shared = false;
        if constexpr (PAIR) {
          const StdTile o = tiles[2 * u + (rank ^ 1)];
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
          tma_load_2d(dst, half ? &amap64 : &amap, ks * BK, t.row0, bar);
          if (shared) {
            tma_load_2d_multicast(dst + A_STAGE + rank * B_HALF, &bmap, ks * BK, rank ? r1 : r0, bar, 0x3);
          } else {
            tma_load_2d(dst + A_STAGE, &bmap, ks * BK, r0, bar);
            tma_load_2d(dst + A_STAGE + B_HALF, &bmap, ks * BK, r1, bar);
          }
        }
      }
    }
  } else {
    regs_take<P::consumer_regs>();
    const int tid = threadIdx.x & 127, lane = tid & 31;
    auto release = [&](int stage) {
      if constexpr (PAIR) {
        __syncwarp();
        if (lane == 0) {
          mbar_arrive(empty + 8 * stage);
          mbar_arrive_peer(empty + 8 * stage, rank ^ 1);
        }
      } else {
        mbar_arrive(empty + 8 * stage);
      }
    };
    float acc[128];
    std::uint32_t pk[64];         // kInPlace, kDeferred: the last tile's results, packed (pack_tile)
    StdTile pending{0, 0, 0, 0};  // kDeferred: that tile, while its epilogue waits (valid > 0)
    auto epilogue = [&](const StdTile& t) {
      if constexpr (MODE == kDeferred && EPI != kStore) glu_packed<EPI, 32 - GLU_LATE, 32>(pk, alpha, limit);
      store_tile<EPI>(pk, out, t, n_cols, wg, tid, c_base + wg * C_BYTES, alpha, limit);
    };
    const std::uint32_t hand_buf = c_base + wg * (HANDOFF_BYTES + HANDOFF_META);
    int handed = 0;  // kWarps: tiles handed to this consumer's epilogue warp
    auto hand_off = [&](const StdTile* t) {  // nullptr: the end
      if (handed > 0) mbar_wait(hand_empty + 8 * wg, (handed - 1) & 1);  // the last one is stored
      if (t) hand_off_tile<EPI>(acc, hand_buf, tid);
      if (tid == 0) {
        const int col0 = t ? t->block * (EPI == kStore ? BN : GU_COLS) : 0;
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(hand_buf + HANDOFF_BYTES),
                     "r"(t ? t->row0 + wg * 64 : 0), "r"(t ? t->valid - wg * 64 : -1), "r"(col0), "r"(0)
                     : "memory");
      }
      mbar_arrive(hand_full + 8 * wg);
      ++handed;
    };
    int s = 0;
    for (int u = first; u < units; u += stride) {
      const StdTile t = tiles[PAIR ? 2 * u + rank : u];
      if (!PAIR && t.valid <= 0) continue;
      if ((wg == 1 && halves && t.valid <= 64) || t.valid <= 0) {
        skip_tile<STAGES>(s, ksteps, full, release);  // no rows of this consumer
        continue;
      }
      if constexpr (MODE == kDeferred) {
        consume_tile_hooked<STAGES, STAGE_BYTES, A_STAGE, BK, 2>(acc, s, ksteps, full, base, wg, release, [&] {
          if (pending.valid > 0) epilogue(pending);
        });
        pending = t;
      } else {
        consume_tile<STAGES, STAGE_BYTES, A_STAGE, BK>(acc, s, ksteps, full, base, wg, release);
      }
      if constexpr (MODE == kWarps) {
        hand_off(&t);
      } else {
        pack_tile<EPI>(acc, pk);
        if constexpr (EPI != kStore) glu_packed<EPI, 0, MODE == kDeferred ? 32 - GLU_LATE : 32>(pk, alpha, limit);
        if constexpr (MODE == kInPlace) epilogue(t);
      }
    }
    if constexpr (MODE == kDeferred)
      if (pending.valid > 0) epilogue(pending);  // the last tile's
    if constexpr (MODE == kWarps) hand_off(nullptr);
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

// Both tile lists from the counts: per-thread chunks of experts, block scans of their rows and
// of their tiles per list, then every tile written by a search of the tile offsets.
__global__ void __launch_bounds__(TILE_THREADS)
    tiles_kernel(const int* __restrict__ counts, int experts, int nb0, int nb1, StdTile* __restrict__ t0, int max0,
                 StdTile* __restrict__ t1, int max1, int* __restrict__ live, int pack) {
  __shared__ int row_off[kStdGroupedMaxExperts + 1], tile_off[kStdGroupedMaxExperts + 1];
  __shared__ TileScan::TempStorage scratch;
  grid_dependents_may_start();  // the GEMM's CTAs set up beside this one and wait for its lists
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
    for (int t = tid; t < n; t += TILE_THREADS) {
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
    if (tid == 0) {
      if ((n & 1) && n < cap) out[n++] = StdTile{0, 0, 0, 0};  // an even length: the paired kernel's partners
      live[list] = n;
    }
  }
}

StdGroupedVariant g_variant;  // the launches' variant (std_grouped_set_variant)

template <int EPI, int MODE>
void launch_as(const CUtensorMap& amap, const CUtensorMap& amap64, const CUtensorMap& bmap, bf16* out, int n_cols,
               const StdTile* tiles, std::int64_t max_tiles, const int* live, int ksteps, int b_rows, int up,
               const ActivationSpec& a, cudaStream_t s) {
  constexpr int SMEM = Plan<MODE>::smem;
  int dev = 0, sms = 0;
  LB_CUDA_CHECK(cudaGetDevice(&dev));
  LB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int mt = static_cast<int>(max_tiles), half = g_variant.half_tiles ? 1 : 0;
  const auto alpha = static_cast<float>(a.alpha), limit = static_cast<float>(a.limit);
  if (!g_variant.paired) {
    ensure_max_dynamic_smem(reinterpret_cast<const void*>(grouped_kernel<EPI, false, MODE>), SMEM);
    sm90::Launch l(static_cast<unsigned>(std::max(1, std::min(mt, sms))), THREADS, SMEM, s);
    l.early_start();
    LB_CUDA_CHECK(cudaLaunchKernelEx(&l.cfg, grouped_kernel<EPI, false, MODE>, amap, amap64, bmap, out, n_cols, tiles,
                                     mt, live, ksteps, b_rows, up, half, alpha, limit));
    LB_CUDA_CHECK_LAUNCH();
    return;
  }
  ensure_max_dynamic_smem(reinterpret_cast<const void*>(grouped_kernel<EPI, true, MODE>), SMEM);
  sm90::PairLaunch pl(static_cast<unsigned>(sms / 2 * 2), THREADS, SMEM, s);
  pl.early_start();
  static int resident[3][3][64] = {};  // co-resident 2-CTA clusters per device (SMs pair up inside a GPC)
  int& clusters = resident[EPI][MODE][dev & 63];
  if (clusters == 0)
    LB_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, grouped_kernel<EPI, true, MODE>, &pl.cfg));
  const int grid_clusters = std::max(1, std::min(clusters, std::max(1, mt / 2)));
  pl.cfg.gridDim = dim3(static_cast<unsigned>(2 * grid_clusters));
  LB_CUDA_CHECK(cudaLaunchKernelEx(&pl.cfg, grouped_kernel<EPI, true, MODE>, amap, amap64, bmap, out, n_cols, tiles,
                                   mt, live, ksteps, b_rows, up, half, alpha, limit));
  LB_CUDA_CHECK_LAUNCH();
}

template <int EPI>
void launch(const CUtensorMap& amap, const CUtensorMap& amap64, const CUtensorMap& bmap, bf16* out, int n_cols,
            const StdTile* tiles, std::int64_t max_tiles, const int* live, int ksteps, int b_rows, int up,
            const ActivationSpec& a, cudaStream_t s) {
  switch (g_variant.epilogue) {
    case StdEpilogue::in_place:
      return launch_as<EPI, kInPlace>(amap, amap64, bmap, out, n_cols, tiles, max_tiles, live, ksteps, b_rows, up, a, s);
    case StdEpilogue::deferred:
      return launch_as<EPI, kDeferred>(amap, amap64, bmap, out, n_cols, tiles, max_tiles, live, ksteps, b_rows, up, a, s);
    case StdEpilogue::warps:
      return launch_as<EPI, kWarps>(amap, amap64, bmap, out, n_cols, tiles, max_tiles, live, ksteps, b_rows, up, a, s);
  }
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

const char* to_string(StdEpilogue e) {
  switch (e) {
    case StdEpilogue::in_place: return "epilogue in place";
    case StdEpilogue::deferred: return "deferred epilogue";
    case StdEpilogue::warps: return "epilogue warps";
  }
  return "?";
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
  tiles_kernel<<<1, TILE_THREADS, 0, s>>>(counts, static_cast<int>(experts), static_cast<int>(gu_blocks),
                                          static_cast<int>(dn_blocks), gu_tiles, static_cast<int>(gu_max), dn_tiles,
                                          static_cast<int>(dn_max), live, g_variant.pack_leftovers ? 1 : 0);
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
