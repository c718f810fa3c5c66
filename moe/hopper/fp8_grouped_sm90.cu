// The standard block's FP8 (e4m3, rowwise-scaled) grouped expert GEMMs on Hopper
// (moe/hopper/fp8_grouped_sm90.cuh).
//
// The BF16 kernels' structure (moe/hopper/std_grouped_sm90.cu) with one-byte operands: persistent CTAs
// (or 2-CTA clusters sharing the weight box by multicast) walk std_grouped_tiles' list; a tile
// is 128 rows of one expert times a 256-wide block of weight rows, consumed by warpgroups 0 and 1
// (64 rows each, wgmma m64n256k32 e4m3 into fp32), fed by one producer thread of warpgroup 2
// through a 4-deep ring of TMA copies: A (128, 128) and B two (128, 128) boxes per K step of 128
// e4m3, the same 128 bytes per row (one 128-byte swizzle row) and 48 KiB per stage as the BF16
// kernels' (128, 64) bf16 boxes. Both operands are K-major: FP8 wgmma has no transpose.
//
// Scales: at a tile's start each consumer warpgroup fetches its rows' activation scales and the
// tile's 256 weight-column scales into its own shared buffer (cp.async, no registers held; two
// buffers, alternating per tile, so that a fetch never overwrites scales another thread of the
// warpgroup may still read); after the tile's MMAs the epilogue multiplies each fp32 accumulator
// by its row's and column's scale before the bf16 rounding (and, for gate/up, the GLU), then
// stores through the staging buffer, deferred and spread over the next tile's K steps as the
// BF16 kernels' default does.
#include "collectives/error.hpp"
#include "moe/hopper/experts_sm90.cuh"
#include "moe/hopper/fp8_grouped_sm90.cuh"
#include "moe/hopper/grouped_epilogue.cuh"
#include "moe/hopper/sm90.cuh"

#include <cuda_fp8.h>

#include <algorithm>
#include <cstdint>

