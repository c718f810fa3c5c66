// Hopper (sm_90a) expert down projection with warpgroup MMA (wgmma):
//   yd[r, :] = act[r, :] . W_down[e]      (act (rows, I), W_down[e] (I, d), fp32 accumulation)
// over the same 128-row expert tile list as the gate/up kernels (moe/hopper/expert_gemm_sm90.cu).
//
// Weights are read in a K-major copy prepared once per weight set (prepare_wdown_kmajor):
// Wdk (E, 256, Ip) bf16, Ip = I rounded up to 64, rows n >= d and columns k >= I zero.
//
// Persistent CTAs (one per SM) walk the tile list with a stride of the grid; per tile the
// (128, 256) output accumulates over Ip / 64 steps. Warpgroups 0 and 1 consume (rows 0-63 and
// 64-127); a ninth warp produces: one thread issues the TMA copies of each step's
//   A  (128, 64)  act rows (rows past the matrix and k >= I arrive as zeros)
//   B  (256, 64)  Wdk rows of the tile's expert
// into a STAGES-deep ring guarded by full / empty mbarriers; the producer runs ahead into the
// next tile while the consumers store the last one. Shared-memory tiles use the 128-byte
// swizzle (see moe/hopper/sm90.cuh).
//
// Variants (cuda::Sm90Variant, defaults = the measured best): `staged_epilogue` stages each
// consumer's bf16 results in shared memory, 64 columns at a time, and stores whole 128-byte row
// segments (16 bytes per thread) instead of 4-byte fragment stores; `half_tiles` lets a tile of
// at most 64 live rows load only 64 A rows and run warpgroup 0's MMAs alone (warpgroup 1 hands
// its stages straight back); `down_prefetch` > 0 asks L2 for the A box that many k steps ahead (into
// the next tile of this CTA), beyond the shared-memory ring, and with `down_prefetch_b` the
// weight box of that step too.
//
// Paired mode (a device-built list whose entries 2p, 2p + 1 are two tiles of one expert, the
// second possibly empty): the two CTAs of a 2-CTA cluster take the two tiles of a pair and
// share the weight stream. Each producer loads its own A and one half (128 rows) of each B
// stage, multicast into both CTAs; a stage is refilled once the consumer warps of both CTAs
// released it (each consumer warp arrives on its own and on the peer's empty barrier). The
// weights then cross L2 once per pair instead of once per tile. An empty partner loads no A
// and stores nothing (its MMAs run on stale shared memory, keeping the wgmma code unbranched).
#include "collectives/error.hpp"
#include "moe/hopper/experts_sm90.cuh"
#include "moe/hopper/sm90.cuh"

#include <algorithm>
#include <cstdint>

