// Fused expert gate/up GEMM + SwiGLU7 over a device-side tile list (one launch for every
// expert): act[r, c] = swiglu7(x[r] . W13[e][:, c], x[r] . W13[e][:, I + c]) with the fp32
// accumulators fed straight to the activation, so the (rows, 2I) intermediate never reaches
// memory. bf16 tensor cores through mma.sync m16n8k16 with ldmatrix and a cp.async pipeline.
//
// Shapes (row-major):
//   xs   (rows, d)        expert-major inputs; tile t covers rows [row0, row0 + valid) of expert e
//   W13  (E, d, 2I)       per expert, [gate | up] columns (cuBLAS's column-major (2I, d))
//   act  (rows, I)
// One CTA per row tile (BM = 128 rows of one expert): the tile's whole (128, d <= 256) input
// stays in shared memory while the CTA walks every BN = 128 act-column block (256 W13 columns:
// 128 gate + 128 up), streaming W13 in BK = 64 steps through a 3-stage cp.async pipeline; each
// column block ends in the SwiGLU7 epilogue. 16 warps as 4 (M) x 4 (N), warp tile 32 x (32 + 32).
// d <= 256 and I, d multiples of 8: chunks of 8 bf16 outside the matrix are zero-filled and
// outputs outside it are not stored.
#include "collectives/error.hpp"
#include "moe/magi2/cuda_kernels.cuh"

#include <cstdint>

namespace layerbench::moe::cuda {

namespace {

constexpr int BM = 128, BN = 128, BK = 64, KMAX = 256, STAGES = 3, THREADS = 512;
constexpr int A_ELEMS = BM * KMAX;       // bf16: 128 rows x 32 chunks of 16 B (resident)
constexpr int B_STAGE = BK * 2 * BN;     // 64 k-rows x 32 chunks of 16 B
constexpr int C_LD = BN + 8;             // epilogue staging row (bf16), padded against conflicts
constexpr int SMEM_BYTES = (A_ELEMS + STAGES * B_STAGE + BM * C_LD) * 2;
static_assert(SMEM_BYTES <= 227 * 1024, "fits one CTA per SM");
static_assert(BM == kExpertTileRows, "one CTA per expert tile");

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte async copy; src_bytes = 0 zero-fills the destination without reading.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void cp_async16_s(std::uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void ldsm_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void mma_bf16(float (&c)[4], const std::uint32_t (&a)[4],
                                         std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Swizzled element offsets of 16-byte chunks (XOR on the low 3 bits of the chunk index, so
// 8 consecutive rows of one logical chunk hit 8 different bank groups).
__device__ __forceinline__ int a_off(int row, int chunk) { return row * KMAX + ((chunk ^ (row & 7)) << 3); }
__device__ __forceinline__ int b_off(int k, int chunk) { return k * 2 * BN + ((chunk ^ (k & 7)) << 3); }

__global__ void __launch_bounds__(THREADS, 1)
    gate_up_swiglu_kernel(const bf16* __restrict__ xs, const bf16* __restrict__ w13,
                          bf16* __restrict__ act, const ExpertTile* __restrict__ tiles, int d,
                          int inter) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  bf16* As = reinterpret_cast<bf16*>(smem_raw);
  bf16* Bs = As + A_ELEMS;
  bf16* Cs = Bs + STAGES * B_STAGE;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp >> 2, warp_n = warp & 3;
  const ExpertTile tile = tiles[blockIdx.x];
  const std::int64_t two_i = 2 * std::int64_t(inter);
  const bf16* xa = xs + tile.row0 * d;
  const bf16* wb = w13 + std::int64_t(tile.expert) * d * two_i;
  const int k_tiles = (d + BK - 1) / BK, n_tiles = (inter + BN - 1) / BN;

  // The row tile's input: 128 rows x (8 chunks per k step), loaded once with the first stage.
  auto load_a = [&] {
    const int chunks = k_tiles * 8;
    for (int id = tid; id < BM * chunks; id += THREADS) {
      const int row = id / chunks, chunk = id % chunks, k = chunk * 8;
      const bool ok = row < tile.valid && k < d;
      cp_async16(As + a_off(row, chunk), ok ? xa + std::int64_t(row) * d + k : xs, ok ? 16 : 0);
    }
  };
  // W13 rows [kt*BK, +BK) of column block n: 64 x 32 chunks, 4 per thread. A thread always
  // moves the same chunk column (tid & 31) of k-rows tid/32 + 16 i, so its swizzled shared
  // offsets are fixed and only the global offset moves with (n, kt).
  const int b_chunk = tid & 31, b_row = tid >> 5;
  const int b_col = (b_chunk & 15) * 8;                                       // within the block
  const bf16* b_src = wb + std::int64_t(b_row) * two_i + (b_chunk < 16 ? 0 : inter) + b_col;
  const std::uint32_t b_dst = smem_addr(Bs) + 2u * static_cast<std::uint32_t>(b_off(b_row, b_chunk));
  auto load_b = [&](int n, int kt, int stage) {
    const int n0 = n * BN, k0 = kt * BK;
    const bool col_ok = n0 + b_col < inter;
    const bf16* src = b_src + std::int64_t(k0) * two_i + n0;
    const std::uint32_t dst = b_dst + static_cast<std::uint32_t>(stage * B_STAGE * 2);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const bool ok = col_ok && k0 + b_row + 16 * i < d;
      cp_async16_s(dst + i * 16 * 2 * BN * 2, ok ? src + std::int64_t(16 * i) * two_i : w13, ok ? 16 : 0);
    }
  };

  float acc[2][8][4];  // [m16 tile][n8 tile: 0-3 gate, 4-7 up][fragment]
  auto zero = [&] {
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;
  };
  zero();

  // ldmatrix addresses: lane -> (matrix q, row i8 in it); row & 7 == i8 for every address, so
  // the swizzle of each (m16 tile, k16 step) and (n8 pair, k16 step) is a per-thread constant.
  const int q = lane >> 3, i8 = lane & 7;
  std::uint32_t a_addr[2][BK / 16];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)
      a_addr[mt][kk] = smem_addr(As) + 2u * static_cast<std::uint32_t>(
                                           a_off(warp_m * 32 + mt * 16 + (q & 1) * 8 + i8, kk * 2 + (q >> 1)));
  std::uint32_t b_addr[4];  // [half * 2 + np] at kk = 0; kk adds 16 k-rows
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int np = 0; np < 2; ++np)
      b_addr[h * 2 + np] = smem_addr(Bs) + 2u * static_cast<std::uint32_t>(
                                               b_off((q & 1) * 8 + i8, h * 16 + warp_n * 4 + np * 2 + (q >> 1)));