namespace layerbench::moe::cuda {

namespace {

using namespace sm90;

constexpr int BM = 128, BN = 256, BK = 128, STAGES = 4, THREADS = 384, GU_COLS = 128;
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
constexpr int GLU_LATE = 16;  // as the BF16 kernels: the GLU of the last 16 of 32 pairs runs deferred
constexpr int A_STAGE = BM * BK, B_HALF = (BN / 2) * BK, STAGE_BYTES = A_STAGE + 2 * B_HALF;
constexpr int C_PITCH = 72, C_BYTES = 64 * C_PITCH * 2;
// Per consumer warpgroup two scale buffers of 256 column scales + 64 row scales (fp32).
constexpr int S_FLOATS = BN + 64, S_BYTES = S_FLOATS * 4;
constexpr int SMEM = STAGES * STAGE_BYTES + 2 * C_BYTES + 4 * S_BYTES + 2 * STAGES * 8 + 1024;
static_assert(SMEM <= 227 * 1024, "one CTA per SM");

// kSiluGluQ / kClampedGluQ: the GLU, then the act quantized in the epilogue to e4m3 with one scale
// per row per 128 columns (the tile's block: a rowwise scale would need the row's amax across
// all of I's column blocks, i.e. other CTAs' tiles).
enum Epi : int { kStore = 0, kSiluGlu = 1, kClampedGlu = 2, kSiluGluQ = 3, kClampedGluQ = 4 };
__host__ __device__ constexpr bool clamped_epi(int e) { return e == kClampedGlu || e == kClampedGluQ; }
__host__ __device__ constexpr bool quant_epi(int e) { return e == kSiluGluQ || e == kClampedGluQ; }
static_assert(BN == grouped::kTileCols && GU_COLS == grouped::kGluCols && C_PITCH == grouped::kStagePitch,
              "the shared epilogue's tile (moe/hopper/grouped_epilogue.cuh)");

#ifdef LB_WGMMA
// The GLU and the staged store of a packed tile, as the BF16 kernels' (moe/hopper/grouped_epilogue.cuh).
using grouped::glu_packed;
using grouped::ld_shared_f32;
using grouped::store_tile;
using grouped::unpack_bf16x2;

__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_4(std::uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }
__device__ __forceinline__ float2 ld_shared_f32x2(std::uint32_t addr) {
  float2 v;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(addr) : "memory");
  return v;
}

// A consumer warpgroup's scales of a tile into `sbuf`: column c (of 256) of the tile is weight row
// (c < 128 ? r0 : r1) + c % 128 (the two B boxes), floats [0, 256); the warpgroup's 64 rows from
// row_base, floats [256, 320). Indices past the tensors are clamped (their columns and rows are
// computed, not stored). Threads 0-63 copy 16 bytes of column scales, 64-127 one row scale.
__device__ __forceinline__ void fetch_scales(std::uint32_t sbuf, const float* __restrict__ sa, int rows_cap,
                                             const float* __restrict__ sb, int sb_n, int r0, int r1, int row_base,
                                             int tid) {
  if (tid < 64) {
    const int c = 4 * tid;
    const int w = min((c < 128 ? r0 : r1) + (c & 127), sb_n - 4);
    cp_async_16(sbuf + c * 4, sb + w);
  } else {
    const int r = min(row_base + tid - 64, rows_cap - 1);
    cp_async_4(sbuf + (BN + tid - 64) * 4, sa + r);
  }
  cp_async_commit();
}

// One consumer's accumulators (rows 16 w + l/4 (+8) of its 64; per n8 group q the columns
// 8q + 2(l%4) + {0,1}) scaled by their row's and column's scales and rounded to bf16 pairs:
// kStore all 128 values; GLU the 64 gate values (columns c < 128) then the 64 up values (c + 128).
template <int EPI>
__device__ __forceinline__ void pack_tile_scaled(const float (&acc)[128], std::uint32_t (&pk)[64], std::uint32_t sbuf,
                                                 int tid) {
  const int lane = tid & 31, r = (tid >> 5) * 16 + (lane >> 2);
  const float sa0 = ld_shared_f32(sbuf + (BN + r) * 4), sa1 = ld_shared_f32(sbuf + (BN + r + 8) * 4);
  // Pairs j = 2m and 2m + 1 (rows r and r + 8) share column group m: one load of its two scales.
#pragma unroll
  for (int m = 0; m < 32; ++m) {
    const int i = EPI == kStore ? 4 * m : m < 16 ? 4 * m : 64 + 4 * (m - 16);
    const float2 sc = ld_shared_f32x2(sbuf + (8 * (i >> 2) + 2 * (lane & 3)) * 4);
    const __nv_bfloat162 v0 = __floats2bfloat162_rn(acc[i] * sa0 * sc.x, acc[i + 1] * sa0 * sc.y);
    const __nv_bfloat162 v1 = __floats2bfloat162_rn(acc[i + 2] * sa1 * sc.x, acc[i + 3] * sa1 * sc.y);
    pk[2 * m] = *reinterpret_cast<const std::uint32_t*>(&v0);
    pk[2 * m + 1] = *reinterpret_cast<const std::uint32_t*>(&v1);
  }
}

// The act pairs pk[0..31] (bf16, after the GLU) quantized per row over the tile's 128 columns
// (moe/fp8.hpp's recipe on the bf16 values: s = max(amax, 1e-4) / 448, q = e4m3(v / s)): the
// row amax in-thread, then over the 4 lanes that share the row; columns past n_cols count 0.
// pk[j] receives pair j's two codes (low 16 bits); s0 / s1 the scales of rows r and r + 8.
__device__ __forceinline__ void quantize_packed(std::uint32_t (&pk)[64], const StdTile& t, int n_cols, int tid,
                                                float& s0, float& s1) {
  const int c0 = (tid & 3) * 2, col0 = t.block * GU_COLS;
  float am0 = 0.0f, am1 = 0.0f;
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    const float2 v = unpack_bf16x2(pk[j]);
    const int col = col0 + 8 * (j >> 1) + c0;
    const float m = fmaxf(col < n_cols ? fabsf(v.x) : 0.0f, col + 1 < n_cols ? fabsf(v.y) : 0.0f);
    if (j & 1)
      am1 = fmaxf(am1, m);
    else
      am0 = fmaxf(am0, m);
  }
#pragma unroll
  for (int o = 1; o <= 2; o <<= 1) {
    am0 = fmaxf(am0, __shfl_xor_sync(0xffffffffu, am0, o));
    am1 = fmaxf(am1, __shfl_xor_sync(0xffffffffu, am1, o));
  }
  s0 = fmaxf(am0, 1e-4f) / 448.0f;  // IEEE division (no fast math): the host's scale
  s1 = fmaxf(am1, 1e-4f) / 448.0f;
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    const float2 v = unpack_bf16x2(pk[j]);
    const float sc = (j & 1) ? s1 : s0;
    pk[j] = static_cast<std::uint32_t>(
        __nv_cvt_float2_to_fp8x2(make_float2(v.x / sc, v.y / sc), __NV_SATFINITE, __NV_E4M3));
  }
}

