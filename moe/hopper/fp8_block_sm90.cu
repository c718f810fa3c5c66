// The standard block's FP8 (e4m3) grouped expert GEMMs with DeepSeek-V3's block scales on
// Hopper (moe/hopper/fp8_block_sm90.cuh).
//
// Persistent CTAs of three warpgroups walk fp8_block_tiles' lists: warpgroup 2's first thread
// feeds a 4-deep ring of TMA copies (128-byte swizzle, 128 e4m3 of K per step = one scale block),
// warpgroups 0 and 1 each run wgmma m64n128k32 e4m3 into a fresh fp32 accumulator (four MMAs,
// 128 K elements), wait for it and add it into the tile's fp32 sums scaled by the step's
// activation-row and weight-block scales (DeepGEMM's promotion; while one warpgroup promotes, the
// other's MMAs keep the tensor cores busy). A tile is 128 rows of one expert; warpgroup g takes
// rows 64g..64g+63 of the (128, 128) A box (a tile of at most 64 live rows loads 64 A rows and
// warpgroup 1 hands its stages straight back).
// The weight box is 256 rows per K step, and each warpgroup runs two n128 sets of MMAs into one
// accumulator, each promoted into its own sums (64 accumulators + 2 x 64 sums per thread): per
// 128 A rows the weights are read once per 256 of them, as in the rowwise kernels (64-row gate/up
// and 128-column down tiles read them twice as often).
//   down     256 output columns, two weight blocks: half h is block 2b + h with its own scale.
//   gate/up  128 activation columns c..c+127: four B boxes of 64 weight rows (gate c..c+63, up
//            c..c+63, gate c+64.., up c+64..), half h reading boxes 2h and 2h + 1 (its gate rows
//            then its up rows: accumulator columns j and j + 64 are one gate/up pair, in one
//            thread); both halves take the gate block's and the up block's scales.
// Epilogues (after the K loop, through a shared staging buffer per warpgroup, 16-byte stores):
// bf16 y; bf16 act = glu(bf16(gate), bf16(up)), 64 columns at a time; or e4m3 act with 1x128
// scales: the GLU values' row amax over the block's 128 columns (in-thread, then the lanes of a
// quad), s = max(amax, 1e-4) / 448, q = e4m3(v / s) as moe/fp8.hpp; columns past I count 0.
#include "collectives/error.hpp"
#include "moe/hopper/experts_sm90.cuh"
#include "moe/hopper/fp8_block_sm90.cuh"
#include "moe/hopper/sm90.cuh"
#include "moe/hopper/std_glu.cuh"

#include <cuda_fp8.h>

#include <algorithm>
#include <cstdint>