  load_a();
  // Prefetch cursor (n, kt) runs STAGES - 1 steps ahead of the compute cursor.
  int pf_n = 0, pf_kt = 0;
  auto advance = [&](int& n, int& kt) {
    if (++kt == k_tiles) { kt = 0; ++n; }
  };
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (pf_n < n_tiles) load_b(pf_n, pf_kt, s);
    cp_async_commit();
    advance(pf_n, pf_kt);
  }
  int stage = 0, pf_stage = STAGES - 1;
  for (int n = 0; n < n_tiles; ++n) {
    for (int kt = 0; kt < k_tiles; ++kt) {
      cp_async_wait<STAGES - 2>();
      __syncthreads();
      if (pf_n < n_tiles) load_b(pf_n, pf_kt, pf_stage);
      cp_async_commit();
      advance(pf_n, pf_kt);
      pf_stage = pf_stage == STAGES - 1 ? 0 : pf_stage + 1;
      const std::uint32_t a_k = static_cast<std::uint32_t>(kt * BK * 2);   // bytes along a row
      const std::uint32_t b_s = static_cast<std::uint32_t>(stage * B_STAGE * 2);
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        std::uint32_t a[2][4];
        // kt * 64 elements = 8 whole chunks: the XOR swizzle (low 3 chunk bits) is unaffected.
        ldsm_x4(a[0], a_addr[0][kk] + a_k);
        ldsm_x4(a[1], a_addr[1][kk] + a_k);
#pragma unroll
        for (int hn = 0; hn < 4; ++hn) {
          std::uint32_t b[4];
          ldsm_x4_trans(b, b_addr[hn] + b_s + static_cast<std::uint32_t>(kk * 16 * 2 * BN * 2));
          const int t = (hn >> 1) * 4 + (hn & 1) * 2;  // gate tiles 0-3, up tiles 4-7
#pragma unroll
          for (int mt = 0; mt < 2; ++mt) {
            mma_bf16(acc[mt][t], a[mt], b[0], b[1]);
            mma_bf16(acc[mt][t + 1], a[mt], b[2], b[3]);
          }
        }
      }
      stage = stage == STAGES - 1 ? 0 : stage + 1;
    }
    {
      // Epilogue of column block n: SwiGLU7 on the fp32 accumulators, staged as bf16, then
      // written as 16-byte chunks of the valid rows and columns. The next loop-top barrier
      // orders these reads before the next block's staging writes.
      const int n0 = n * BN;
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = warp_m * 32 + mt * 16 + (lane >> 2) + h * 8;
            const int col = warp_n * 32 + nt * 8 + (lane & 3) * 2;
            const float v0 = swiglu7_dev(acc[mt][nt][2 * h], acc[mt][nt + 4][2 * h]);
            const float v1 = swiglu7_dev(acc[mt][nt][2 * h + 1], acc[mt][nt + 4][2 * h + 1]);
            *reinterpret_cast<__nv_bfloat162*>(Cs + row * C_LD + col) = __floats2bfloat162_rn(v0, v1);
          }
      zero();
      __syncthreads();
#pragma unroll
      for (int i = 0; i < (BM * BN / 8) / THREADS; ++i) {
        const int id = tid + i * THREADS, row = id >> 4, chunk = id & 15;
        const int col = n0 + chunk * 8;
        if (row < tile.valid && col < inter)
          *reinterpret_cast<uint4*>(act + (tile.row0 + row) * std::int64_t(inter) + col) =
              *reinterpret_cast<const uint4*>(Cs + row * C_LD + chunk * 8);
      }
    }
  }
  cp_async_wait<0>();
}

}  // namespace

std::int64_t gate_up_swiglu_max_d() { return KMAX; }

void gate_up_swiglu(const bf16* xs, const bf16* w13, bf16* act, const ExpertTile* tiles,
                    std::int64_t n_tiles, std::int64_t d, std::int64_t inter, cudaStream_t s) {
  if (n_tiles == 0) return;
  ensure_max_dynamic_smem(reinterpret_cast<const void*>(gate_up_swiglu_kernel), SMEM_BYTES);
  LB_CHECK(d > 0 && d <= KMAX && d % 8 == 0 && inter > 0 && inter % 8 == 0,
           "fused gate/up kernel: 0 < d_head <= 256, d and I multiples of 8");
  LB_CHECK(n_tiles < (std::int64_t{1} << 31), "too many expert tiles for one launch");
  gate_up_swiglu_kernel<<<static_cast<unsigned>(n_tiles), THREADS, SMEM_BYTES, s>>>(
      xs, w13, act, tiles, static_cast<int>(d), static_cast<int>(inter));
  LB_CUDA_CHECK_LAUNCH();
}

}  // namespace layerbench::moe::cuda