// The quantized act of a tile (64 rows x 128 e4m3 per warpgroup) through the staging buffer
// (rows of 144 bytes), 16-byte stores; its scales (rows_cap, qblocks) at column t.block.
__device__ __forceinline__ void store_tile_q(const std::uint32_t (&pk)[64], std::uint8_t* __restrict__ outq,
                                             float* __restrict__ outs, const StdTile& t, int n_cols, int qblocks,
                                             int g, int tid, std::uint32_t c_base, float s0, float s1) {
  const int lane = tid & 31, w = tid >> 5;
  const int r0 = w * 16 + (lane >> 2), c0 = (lane & 3) * 2;
  const int col0 = t.block * GU_COLS, valid = t.valid - g * 64, row0 = t.row0 + g * 64;
  consumer_pair_sync(g);
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    const std::uint16_t two = static_cast<std::uint16_t>(pk[j]);
    asm volatile("st.shared.b16 [%0], %1;\n" ::"r"(c_base + (r0 + 8 * (j & 1)) * C_PITCH * 2 + c0 + 8 * (j >> 1)),
                 "h"(two)
                 : "memory");
  }
  consumer_pair_sync(g);
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const int id = tid + 128 * p, row = id >> 3, ch = id & 7, col = col0 + ch * 16;
    if (row < valid && col < n_cols)
      *reinterpret_cast<uint4*>(outq + std::int64_t(row0 + row) * n_cols + col) =
          ld_shared_v4(c_base + (row * C_PITCH * 2) + ch * 16);
  }
  if ((lane & 3) == 0) {
    if (r0 < valid) outs[std::int64_t(row0 + r0) * qblocks + t.block] = s0;
    if (r0 + 8 < valid) outs[std::int64_t(row0 + r0 + 8) * qblocks + t.block] = s1;
  }
}
#endif  // LB_WGMMA