namespace layerbench::moe::cuda {

namespace {

using namespace sm90;

constexpr int BK = 128, STAGES = 4, THREADS = 384;
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
enum Epi : int { kStore = 0, kGlu = 1, kGluQ = 2 };

template <int EPI>
struct Geo {
  static constexpr bool GU = EPI != kStore;
  static constexpr int A_BYTES = 128 * BK;              // the A box: 128 rows of 128 bytes
  static constexpr int B_BYTES = 256 * BK;  // gate/up: the gate and up blocks' rows; down: two weight blocks
  static constexpr int STAGE = A_BYTES + B_BYTES;
  // A consumer's staged rows: 64 bf16 (64 columns at a time) or 128 bytes (e4m3 act), padded by 16
  // bytes (no bank conflicts).
  static constexpr int C_PITCH = 144;
  static constexpr int C_BYTES = 64 * C_PITCH;
  static constexpr int SMEM = STAGES * STAGE + 2 * C_BYTES + 2 * STAGES * 8 + 1024;
  static_assert(SMEM <= 227 * 1024, "one CTA per SM");
};

#ifdef LB_WGMMA
__device__ __forceinline__ void wgmma_m64n128k32_e4m3(float (&d)[64], std::uint64_t da, std::uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {"
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
      "}, %64, %65, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void st_shared_b16(std::uint32_t addr, std::uint16_t v) {
  asm volatile("st.shared.b16 [%0], %1;\n" ::"r"(addr), "h"(v) : "memory");
}
__device__ __forceinline__ std::uint32_t bf16x2_bits(__nv_bfloat162 v) {
  return *reinterpret_cast<const std::uint32_t*>(&v);
}
#endif  // LB_WGMMA

// n_cols: output columns (h for down, I for gate/up); b_rows: weight rows per expert (h or 2I);
// up: the up rows' offset (I); ksteps = ceil(K / 128); sb_blocks: 128-row weight blocks per
// matrix (ceil(h / 128) for down, ceil(I / 128) for gate/up, also the act scales per row);
// sa (rows_cap, ksteps) the A rows' 1x128 scales; sb the 128x128 weight scales, or with W_ROW
// (down only) one scale per weight row (output channel), applied to the promoted sums at the end.
// A unit is one list tile: up to 128 rows, warpgroup g taking rows 64g..64g+63 (a tile of at most
// 64 live rows loads 64 A rows and warpgroup 1 hands its stages straight back).
// PAIR: 2-CTA clusters, consecutive list tiles to ranks 0 and 1; where both have rows and read
// the same weight block, each CTA loads half of the weight boxes and multicasts it into both, and
// every consumer warp hands a stage back to both CTAs' producers; both CTAs walk every unit's K
// steps (an empty unit with no bytes), so that their rings stay in step.
template <int EPI, bool CLAMPED, bool W_ROW, bool PAIR>
__global__ void __launch_bounds__(THREADS, 1)
    block_kernel(const __grid_constant__ CUtensorMap amap, const __grid_constant__ CUtensorMap amap64,
                 const __grid_constant__ CUtensorMap bmap,
                 bf16* __restrict__ out, std::uint8_t* __restrict__ outq,
                 float* __restrict__ outs, int n_cols, const StdTile* tiles, int max_tiles,
                 const int* live, int ksteps, int b_rows, int up, int sb_blocks, float alpha, float limit,
                 const float* __restrict__ sa, int rows_cap, const float* __restrict__ sb, int sched) {
#ifdef LB_WGMMA
  using G = Geo<EPI>;
  constexpr bool GU = G::GU;
  grid_dependents_may_start();
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t raw = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  const std::uint32_t base = (raw + 1023u) & ~1023u;
  const std::uint32_t c_base = base + STAGES * G::STAGE;
  const std::uint32_t full = c_base + 2 * G::C_BYTES, empty = full + 8 * STAGES;
  init_ring<STAGES, PAIR>(full, empty);
  grid_dependency_wait();
  const int rank = PAIR ? cluster_rank() : 0;
  const int units = min(max_tiles, load_after_wait(live));  // even (std_grouped_tiles)
  const int first = PAIR ? static_cast<int>(blockIdx.x) / 2 * 2 + rank : static_cast<int>(blockIdx.x);
  const int stride = static_cast<int>(gridDim.x);  // PAIR: gridDim.x / 2 pairs of units
  const int wg = threadIdx.x >> 7;
  if (wg == 2) {
    regs_release<PRODUCER_REGS>();
    if (threadIdx.x == 256) {
      int s = 0;
      for (int u = first; u < units; u += stride) {
        const StdTile t = load16_after_wait(tiles + u);
        const bool mine = t.valid > 0;
        if (!PAIR && !mine) continue;
        bool shared = false;
        if constexpr (PAIR) {
          const StdTile o = load16_after_wait(tiles + (u ^ 1));
          shared = mine && o.valid > 0 && t.expert == o.expert && t.block == o.block;
        }
        const bool half = t.valid <= 64;
        const int brow = t.expert * b_rows + t.block * (GU ? 128 : 256);
        for (int ks = 0; ks < ksteps; ++ks, ++s) {
          const int stage = s % STAGES;
          if (s >= STAGES) mbar_wait(empty + 8 * stage, ((s / STAGES) - 1) & 1);
          const std::uint32_t dst = base + stage * G::STAGE, bar = full + 8 * stage;
          mbar_arrive_expect_tx(bar, !mine ? 0 : half ? G::STAGE - G::A_BYTES / 2 : G::STAGE);
          if (!mine) continue;
          const int kc = ks * BK;
          tma_load_2d(dst, half ? &amap64 : &amap, kc, t.row0, bar);
          const std::uint32_t b = dst + G::A_BYTES;
          if constexpr (GU) {
            // B boxes: gate 0-63, up 0-63, gate 64-127, up 64-127 of the block (half h of the
            // MMAs reads boxes 2h and 2h + 1); shared: rank r multicasts half r.
            if (shared) {
              tma_load_2d_multicast(b + rank * 128 * BK, &bmap, kc, brow + 64 * rank, bar, 0x3);
              tma_load_2d_multicast(b + rank * 128 * BK + 64 * BK, &bmap, kc, brow + up + 64 * rank, bar, 0x3);
            } else {
              tma_load_2d(b, &bmap, kc, brow, bar);
              tma_load_2d(b + 64 * BK, &bmap, kc, brow + up, bar);
              tma_load_2d(b + 128 * BK, &bmap, kc, brow + 64, bar);
              tma_load_2d(b + 192 * BK, &bmap, kc, brow + up + 64, bar);
            }
          } else {  // weight rows 0-127 and 128-255 of the tile's two blocks; shared: rank r multicasts block r
            if (shared) {
              tma_load_2d_multicast(b + rank * 128 * BK, &bmap, kc, brow + 128 * rank, bar, 0x3);
            } else {
              tma_load_2d(b, &bmap, kc, brow, bar);
              tma_load_2d(b + 128 * BK, &bmap, kc, brow + 128, bar);
            }
          }
        }
      }
    }
  } else {
    regs_take<CONSUMER_REGS>();
    const int tid = threadIdx.x & 127, lane = tid & 31;
    const int r = 16 * (tid >> 5) + (lane >> 2), c = lane & 3;
    const std::uint32_t cb = c_base + wg * G::C_BYTES;
    auto release = [&](int stage) { release_stage<PAIR>(empty, stage, lane, rank); };
    // The promoted sums of the two n128 halves: fin (gate/up: act columns 0-63 of the block; down:
    // output columns 0-127 of the tile), fin2 (64-127; 128-255).
    float acc[64], fin[64], fin2[64];
    // Schedule (StdGroupedVariant): 1 staggered, warpgroup 1 waits until 0 has issued its first
    // MMAs (or has none); 2 ordered, in a tile where both have rows they take turns to issue every
    // set of MMAs (barrier 5 hands the turn to 0, 6 to 1), so one promotes while the other's run.
    Stagger stagger(sched == 1, wg);
    bool turned = false, turns = false;
    auto my_turn = [&] {
      if (!turns) return;
      if (wg == 1)
        named_sync<6, 256>();
      else if (turned)
        named_sync<5, 256>();
      turned = true;
    };
    auto pass_turn = [&] {
      if (turns) {
        wg == 0 ? named_arrive<6, 256>() : named_arrive<5, 256>();
      } else {
        stagger.let_go();
      }
    };
    int s = 0;
    for (int u = first; u < units; u += stride) {
      const StdTile t = load16_after_wait(tiles + u);
      const bool mine = t.valid > 0;
      if (!PAIR && !mine) continue;
      turns = sched == 2 && t.valid > 64;  // the same in both warpgroups
      // No rows here (PAIR: the stages still go round), or a half tile whose warpgroup 1 has none.
      if (!mine || (wg == 1 && t.valid <= 64)) {
        pass_turn();
        skip_tile<STAGES>(s, ksteps, full, release);
        continue;
      }
      const int row_base = t.row0 + 64 * wg;
      const int valid = min(64, t.valid - 64 * wg);
      const float* sa0 = sa + static_cast<std::int64_t>(min(row_base + r, rows_cap - 1)) * ksteps;
      const float* sa1 = sa + static_cast<std::int64_t>(min(row_base + r + 8, rows_cap - 1)) * ksteps;
      // Weight-block scales: gate/up: the gate block's (sbg) and the up block's (sbu), the same for
      // both halves; down: half 0's block (sbg) and half 1's (sbu; past h: half 0's, unused).
      const int gi = GU ? 2 * t.expert : t.expert, wb = GU ? t.block : 2 * t.block;
      const float* sbg = sb + (static_cast<std::int64_t>(gi) * sb_blocks + wb) * ksteps;
      const float* sbu = GU ? sbg + static_cast<std::int64_t>(sb_blocks) * ksteps
                            : sb + (static_cast<std::int64_t>(gi) * sb_blocks + min(wb + 1, sb_blocks - 1)) * ksteps;
      const std::uint32_t a_off = static_cast<std::uint32_t>(wg) * 64 * BK;
#pragma unroll
      for (int i = 0; i < 64; ++i) fin[i] = fin2[i] = 0.0f;
      // One n128 set of MMAs (B rows b_off..b_off+127 of the stage) into a fresh accumulator,
      // then its promotion into f: accumulator i is row r + 8 ((i >> 1) & 1), column
      // 8 (i >> 2) + 2c + (i & 1); for gate/up columns 0-63 are gate rows, 64-127 up rows.
      auto mma_promote = [&](float (&f)[64], std::uint32_t stage_base, std::uint32_t b_off, float s0g, float s1g,
                             float s0u, float s1u) {
        my_turn();
        fence_acc(acc);
        wgmma_fence();
        const std::uint64_t da = desc_sw128(stage_base + a_off);
        const std::uint64_t db = desc_sw128(stage_base + b_off);
#pragma unroll
        for (int kk = 0; kk < BK / 32; ++kk) wgmma_m64n128k32_e4m3(acc, da + 2 * kk, db + 2 * kk, kk > 0);
        wgmma_commit();
        pass_turn();
        wgmma_wait<0>();
        fence_acc(acc);
#pragma unroll
        for (int i = 0; i < 64; ++i) {
          const bool hi = ((i >> 1) & 1) != 0, upc = GU && i >= 32;
          f[i] = fmaf(upc ? (hi ? s1u : s0u) : (hi ? s1g : s0g), acc[i], f[i]);
        }
      };
      for (int ks = 0; ks < ksteps; ++ks, ++s) {
        const int stage = s % STAGES;
        const float a0 = __ldg(sa0 + ks), a1 = __ldg(sa1 + ks);
        const float bg = W_ROW ? 1.0f : __ldg(sbg + ks), bu = W_ROW ? 1.0f : __ldg(sbu + ks);
        mbar_wait(full + 8 * stage, (s / STAGES) & 1);
        const std::uint32_t sbase = base + stage * G::STAGE;
        // Both halves of a gate/up block read the same gate and up weight blocks: one scale each.
        mma_promote(fin, sbase, G::A_BYTES, a0 * bg, a1 * bg, a0 * bu, a1 * bu);
        if constexpr (GU)
          mma_promote(fin2, sbase, G::A_BYTES + 128 * BK, a0 * bg, a1 * bg, a0 * bu, a1 * bu);
        else
          mma_promote(fin2, sbase, G::A_BYTES + 128 * BK, a0 * bu, a1 * bu, 0.0f, 0.0f);
        release(stage);
      }
      consumer_pair_sync(wg);  // the previous unit's staged rows are out
      if constexpr (EPI == kStore) {
        // 64 output columns at a time through the staging buffer: group g of half h is
        // accumulators 32g..32g+31, columns 128h + 64g.. of the tile.
        auto store_group = [&](const float (&f)[64], int h, int g) {
#pragma unroll
          for (int j = 0; j < 32; j += 2) {
            const int i = 32 * g + j, row = r + 8 * ((i >> 1) & 1), col = 8 * (j >> 2) + 2 * c;
            float2 w = make_float2(1.0f, 1.0f);
            if constexpr (W_ROW) {
              const int oc = t.block * 256 + 128 * h + 64 * g + col;
              w = oc < n_cols ? __ldg(reinterpret_cast<const float2*>(sb + static_cast<std::int64_t>(t.expert) * n_cols + oc))
                              : make_float2(0.0f, 0.0f);
            }
            st_shared_b32(cb + row * G::C_PITCH + col * 2, bf16x2_bits(__floats2bfloat162_rn(f[i] * w.x, f[i + 1] * w.y)));
          }
          consumer_pair_sync(wg);
#pragma unroll
          for (int p = 0; p < 4; ++p) {
            const int id = tid + 128 * p, row = id >> 3, ch = id & 7, col = t.block * 256 + 128 * h + 64 * g + ch * 8;
            if (row < valid && col < n_cols)
              *reinterpret_cast<uint4*>(out + static_cast<std::int64_t>(row_base + row) * n_cols + col) =
                  ld_shared_v4(cb + row * G::C_PITCH + ch * 16);
          }
        };
        store_group(fin, 0, 0);
        consumer_pair_sync(wg);
        store_group(fin, 0, 1);
        consumer_pair_sync(wg);
        store_group(fin2, 1, 0);
        consumer_pair_sync(wg);
        store_group(fin2, 1, 1);
      } else {
        // The GLU of both halves: v[h][j] is act column 64h + 8 (j >> 2) + 2c + (j & 1) of the
        // block, row r + 8 ((j >> 1) & 1).
        float v[2][32];
#pragma unroll
        for (int i = 0; i < 32; i += 2) {
          const float2 g0 = __bfloat1622float2(__floats2bfloat162_rn(fin[i], fin[i + 1]));
          const float2 u0 = __bfloat1622float2(__floats2bfloat162_rn(fin[i + 32], fin[i + 33]));
          const float2 g1 = __bfloat1622float2(__floats2bfloat162_rn(fin2[i], fin2[i + 1]));
          const float2 u1 = __bfloat1622float2(__floats2bfloat162_rn(fin2[i + 32], fin2[i + 33]));
          v[0][i] = std_glu_value<CLAMPED>(g0.x, u0.x, alpha, limit);
          v[0][i + 1] = std_glu_value<CLAMPED>(g0.y, u0.y, alpha, limit);
          v[1][i] = std_glu_value<CLAMPED>(g1.x, u1.x, alpha, limit);
          v[1][i + 1] = std_glu_value<CLAMPED>(g1.y, u1.y, alpha, limit);
        }
        const int col_b = t.block * 128;  // the block's first activation column
        if constexpr (EPI == kGlu) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {  // 64 columns at a time through the staging buffer
            if (h == 1) consumer_pair_sync(wg);  // half 0's rows are out
#pragma unroll
            for (int i = 0; i < 32; i += 2) {
              const int row = r + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * c;
              st_shared_b32(cb + row * G::C_PITCH + col * 2, bf16x2_bits(__floats2bfloat162_rn(v[h][i], v[h][i + 1])));
            }
            consumer_pair_sync(wg);
#pragma unroll
            for (int p = 0; p < 4; ++p) {
              const int id = tid + 128 * p, row = id >> 3, ch = id & 7, col = col_b + 64 * h + ch * 8;
              if (row < valid && col < n_cols)
                *reinterpret_cast<uint4*>(out + static_cast<std::int64_t>(row_base + row) * n_cols + col) =
                    ld_shared_v4(cb + row * G::C_PITCH + ch * 16);
            }
          }
        } else {
          // e4m3 act with 1x128 scales: the row's amax over the block's 128 columns (both halves
          // in-thread, then the lanes of a quad), s = max(amax, 1e-4) / 448, q = e4m3(v / s).
          float am0 = 0.0f, am1 = 0.0f;
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int i = 0; i < 32; ++i) {
              if (col_b + 64 * h + 8 * (i >> 2) + 2 * c + (i & 1) >= n_cols) v[h][i] = 0.0f;  // past I: not in the group
              if ((i >> 1) & 1)
                am1 = fmaxf(am1, fabsf(v[h][i]));
              else
                am0 = fmaxf(am0, fabsf(v[h][i]));
            }
#pragma unroll
          for (int o = 1; o <= 2; o <<= 1) {
            am0 = fmaxf(am0, __shfl_xor_sync(0xffffffffu, am0, o));
            am1 = fmaxf(am1, __shfl_xor_sync(0xffffffffu, am1, o));
          }
          const float s0 = fmaxf(am0, 1e-4f) / 448.0f, s1 = fmaxf(am1, 1e-4f) / 448.0f;  // IEEE: the host's
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int i = 0; i < 32; i += 2) {
              const bool hi = ((i >> 1) & 1) != 0;
              const float sc = hi ? s1 : s0;
              const int row = r + 8 * hi, col = 64 * h + 8 * (i >> 2) + 2 * c;
              const auto two = static_cast<std::uint16_t>(
                  __nv_cvt_float2_to_fp8x2(make_float2(v[h][i] / sc, v[h][i + 1] / sc), __NV_SATFINITE, __NV_E4M3));
              st_shared_b16(cb + row * G::C_PITCH + col, two);
            }
          if (c == 0) {
            if (r < valid) outs[static_cast<std::int64_t>(row_base + r) * sb_blocks + t.block] = s0;
            if (r + 8 < valid) outs[static_cast<std::int64_t>(row_base + r + 8) * sb_blocks + t.block] = s1;
          }
          consumer_pair_sync(wg);
#pragma unroll
          for (int p = 0; p < 4; ++p) {
            const int id = tid + 128 * p, row = id >> 3, ch = id & 7, col = col_b + ch * 16;
            if (row < valid && col < n_cols)
              *reinterpret_cast<uint4*>(outq + static_cast<std::int64_t>(row_base + row) * n_cols + col) =
                  ld_shared_v4(cb + row * G::C_PITCH + ch * 16);
          }
        }
      }
    }
    if (wg == 0 && turned) named_sync<5, 256>();  // ordered: warpgroup 1's last hand-back
    stagger.let_go();  // staggered: a warpgroup 0 with no MMAs lets warpgroup 1 go
  }
  if constexpr (PAIR) cluster_sync();  // no CTA leaves while its peer may still write into it
#else
  __trap();
#endif
}