namespace layerbench::moe::cuda {

namespace {

using namespace sm90;

constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, THREADS = 288;
constexpr int A_STAGE = BM * BK * 2, B_STAGE = BN * BK * 2, STAGE_BYTES = A_STAGE + B_STAGE;  // bytes
// Staged epilogue: per consumer 64 rows x 64 bf16 at a 72-element pitch (144 B): the fragment
// writes hit 32 distinct banks and each row reads back as 16-byte chunks.
constexpr int C_PITCH = 72, C_BYTES = 64 * C_PITCH * 2;
// ring, staging, mbarriers, alignment slack
template <bool STAGED>
constexpr int smem_bytes() {
  return STAGES * STAGE_BYTES + (STAGED ? 2 * C_BYTES : 0) + 2 * STAGES * 8 + 1024;
}
static_assert(smem_bytes<true>() <= 227 * 1024, "one CTA per SM");
static_assert(BM == kExpertTileRows, "one expert tile per CTA iteration");

#ifdef LB_WGMMA
// The tile's fp32 accumulators of one consumer (rows 64 g + 16 w + l/4 (+8), per n8 group q the
// columns 8q + 2(l%4) + {0,1}) to bf16 rows of yd. STAGED: 64 columns at a time through the
// consumer's staging buffer, stored as 16-byte chunks of whole 128-byte row segments.
template <bool STAGED>
__device__ __forceinline__ void store_tile(const float (&acc)[128], bf16* out, int valid, int d, int g, int tid,
                                           std::uint32_t c_base) {
  const int lane = tid & 31, w = tid >> 5;
  const int r0 = w * 16 + (lane >> 2), c0 = (lane & 3) * 2;
  if constexpr (!STAGED) {
#pragma unroll
    for (int i = 0; i < 128; i += 2) {
      const int row = g * 64 + r0 + ((i >> 1) & 1) * 8, col = c0 + (i >> 2) * 8;
      if (row < valid && col < d)
        *reinterpret_cast<__nv_bfloat162*>(out + std::int64_t(row) * d + col) = __floats2bfloat162_rn(acc[i], acc[i + 1]);
    }
  } else {
#pragma unroll
    for (int q = 0; q < BN / 64; ++q) {
      if (q * 64 >= d) break;  // uniform: d is a kernel argument
      consumer_pair_sync(g);  // the previous chunk's reads are done
#pragma unroll
      for (int i = 32 * q; i < 32 * q + 32; i += 2) {
        const int row = r0 + ((i >> 1) & 1) * 8, col = c0 + ((i >> 2) - 8 * q) * 8;
        const __nv_bfloat162 v = __floats2bfloat162_rn(acc[i], acc[i + 1]);
        st_shared_bf16x2(c_base + (row * C_PITCH + col) * 2, v);
      }
      consumer_pair_sync(g);
#pragma unroll
      for (int p = 0; p < 4; ++p) {  // 64 rows x 8 chunks of 16 B
        const int id = tid + 128 * p, row = id >> 3, ch = id & 7;
        const int grow = g * 64 + row, col = q * 64 + ch * 8;
        if (grow < valid && col < d) {
          const uint4 v = ld_shared_v4(c_base + (row * C_PITCH + ch * 8) * 2);
          *reinterpret_cast<uint4*>(out + std::int64_t(grow) * d + col) = v;
        }
      }
    }
  }
}
#endif  // LB_WGMMA

// amap64: the same matrix as amap in boxes of 64 rows (the half tiles' A).
template <bool PAIR, bool STAGED>
__global__ void __launch_bounds__(THREADS, 1)
    down_sm90_kernel(const __grid_constant__ CUtensorMap amap, const __grid_constant__ CUtensorMap amap64,
                     const __grid_constant__ CUtensorMap wmap, bf16* __restrict__ yd, const ExpertTile* __restrict__ tiles,
                     int n_tiles, const int* __restrict__ n_live, int d, int ksteps, int half_tiles, int prefetch, int prefetch_b) {
#ifdef LB_WGMMA
  // A device-built list holds its live count on the device (entries past it are empty).
  if (n_live != nullptr) n_tiles = min(n_tiles, *n_live);
  const int rank = PAIR ? cluster_rank() : 0;
  const int first = PAIR ? static_cast<int>(blockIdx.x) / 2 : static_cast<int>(blockIdx.x);
  const int stride = PAIR ? static_cast<int>(gridDim.x) / 2 : static_cast<int>(gridDim.x);
  const int units = PAIR ? n_tiles / 2 : n_tiles;  // pairs, or tiles
  // Half tiles (unpaired only): at most 64 live rows, computed by consumer 0 alone.
  const bool halves = !PAIR && half_tiles != 0;
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t raw = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  const std::uint32_t base = (raw + 1023u) & ~1023u;
  const std::uint32_t c_base = base + STAGES * STAGE_BYTES;
  const std::uint32_t full = c_base + (STAGED ? 2 * C_BYTES : 0), empty = full + 8 * STAGES;
  init_ring<STAGES, PAIR>(full, empty);
  const int wg = threadIdx.x >> 7;  // 0, 1: consumers; 2: the producer warp
  if (wg == 2) {
    if (threadIdx.x == 256) {
      int s = 0;
      for (int u = first; u < units; u += stride) {
        const ExpertTile tile = tiles[PAIR ? 2 * u + rank : u];
        const bool live = !PAIR || tile.valid > 0;
        const bool half = halves && tile.valid <= 64;
        const int a_bytes = live ? (half ? A_STAGE / 2 : A_STAGE) : 0;
        for (int ks = 0; ks < ksteps; ++ks, ++s) {
          const int stage = s % STAGES;
          if (prefetch > 0) {  // the A box `prefetch` steps ahead, possibly in this CTA's next tile
            const int t = ks + prefetch;
            if (t < ksteps) {
              if (live) prefetch_l2(half ? &amap64 : &amap, t * BK, static_cast<int>(tile.row0));
              if (prefetch_b) prefetch_l2(&wmap, t * BK, tile.expert * BN);
            } else if (t < 2 * ksteps && u + stride < units) {
              const ExpertTile nx = tiles[PAIR ? 2 * (u + stride) + rank : u + stride];
              if (!PAIR || nx.valid > 0) prefetch_l2(&amap, (t - ksteps) * BK, static_cast<int>(nx.row0));
              if (prefetch_b) prefetch_l2(&wmap, (t - ksteps) * BK, nx.expert * BN);
            }
          }
          if (s >= STAGES) mbar_wait(empty + 8 * stage, ((s / STAGES) - 1) & 1);
          const std::uint32_t dst = base + stage * STAGE_BYTES, bar = full + 8 * stage;
          mbar_arrive_expect_tx(bar, a_bytes + B_STAGE);
          if (live) tma_load_2d(dst, half ? &amap64 : &amap, ks * BK, static_cast<int>(tile.row0), bar);
          if constexpr (PAIR)
            tma_load_2d_multicast(dst + A_STAGE + rank * (B_STAGE / 2), &wmap, ks * BK, tile.expert * BN + rank * (BN / 2),
                                  bar, 0x3);
          else
            tma_load_2d(dst + A_STAGE, &wmap, ks * BK, tile.expert * BN, bar);
        }
      }
    }
  } else {
    const int tid = threadIdx.x & 127, lane = tid & 31;
    auto release = [&](int stage) { release_stage<PAIR>(empty, stage, lane, rank); };
    float acc[128];
    int s = 0;
    for (int u = first; u < units; u += stride) {
      const ExpertTile tile = tiles[PAIR ? 2 * u + rank : u];
      if (halves && wg == 1 && tile.valid <= 64) {
        skip_tile<STAGES>(s, ksteps, full, release);  // no rows of this consumer
        continue;
      }
      consume_tile<STAGES, STAGE_BYTES, A_STAGE, BK>(acc, s, ksteps, full, base, wg, release);
      store_tile<STAGED>(acc, yd + tile.row0 * d, tile.valid, d, wg, tid, c_base + wg * C_BYTES);
    }
  }
  if constexpr (PAIR) cluster_sync();  // no CTA leaves while its peer may still write into it
#else
  __trap();  // never launched: the launcher requires a compute capability 9.0 device
#endif
}

// W_down (E, I, d) -> Wdk (E, 256, Ip), see the file comment.
__global__ void prepare_wdown_kmajor_kernel(const bf16* __restrict__ wd, bf16* __restrict__ wdk, std::int64_t experts,
                                            int d, int inter) {
  const int ip = (inter + BK - 1) / BK * BK;
  const std::int64_t n = experts * BN * ip;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const int k = static_cast<int>(i % ip);
    const int col = static_cast<int>((i / ip) % BN);
    const std::int64_t e = i / (std::int64_t(ip) * BN);
    wdk[i] = (k < inter && col < d) ? wd[(e * inter + k) * d + col] : __float2bfloat16_rn(0.0f);
  }
}

template <bool STAGED>
void launch(const CUtensorMap& amap, const CUtensorMap& amap64, const CUtensorMap& wmap, bf16* yd, const ExpertTile* tiles,
            int n_tiles, const int* n_live, int d, int ksteps, bool paired, const Sm90Variant& v, cudaStream_t s) {
  int dev = 0;
  const int sms = sm90::current_device_sms(dev);
  constexpr int smem = smem_bytes<STAGED>();
  const int half = v.half_tiles ? 1 : 0, pf = v.down_prefetch, pfb = v.down_prefetch_b ? 1 : 0;
  if (!paired) {
    ensure_max_dynamic_smem(reinterpret_cast<const void*>(down_sm90_kernel<false, STAGED>), smem);
    const int grid = std::max(1, std::min(n_tiles, sms));
    down_sm90_kernel<false, STAGED><<<grid, THREADS, smem, s>>>(amap, amap64, wmap, yd, tiles, n_tiles, n_live, d, ksteps,
                                                               half, pf, pfb);
    LB_CUDA_CHECK_LAUNCH();
    return;
  }
  ensure_max_dynamic_smem(reinterpret_cast<const void*>(down_sm90_kernel<true, STAGED>), smem);
  PairLaunch pl(static_cast<unsigned>(sms / 2 * 2), THREADS, smem, s);
  static int resident[2][64] = {};  // co-resident 2-CTA clusters per device (SMs pair up inside a GPC)
  int& clusters = resident[STAGED ? 1 : 0][dev & 63];
  if (clusters == 0) LB_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, down_sm90_kernel<true, STAGED>, &pl.cfg));
  const int grid_clusters = std::max(1, std::min(clusters, std::max(1, n_tiles / 2)));
  pl.cfg.gridDim = dim3(static_cast<unsigned>(2 * grid_clusters));
  LB_CUDA_CHECK(cudaLaunchKernelEx(&pl.cfg, down_sm90_kernel<true, STAGED>, amap, amap64, wmap, yd, tiles, n_tiles, n_live,
                                   d, ksteps, half, pf, pfb));
  LB_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool down_sm90_supported(std::int64_t d, std::int64_t inter) {
  return sm90::device_is_sm90() && d > 0 && d <= BN && d % 8 == 0 && inter >= BK && inter % 8 == 0;
}