// b_rows: weight rows per expert (2I or h); up: the up rows' offset from the gate rows (I; GLU).
// sa: the A rows' scales (rows_cap); sb: the weight rows' scales (sb_n = experts * b_rows).
template <int EPI, bool PAIR>
__global__ void __launch_bounds__(THREADS, 1)
    fp8_kernel(const __grid_constant__ CUtensorMap amap, const __grid_constant__ CUtensorMap amap64,
               const __grid_constant__ CUtensorMap bmap, bf16* __restrict__ out, int n_cols,
               const StdTile* tiles, int max_tiles, const int* live, int ksteps, int b_rows,
               int up, int halves, float alpha, float limit, const float* __restrict__ sa, int rows_cap,
               const float* __restrict__ sb, int sb_n, std::uint8_t* __restrict__ outq, float* __restrict__ outs,
               int qblocks, int staggered) {
#ifdef LB_WGMMA
  grid_dependents_may_start();
  const int rank = PAIR ? cluster_rank() : 0;
  const int first = PAIR ? static_cast<int>(blockIdx.x) / 2 : static_cast<int>(blockIdx.x);
  const int stride = PAIR ? static_cast<int>(gridDim.x) / 2 : static_cast<int>(gridDim.x);
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t raw = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  const std::uint32_t base = (raw + 1023u) & ~1023u;
  const std::uint32_t c_base = base + STAGES * STAGE_BYTES;
  const std::uint32_t s_base = c_base + 2 * C_BYTES;
  const std::uint32_t full = s_base + 4 * S_BYTES, empty = full + 8 * STAGES;
  init_ring<STAGES, PAIR>(full, empty);
  grid_dependency_wait();
  const int n_tiles = min(max_tiles, load_after_wait(live));
  const int units = PAIR ? n_tiles / 2 : n_tiles;
  const int wg = threadIdx.x >> 7;
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
        const bool half = halves && t.valid <= 64, none = t.valid <= 0;
        for (int ks = 0; ks < ksteps; ++ks, ++s) {
          const int stage = s % STAGES;
          if (s >= STAGES) mbar_wait(empty + 8 * stage, ((s / STAGES) - 1) & 1);
          const std::uint32_t dst = base + stage * STAGE_BYTES, bar = full + 8 * stage;
          mbar_arrive_expect_tx(bar, none ? 0 : half ? STAGE_BYTES - A_STAGE / 2 : STAGE_BYTES);
          if (none) continue;
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
    regs_take<CONSUMER_REGS>();
    const int tid = threadIdx.x & 127, lane = tid & 31;
    auto release = [&](int stage) { release_stage<PAIR>(empty, stage, lane, rank); };
    float acc[128];
    std::uint32_t pk[64];
    StdTile pending{0, 0, 0, 0};
    float qs0 = 0.0f, qs1 = 0.0f;  // the pending tile's act scales (quant_epi)
    // Staggered: warpgroup 1 waits until warpgroup 0 has issued its first tile's first K steps (or
    // has none); the offset then stays, so that one's epilogue overlaps the other's MMAs.
    Stagger stagger(staggered != 0, wg);
    auto piece = [&]<int Q>() {
      if constexpr (Q == 0) stagger.let_go();
      if (pending.valid <= 0) return;
      if constexpr (quant_epi(EPI)) {
        if constexpr (Q == 0)
          store_tile_q(pk, outq, outs, pending, n_cols, qblocks, wg, tid, c_base + wg * C_BYTES, qs0, qs1);
        return;
      }
      if constexpr (EPI != kStore) {
        constexpr int j0 = 16 * Q > 32 - GLU_LATE ? 16 * Q : 32 - GLU_LATE, j1 = 16 * Q + 16;
        if constexpr (j0 < j1) glu_packed<clamped_epi(EPI), j0, j1>(pk, alpha, limit);
      }
      store_tile<EPI == kStore, Q, Q + 1>(pk, out, pending, n_cols, wg, tid, c_base + wg * C_BYTES);
    };
    int s = 0, consumed = 0;
    for (int u = first; u < units; u += stride) {
      const StdTile t = load16_after_wait(tiles + (PAIR ? 2 * u + rank : u));
      if (!PAIR && t.valid <= 0) continue;
      if ((wg == 1 && halves && t.valid <= 64) || t.valid <= 0) {
        stagger.let_go();
        skip_tile<STAGES>(s, ksteps, full, release);
        continue;
      }
      const std::uint32_t sbuf = s_base + (2 * wg + (consumed & 1)) * S_BYTES;
      {
        const int r0 = t.expert * b_rows + t.block * (EPI == kStore ? BN : GU_COLS);
        fetch_scales(sbuf, sa, rows_cap, sb, sb_n, r0, EPI == kStore ? r0 + BN / 2 : r0 + up, t.row0 + wg * 64, tid);
      }
      consume_tile_hooked<STAGES, STAGE_BYTES, A_STAGE, BK, 2, EPI == kStore ? BN / 64 : GU_COLS / 64, true>(
          acc, s, ksteps, full, base, wg, release, piece);
      pending = t;
      cp_async_wait_all();
      consumer_pair_sync(wg);  // the warpgroup's scales are in shared memory
      pack_tile_scaled<EPI>(acc, pk, sbuf, tid);
      ++consumed;
      if constexpr (quant_epi(EPI)) {
        glu_packed<clamped_epi(EPI), 0, 32>(pk, alpha, limit);
        quantize_packed(pk, t, n_cols, tid, qs0, qs1);
      } else if constexpr (EPI != kStore) {
        glu_packed<clamped_epi(EPI), 0, 32 - GLU_LATE>(pk, alpha, limit);
      }
    }
    stagger.let_go();
    if (pending.valid > 0) {
      if constexpr (quant_epi(EPI)) {
        store_tile_q(pk, outq, outs, pending, n_cols, qblocks, wg, tid, c_base + wg * C_BYTES, qs0, qs1);
      } else {
        if constexpr (EPI != kStore) glu_packed<clamped_epi(EPI), 32 - GLU_LATE, 32>(pk, alpha, limit);
        store_tile<EPI == kStore>(pk, out, pending, n_cols, wg, tid, c_base + wg * C_BYTES);
      }
    }
  }
  if constexpr (PAIR) cluster_sync();
#else
  __trap();
#endif
}