// Paired (2-CTA clusters, the weight boxes multicast) unless the process-wide launch variant
// says unpaired (std_grouped_variant().paired, as the rowwise kernels).
template <int EPI, bool CLAMPED, bool W_ROW = false>
void launch(const CUtensorMap& amap, const CUtensorMap& amap64, const CUtensorMap& bmap,
            bf16* out, std::uint8_t* outq, float* outs, int n_cols, const StdTile* tiles, std::int64_t max_tiles,
            const int* live, int ksteps, int b_rows, int up, int sb_blocks, const ActivationSpec& a, const float* sa,
            int rows_cap, const float* sb, cudaStream_t s) {
  int dev = 0;
  const int sms = sm90::current_device_sms(dev);
  const auto alpha = static_cast<float>(a.alpha), limit = static_cast<float>(a.limit);
  const int mt = static_cast<int>(max_tiles);
  const StdGroupedVariant v = std_grouped_variant();
  const int sched = v.ordered ? 2 : v.staggered ? 1 : 0;
  if (!v.paired) {
    const auto kernel = block_kernel<EPI, CLAMPED, W_ROW, false>;
    ensure_max_dynamic_smem(reinterpret_cast<const void*>(kernel), Geo<EPI>::SMEM);
    sm90::Launch l(static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>(max_tiles, sms))), THREADS,
                   Geo<EPI>::SMEM, s);
    l.early_start();
    LB_CUDA_CHECK(cudaLaunchKernelEx(&l.cfg, kernel, amap, amap64, bmap, out, outq, outs, n_cols, tiles, mt,
                                     live, ksteps, b_rows, up, sb_blocks, alpha, limit, sa, rows_cap, sb, sched));
    LB_CUDA_CHECK_LAUNCH();
    return;
  }
  const auto kernel = block_kernel<EPI, CLAMPED, W_ROW, true>;
  ensure_max_dynamic_smem(reinterpret_cast<const void*>(kernel), Geo<EPI>::SMEM);
  sm90::PairLaunch pl(static_cast<unsigned>(sms / 2 * 2), THREADS, Geo<EPI>::SMEM, s);
  pl.early_start();
  static int resident[3][2][2][64] = {};
  int& clusters = resident[EPI][CLAMPED ? 1 : 0][W_ROW ? 1 : 0][dev & 63];
  if (clusters == 0) LB_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &pl.cfg));
  LB_CHECK(clusters > 0, "Hopper FP8 block-scaled GEMM: no 2-CTA cluster fits on this device");
  const std::int64_t pairs = std::max<std::int64_t>(1, max_tiles / 2);
  pl.cfg.gridDim = dim3(static_cast<unsigned>(2 * std::min<std::int64_t>(clusters, pairs)));
  LB_CUDA_CHECK(cudaLaunchKernelEx(&pl.cfg, kernel, amap, amap64, bmap, out, outq, outs, n_cols, tiles, mt,
                                   live, ksteps, b_rows, up, sb_blocks, alpha, limit, sa, rows_cap, sb, sched));
  LB_CUDA_CHECK_LAUNCH();
}