std::int64_t wdown_kmajor_elems(std::int64_t experts, std::int64_t inter) {
  return experts * BN * ((inter + BK - 1) / BK * BK);
}

void prepare_wdown_kmajor(const bf16* wd, bf16* wdk, std::int64_t experts, std::int64_t d, std::int64_t inter,
                          cudaStream_t s) {
  LB_CHECK(d > 0 && d <= BN && inter > 0, "W_down K-major copy: 0 < d_head <= 256");
  const std::int64_t n = wdown_kmajor_elems(experts, inter);
  if (n == 0) return;
  const int blocks = static_cast<int>(std::min<std::int64_t>((n + 255) / 256, 65535LL * 8));
  prepare_wdown_kmajor_kernel<<<blocks, 256, 0, s>>>(wd, wdk, experts, static_cast<int>(d), static_cast<int>(inter));
  LB_CUDA_CHECK_LAUNCH();
}

void down_sm90(const bf16* act, std::int64_t rows, const bf16* wdk, std::int64_t experts, bf16* yd,
               const ExpertTile* tiles, std::int64_t n_tiles, std::int64_t d, std::int64_t inter, cudaStream_t s,
               const int* n_live, bool paired, const Sm90Variant& v) {
  if (n_tiles == 0) return;
  LB_CHECK(v.down_prefetch >= 0, "Hopper down kernel: prefetch distance >= 0");
  LB_CHECK(!paired || n_tiles % 2 == 0, "Hopper down kernel: a paired tile list has an even length");
  LB_CHECK(down_sm90_supported(d, inter),
           "Hopper down kernel: needs a compute capability 9.0 device, 0 < d_head <= 256, I >= 64, d and I multiples of 8");
  const std::int64_t ip = (inter + BK - 1) / BK * BK;
  LB_CHECK(n_tiles < (std::int64_t{1} << 31) && rows < (std::int64_t{1} << 31) && experts * BN < (std::int64_t{1} << 31),
           "Hopper down kernel: TMA coordinates and tile counts are 32-bit");
  const CUtensorMap amap = encode_tma_2d(act, static_cast<std::uint64_t>(inter), static_cast<std::uint64_t>(rows), BK, BM);
  const CUtensorMap amap64 = encode_tma_2d(act, static_cast<std::uint64_t>(inter), static_cast<std::uint64_t>(rows), BK, BM / 2);
  const CUtensorMap wmap =
      encode_tma_2d(wdk, static_cast<std::uint64_t>(ip), static_cast<std::uint64_t>(experts * BN), BK, paired ? BN / 2 : BN);
  const int nt = static_cast<int>(n_tiles), di = static_cast<int>(d), ks = static_cast<int>(ip / BK);
  if (v.staged_epilogue)
    launch<true>(amap, amap64, wmap, yd, tiles, nt, n_live, di, ks, paired, v, s);
  else
    launch<false>(amap, amap64, wmap, yd, tiles, nt, n_live, di, ks, paired, v, s);
}

}  // namespace layerbench::moe::cuda