template <int EPI>
void launch(const CUtensorMap& amap, const CUtensorMap& amap64, const CUtensorMap& bmap, bf16* out, int n_cols,
            const StdTile* tiles, std::int64_t max_tiles, const int* live, int ksteps, int b_rows, int up,
            const ActivationSpec& a, const float* sa, int rows_cap, const float* sb, int sb_n, cudaStream_t s,
            std::uint8_t* outq = nullptr, float* outs = nullptr, int qblocks = 0) {
  int dev = 0;
  const int sms = sm90::current_device_sms(dev);
  const StdGroupedVariant v = std_grouped_variant();
  const int mt = static_cast<int>(max_tiles), half = v.half_tiles ? 1 : 0, stag = v.staggered ? 1 : 0;
  const auto alpha = static_cast<float>(a.alpha), limit = static_cast<float>(a.limit);
  if (!v.paired) {
    ensure_max_dynamic_smem(reinterpret_cast<const void*>(fp8_kernel<EPI, false>), SMEM);
    sm90::Launch l(static_cast<unsigned>(std::max(1, std::min(mt, sms))), THREADS, SMEM, s);
    l.early_start();
    LB_CUDA_CHECK(cudaLaunchKernelEx(&l.cfg, fp8_kernel<EPI, false>, amap, amap64, bmap, out, n_cols, tiles, mt, live,
                                     ksteps, b_rows, up, half, alpha, limit, sa, rows_cap, sb, sb_n, outq, outs,
                                     qblocks, stag));
    LB_CUDA_CHECK_LAUNCH();
    return;
  }
  ensure_max_dynamic_smem(reinterpret_cast<const void*>(fp8_kernel<EPI, true>), SMEM);
  sm90::PairLaunch pl(static_cast<unsigned>(sms / 2 * 2), THREADS, SMEM, s);
  pl.early_start();
  static int resident[5][64] = {};
  int& clusters = resident[EPI][dev & 63];
  if (clusters == 0) LB_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, fp8_kernel<EPI, true>, &pl.cfg));
  const int grid_clusters = std::max(1, std::min(clusters, std::max(1, mt / 2)));
  pl.cfg.gridDim = dim3(static_cast<unsigned>(2 * grid_clusters));
  LB_CUDA_CHECK(cudaLaunchKernelEx(&pl.cfg, fp8_kernel<EPI, true>, amap, amap64, bmap, out, n_cols, tiles, mt, live,
                                   ksteps, b_rows, up, half, alpha, limit, sa, rows_cap, sb, sb_n, outq, outs, qblocks,
                                   stag));
  LB_CUDA_CHECK_LAUNCH();
}