std::int64_t blocks_of(std::int64_t n) { return (n + 127) / 128; }

void check_alignment(const void* p, int bytes, const char* what) {
  LB_CHECK(reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(bytes) == 0,
           std::string("Hopper FP8 block-scaled GEMM: ") + what + " must be " + std::to_string(bytes) +
               "-byte aligned");
}

}  // namespace

void fp8_block_gate_up_sm90(const std::uint8_t* x, const float* x_scale, std::int64_t rows_cap, std::int64_t h,
                            const std::uint8_t* w13, const float* w13_scale, std::int64_t experts, std::int64_t inter,
                            bf16* act_bf16, std::uint8_t* act_q, float* act_scale, const StdTile* tiles,
                            std::int64_t max_tiles, const int* live, const ActivationSpec& a, cudaStream_t s) {
  if (rows_cap == 0 || max_tiles == 0) return;
  const std::string why = fp8_block_unsupported(h, inter, experts, rows_cap);
  LB_CHECK(why.empty(), "Hopper FP8 block-scaled gate/up: " + why);
  LB_CHECK(a.kind == Activation::silu_glu || a.kind == Activation::swiglu_clamped,
           "Hopper FP8 block-scaled gate/up: the fused epilogue has SiLU-GLU and clamped SwiGLU only");
  LB_CHECK(max_tiles < (std::int64_t{1} << 31), "Hopper FP8 block-scaled gate/up: too many tiles");
  check_alignment(x_scale, 4, "the activation scales");
  check_alignment(w13_scale, 4, "the weight scales");
  if (act_q != nullptr) check_alignment(act_scale, 4, "the output scales");
  const auto H = static_cast<std::uint64_t>(h), R = static_cast<std::uint64_t>(rows_cap);
  const CUtensorMap amap = sm90::encode_tma_2d_u8(x, H, R, BK, 128), amap64 = sm90::encode_tma_2d_u8(x, H, R, BK, 64);
  const CUtensorMap bmap = sm90::encode_tma_2d_u8(w13, H, static_cast<std::uint64_t>(experts * 2 * inter), BK, 64);
  const int ks = static_cast<int>(blocks_of(h)), I = static_cast<int>(inter), ib = static_cast<int>(blocks_of(inter));
  const int rc = static_cast<int>(rows_cap);
  const bool clamped = a.kind == Activation::swiglu_clamped;
  if (act_q == nullptr) {
    LB_CHECK(act_bf16 != nullptr, "Hopper FP8 block-scaled gate/up: no output");
    (clamped ? launch<kGlu, true> : launch<kGlu, false>)(amap, amap64, bmap, act_bf16, nullptr, nullptr, I, tiles,
                                                         max_tiles, live, ks, 2 * I, I, ib, a, x_scale, rc, w13_scale,
                                                         s);
  } else {
    LB_CHECK(act_scale != nullptr, "Hopper FP8 block-scaled gate/up: e4m3 output without its scales");
    (clamped ? launch<kGluQ, true> : launch<kGluQ, false>)(amap, amap64, bmap, nullptr, act_q, act_scale, I, tiles,
                                                           max_tiles, live, ks, 2 * I, I, ib, a, x_scale, rc,
                                                           w13_scale, s);
  }
}