void check_sizes(std::int64_t rows_cap, std::int64_t experts, std::int64_t n_rows_per_expert, std::int64_t max_tiles) {
  LB_CHECK(rows_cap < (std::int64_t{1} << 31) && experts * n_rows_per_expert < (std::int64_t{1} << 31) &&
               max_tiles < (std::int64_t{1} << 31),
           "Hopper FP8 grouped expert GEMM: TMA coordinates and tile counts are 32-bit");
}

void check_scales(const float* a, const float* b) {
  LB_CHECK(reinterpret_cast<std::uintptr_t>(a) % 4 == 0 && reinterpret_cast<std::uintptr_t>(b) % 16 == 0,
           "Hopper FP8 grouped expert GEMM: the weight scales must be 16-byte aligned, the row scales 4-byte");
}

}  // namespace

std::string fp8_grouped_unsupported(std::int64_t h, std::int64_t inter, std::int64_t experts) {
  if (!sm90::device_is_sm90()) return "the FP8 grouped kernels need a compute capability 9.0 device (sm_90a wgmma)";
  if (h <= 0 || inter <= 0 || h % 16 != 0 || inter % 16 != 0)
    return "the FP8 grouped kernels need hidden and intermediate sizes that are positive multiples of 16 (16-byte "
           "TMA row strides of e4m3), not " +
           std::to_string(h) + " and " + std::to_string(inter);
  if (experts < 1 || experts > kStdGroupedMaxExperts)
    return "the FP8 grouped kernels take 1 to " + std::to_string(kStdGroupedMaxExperts) + " local experts, not " +
           std::to_string(experts);
  return "";
}

void fp8_gate_up_sm90(const std::uint8_t* x, const float* x_scale, std::int64_t rows_cap, std::int64_t h,
                      const std::uint8_t* w13, const float* w13_scale, std::int64_t experts, std::int64_t inter,
                      bf16* act, const StdTile* tiles, std::int64_t max_tiles, const int* live, const ActivationSpec& a,
                      cudaStream_t s) {
  if (rows_cap == 0 || max_tiles == 0) return;
  const std::string why = fp8_grouped_unsupported(h, inter, experts);
  LB_CHECK(why.empty(), "Hopper FP8 grouped gate/up: " + why);
  LB_CHECK(a.kind == Activation::silu_glu || a.kind == Activation::swiglu_clamped,
           "Hopper FP8 grouped gate/up: the fused epilogue has SiLU-GLU and clamped SwiGLU only");
  check_sizes(rows_cap, experts, 2 * inter, max_tiles);
  check_scales(x_scale, w13_scale);
  const auto H = static_cast<std::uint64_t>(h), R = static_cast<std::uint64_t>(rows_cap);
  const CUtensorMap amap = sm90::encode_tma_2d_u8(x, H, R, BK, BM), amap64 = sm90::encode_tma_2d_u8(x, H, R, BK, BM / 2);
  const CUtensorMap bmap = sm90::encode_tma_2d_u8(w13, H, static_cast<std::uint64_t>(experts * 2 * inter), BK, BN / 2);
  const int ks = static_cast<int>((h + BK - 1) / BK), I = static_cast<int>(inter);
  const int rc = static_cast<int>(rows_cap), sbn = static_cast<int>(experts * 2 * inter);
  if (a.kind == Activation::swiglu_clamped)
    launch<kClampedGlu>(amap, amap64, bmap, act, I, tiles, max_tiles, live, ks, 2 * I, I, a, x_scale, rc, w13_scale,
                        sbn, s);
  else
    launch<kSiluGlu>(amap, amap64, bmap, act, I, tiles, max_tiles, live, ks, 2 * I, I, a, x_scale, rc, w13_scale, sbn,
                     s);
}

void fp8_gate_up_q_sm90(const std::uint8_t* x, const float* x_scale, std::int64_t rows_cap, std::int64_t h,
                        const std::uint8_t* w13, const float* w13_scale, std::int64_t experts, std::int64_t inter,
                        std::uint8_t* act_q, float* act_scale, const StdTile* tiles, std::int64_t max_tiles,
                        const int* live, const ActivationSpec& a, cudaStream_t s) {
  if (rows_cap == 0 || max_tiles == 0) return;
  const std::string why = fp8_grouped_unsupported(h, inter, experts);
  LB_CHECK(why.empty(), "Hopper FP8 grouped gate/up: " + why);
  LB_CHECK(a.kind == Activation::silu_glu || a.kind == Activation::swiglu_clamped,
           "Hopper FP8 grouped gate/up: the fused epilogue has SiLU-GLU and clamped SwiGLU only");
  LB_CHECK(act_q != nullptr && act_scale != nullptr && reinterpret_cast<std::uintptr_t>(act_scale) % 4 == 0,
           "Hopper FP8 grouped gate/up: the quantized act needs its codes and (4-byte aligned) scales");
  check_sizes(rows_cap, experts, 2 * inter, max_tiles);
  check_scales(x_scale, w13_scale);
  const auto H = static_cast<std::uint64_t>(h), R = static_cast<std::uint64_t>(rows_cap);
  const CUtensorMap amap = sm90::encode_tma_2d_u8(x, H, R, BK, BM), amap64 = sm90::encode_tma_2d_u8(x, H, R, BK, BM / 2);
  const CUtensorMap bmap = sm90::encode_tma_2d_u8(w13, H, static_cast<std::uint64_t>(experts * 2 * inter), BK, BN / 2);
  const int ks = static_cast<int>((h + BK - 1) / BK), I = static_cast<int>(inter);
  const int rc = static_cast<int>(rows_cap), sbn = static_cast<int>(experts * 2 * inter);
  const int qb = static_cast<int>((inter + GU_COLS - 1) / GU_COLS);
  if (a.kind == Activation::swiglu_clamped)
    launch<kClampedGluQ>(amap, amap64, bmap, nullptr, I, tiles, max_tiles, live, ks, 2 * I, I, a, x_scale, rc,
                         w13_scale, sbn, s, act_q, act_scale, qb);
  else
    launch<kSiluGluQ>(amap, amap64, bmap, nullptr, I, tiles, max_tiles, live, ks, 2 * I, I, a, x_scale, rc, w13_scale,
                      sbn, s, act_q, act_scale, qb);
}

void fp8_down_sm90(const std::uint8_t* act, const float* act_scale, std::int64_t rows_cap, std::int64_t inter,
                   const std::uint8_t* wd, const float* wd_scale, std::int64_t experts, std::int64_t h, bf16* y,
                   const StdTile* tiles, std::int64_t max_tiles, const int* live, cudaStream_t s) {
  if (rows_cap == 0 || max_tiles == 0) return;
  const std::string why = fp8_grouped_unsupported(h, inter, experts);
  LB_CHECK(why.empty(), "Hopper FP8 grouped down: " + why);
  check_sizes(rows_cap, experts, h, max_tiles);
  check_scales(act_scale, wd_scale);
  const auto I = static_cast<std::uint64_t>(inter), R = static_cast<std::uint64_t>(rows_cap);
  const CUtensorMap amap = sm90::encode_tma_2d_u8(act, I, R, BK, BM),
                    amap64 = sm90::encode_tma_2d_u8(act, I, R, BK, BM / 2);
  const CUtensorMap bmap = sm90::encode_tma_2d_u8(wd, I, static_cast<std::uint64_t>(experts * h), BK, BN / 2);
  const int ks = static_cast<int>((inter + BK - 1) / BK), H = static_cast<int>(h);
  launch<kStore>(amap, amap64, bmap, y, H, tiles, max_tiles, live, ks, H, 0, ActivationSpec{}, act_scale,
                 static_cast<int>(rows_cap), wd_scale, static_cast<int>(experts * h), s);
}

}  // namespace layerbench::moe::cuda