void fp8_block_down_sm90(const std::uint8_t* act, const float* act_scale, std::int64_t rows_cap, std::int64_t inter,
                         const std::uint8_t* wd, const float* wd_scale, std::int64_t experts, std::int64_t h, bf16* y,
                         const StdTile* tiles, std::int64_t max_tiles, const int* live, cudaStream_t s) {
  if (rows_cap == 0 || max_tiles == 0) return;
  const std::string why = fp8_block_unsupported(h, inter, experts, rows_cap);
  LB_CHECK(why.empty(), "Hopper FP8 block-scaled down: " + why);
  LB_CHECK(max_tiles < (std::int64_t{1} << 31), "Hopper FP8 block-scaled down: too many tiles");
  check_alignment(act_scale, 4, "the activation scales");
  check_alignment(wd_scale, 4, "the weight scales");
  const auto I = static_cast<std::uint64_t>(inter), R = static_cast<std::uint64_t>(rows_cap);
  const CUtensorMap amap = sm90::encode_tma_2d_u8(act, I, R, BK, 128), amap64 = sm90::encode_tma_2d_u8(act, I, R, BK, 64);
  const CUtensorMap bmap = sm90::encode_tma_2d_u8(wd, I, static_cast<std::uint64_t>(experts * h), BK, 128);
  launch<kStore, false>(amap, amap64, bmap, y, nullptr, nullptr, static_cast<int>(h), tiles, max_tiles, live,
                        static_cast<int>(blocks_of(inter)), static_cast<int>(h), 0, static_cast<int>(blocks_of(h)),
                        ActivationSpec{}, act_scale, static_cast<int>(rows_cap), wd_scale, s);
}

void fp8_rowwise_down_1x128_sm90(const std::uint8_t* act, const float* act_scale, std::int64_t rows_cap,
                                 std::int64_t inter, const std::uint8_t* wd, const float* wd_scale, std::int64_t experts,
                                 std::int64_t h, bf16* y, const StdTile* tiles, std::int64_t max_tiles, const int* live,
                                 cudaStream_t s) {
  if (rows_cap == 0 || max_tiles == 0) return;
  const std::string why = fp8_block_unsupported(h, inter, experts, rows_cap);
  LB_CHECK(why.empty(), "Hopper FP8 down (1x128 act, rowwise weights): " + why);
  LB_CHECK(max_tiles < (std::int64_t{1} << 31), "Hopper FP8 down (1x128 act, rowwise weights): too many tiles");
  check_alignment(act_scale, 4, "the activation scales");
  check_alignment(wd_scale, 8, "the weight scales");
  const auto I = static_cast<std::uint64_t>(inter), R = static_cast<std::uint64_t>(rows_cap);
  const CUtensorMap amap = sm90::encode_tma_2d_u8(act, I, R, BK, 128), amap64 = sm90::encode_tma_2d_u8(act, I, R, BK, 64);
  const CUtensorMap bmap = sm90::encode_tma_2d_u8(wd, I, static_cast<std::uint64_t>(experts * h), BK, 128);
  launch<kStore, false, true>(amap, amap64, bmap, y, nullptr, nullptr, static_cast<int>(h), tiles, max_tiles, live,
                              static_cast<int>(blocks_of(inter)), static_cast<int>(h), 0, static_cast<int>(blocks_of(h)),
                              ActivationSpec{}, act_scale, static_cast<int>(rows_cap), wd_scale, s);
}

}  // namespace layerbench::moe::cuda
