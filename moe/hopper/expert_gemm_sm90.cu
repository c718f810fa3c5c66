// Hopper (sm_90a) fused expert gate/up GEMM + SwiGLU7 with warpgroup MMA (wgmma):
//   act[r, c] = swiglu7(x[r] . W13[e][:, c], x[r] . W13[e][:, I + c])
// over the same device-side tile list as the mma.sync kernel (moe/magi2/expert_gemm.cu), with the
// fp32 accumulators fed straight to the activation: the (rows, 2I) intermediate never reaches
// memory. Built for sm_90a only (wgmma is arch-specific); the launcher checks the device.
//
// Weights are read in a K-major, block-interleaved copy prepared once per weight set
// (prepare_w13_kmajor): W13k (E, 2*Ip, dp) bf16, Ip = I rounded up to 64, dp = d rounded up to
// 64 (<= 256), zero padded, where rows [128j, 128j + 64) are the gate columns [64j, 64j + 64)
// and rows [128j + 64, 128j + 128) the matching up columns. One wgmma N = 128 block then holds
// a gate column and its up column in the same thread's accumulators.
//
// CTA: one 128-row tile of one expert. Warpgroups 0 and 1 consume (rows 0-63 and 64-127 of
// the tile; in a tile of at most 64 live rows both take rows 0-63 and split the column
// blocks); a ninth warp produces: one thread issues TMA (bulk tensor) copies.
// Wide tiles (tile_rows = kWideTileRows = 192): three consumer warpgroups (rows 64g..64g+63)
// and a producer warpgroup that hands its registers to them (setmaxnreg); one weight stream
// then feeds 192 rows. The (column block, live 64-row block) units of a tile go round-robin to
// the consumers, so a tile with fewer live row blocks splits its column blocks among them.
//   A  (128, dp)  resident in shared memory for the whole CTA: dp/64 slabs of (128, 64), one TMA
//                 box each (rows past the matrix and k >= d arrive as zeros)
//   B  (128, 64)  per step = (act column block j, k slab): a STAGES-deep ring of TMA boxes with
//                 full / empty mbarriers (a stage is refilled once both consumers released it)
//   acc           one (64, 128) fp32 accumulator set per consumer, emptied by the SwiGLU7
//                 epilogue after each column block; consumer 1 starts when consumer 0's first
//                 block of MMAs is done, so one's epilogue overlaps the other's MMAs
// SwiGLU7's sigmoid: one tanh.approx per value (Sm90Variant::tanh_sigmoid, the default) or
// exp + rcp. Sm90Variant::gate_up_prefetch > 0: the producer asks L2 for the weight box that
// many ring steps ahead.
// Shared-memory tiles use the 128-byte swizzle of wgmma's K-major canonical layout (the TMA
// SWIZZLE_128B pattern): 16-byte chunk c of row r sits at chunk c ^ (r & 7) of that row's 128
// bytes; atoms of 8 rows (1024 B) are 1024-byte aligned.
#include "collectives/error.hpp"
#include "moe/hopper/experts_sm90.cuh"
#include "moe/hopper/sm90.cuh"

#include <cstdint>

namespace layerbench::moe::cuda {

namespace {

using namespace sm90;

constexpr int BNH = 64, BN = 2 * BNH, BK = 64, KMAX = 256;
constexpr int B_STAGE = BN * BK * 2;  // bytes
// Epilogue staging per consumer: 64 rows x 64 bf16 at a 72-element pitch (144 B): the
// accumulator-fragment writes hit 32 distinct banks and each row reads back as 16-byte chunks.
constexpr int C_PITCH = 72, C_BYTES = 64 * C_PITCH * 2;
// NC consumer warpgroups: 2 (128-row tiles, a producer warp, an 8-stage ring) or 3 (192-row
// tiles, a producer warpgroup, 6 stages: what shared memory leaves beside the 96 KB A tile).
template <int NC>
struct Tile {
  static constexpr int BM = 64 * NC, A_SLAB = BM * BK * 2, STAGES = NC == 2 ? 8 : 6, THREADS = NC == 2 ? 288 : 512;
  // A slabs, B ring, staging, 2 * STAGES + 1 mbarriers, alignment slack.
  static constexpr int SMEM = (KMAX / BK) * A_SLAB + STAGES * B_STAGE + NC * C_BYTES + (2 * STAGES + 1) * 8 + 1024;
  static_assert(SMEM <= 227 * 1024, "one CTA per SM");
};
static_assert(Tile<2>::BM == kExpertTileRows && Tile<3>::BM == kWideTileRows, "one CTA per expert tile");

#ifdef LB_WGMMA
// D (64 x 128, fp32) (+)= A (64 x 16, smem) * B (128 x 16, smem)^T; scale_d = 0 overwrites D.
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], std::uint64_t da, std::uint64_t db,
                                                 int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,"
      "%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,"
      "%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
      "%64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
        "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),
        "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),
        "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
        "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),
        "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
        "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(scale_d));
}

struct Ctx {
  std::uint32_t a_base, b_base;  // 1024-aligned shared addresses
  std::uint32_t c_base;          // this consumer's epilogue staging
  std::uint32_t full, empty;     // mbarrier arrays (STAGES each)
  bf16* out;                     // the tile's first act row
  int inter, valid, g, tid;      // g: consumer warpgroup; tid within it
  int rows0;                     // first tile row of this consumer: 64g, or 0 in a half tile
  int j0, dj;                    // this CTA's column blocks: j0, j0 + dj, ... (ring position li)
  bool share;                    // paired: the peer CTA shares the ring (release on both)
};

// A consumed stage back to the producer(s): unpaired, every consumer thread arrives; paired,
// one arrive per consumer warp, on the peer's barrier too when the two CTAs share the ring.
template <bool PAIR>
__device__ __forceinline__ void release(const Ctx& c, int stage) {
  if constexpr (PAIR) {
    __syncwarp();
    if ((c.tid & 31) == 0) {
      mbar_arrive(c.empty + 8 * stage);
      if (c.share) mbar_arrive_peer(c.empty + 8 * stage, static_cast<int>(cluster_rank()) ^ 1);
    }
  } else {
    mbar_arrive(c.empty + 8 * stage);
  }
}

// SwiGLU7 of column block j from one accumulator set: thread (warp w, lane l) of a consumer
// holds rows rows0 + 16w + l/4 (+8) and, per n8 group q, columns 8q + 2(l%4) + {0,1}; gate
// groups q < 8 pair with up groups q + 8 (registers i and i + 32). The bf16 results are staged
// in shared memory and stored as whole 128-byte row segments (16 bytes per thread); the
// consumer's named barrier (2 + g) orders the staging against the previous block's reads.
__device__ __forceinline__ void consumer_sync(int g) {  // immediate ids: ptxas then reserves only these
  if (g == 0)
    asm volatile("bar.sync 2, 128;\n" ::: "memory");
  else if (g == 1)
    asm volatile("bar.sync 3, 128;\n" ::: "memory");
  else
    asm volatile("bar.sync 4, 128;\n" ::: "memory");
}

template <bool TANH>
__device__ __forceinline__ float swiglu7_epi(float g, float u) {
  if constexpr (TANH)
    return swiglu7_dev_tanh(g, u);
  else
    return swiglu7_dev_fast(g, u);
}

template <bool TANH>
__device__ __forceinline__ void epilogue(const Ctx& c, const float (&acc)[64], int j) {
  const int lane = c.tid & 31, w = c.tid >> 5;
  const int r0 = w * 16 + (lane >> 2), c0 = (lane & 3) * 2;
  consumer_sync(c.g);
#pragma unroll
  for (int i = 0; i < 32; i += 2) {
    const int row = r0 + ((i >> 1) & 1) * 8, col = c0 + (i >> 2) * 8;
    const __nv_bfloat162 v = __floats2bfloat162_rn(swiglu7_epi<TANH>(acc[i], acc[i + 32]), swiglu7_epi<TANH>(acc[i + 1], acc[i + 33]));
    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(c.c_base + (row * C_PITCH + col) * 2),
                 "r"(*reinterpret_cast<const std::uint32_t*>(&v))
                 : "memory");
  }
  consumer_sync(c.g);
#pragma unroll
  for (int q = 0; q < 4; ++q) {  // 64 rows x 8 chunks of 16 B
    const int id = c.tid + 128 * q, row = id >> 3, ch = id & 7;
    const int grow = c.rows0 + row, col = j * BNH + ch * 8;
    if (grow < c.valid && col < c.inter) {
      uint4 v;
      asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                   : "r"(c.c_base + (row * C_PITCH + ch * 8) * 2)
                   : "memory");
      *reinterpret_cast<uint4*>(c.out + std::int64_t(grow) * c.inter + col) = v;
    }
  }
}

// One column block of one consumer: KS steps of 4 wgmma k16 MMAs into `acc`, one wgmma group
// kept in flight between steps; a stage is released (empty barrier) once its MMAs are
// complete. The block ends with wait_group 0 and the SwiGLU7 epilogue (ptxas keeps the wgmma
// pipeline only when accumulators are read after a wait_group 0); the other consumer's MMAs
// keep the tensor cores busy meanwhile (the consumers run a block apart).
template <int KS, bool PAIR, bool TANH, int NC>
__device__ __forceinline__ void column_block(const Ctx& c, float (&acc)[64], int li, bool release_partner = false) {
  constexpr int STAGES = Tile<NC>::STAGES, A_SLAB = Tile<NC>::A_SLAB;
  const int j = c.j0 + li * c.dj;
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
    const int s = li * KS + ks, stage = s % STAGES;
    mbar_wait(c.full + 8 * stage, (s / STAGES) & 1);
    fence_acc(acc);
    wgmma_fence();
    const std::uint64_t da = desc_sw128(c.a_base + ks * A_SLAB + c.rows0 * 128);
    const std::uint64_t db = desc_sw128(c.b_base + stage * B_STAGE);
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)  // +32 bytes along K = +2 in the descriptor's address field
      wgmma_m64n128k16(acc, da + 2 * kk, db + 2 * kk, ks > 0 || kk > 0);
    wgmma_commit();
    if (ks + 1 < KS) {
      wgmma_wait<1>();
      if (ks > 0) release<PAIR>(c, (s - 1) % STAGES);  // step s - 1's MMAs are complete
    } else {
      wgmma_wait<0>();
      if (ks > 0) release<PAIR>(c, (s - 1) % STAGES);
      release<PAIR>(c, stage);
    }
  }
  fence_acc(acc);
  // Consumer 0 lets the others start once its first block's MMAs are done (named barrier 1):
  // their MMAs then overlap consumer 0's epilogue, and they stay about a block apart.
  if (release_partner) asm volatile("bar.arrive 1, %0;\n" ::"n"(128 * NC) : "memory");
  epilogue<TANH>(c, acc, j);
}

// A column block computed by the other consumer: its stages are released as they arrive
// (waiting on `full` keeps the releases in the right phase).
template <int KS, bool PAIR, int NC>
__device__ __forceinline__ void pass_block(const Ctx& c, int li) {
  constexpr int STAGES = Tile<NC>::STAGES;
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
    const int s = li * KS + ks, stage = s % STAGES;
    mbar_wait(c.full + 8 * stage, (s / STAGES) & 1);
    release<PAIR>(c, stage);
  }
}

#endif  // LB_WGMMA

// The A tile gathered straight from the token rows (the device-side schedule): row r of a
// tile is assignment vals[row0 + r] = (token * hv + head) * k + j, i.e. row token * hl + head
// of x (ld d). x == nullptr: A comes by TMA from the expert-major copy behind xmap.
struct GatherA {
  const bf16* x = nullptr;
  const int* vals = nullptr;
  int hl = 0, hv = 0, k = 0, d = 0;
};

#ifdef LB_WGMMA
// The 128 NC consumer threads copy the (64 NC, 64 KS) A tile of `tile` into the swizzled slabs with
// 16-byte cp.async (thread t: row t / 2, every other 16-byte chunk; rows past the tile and
// k >= d are zero-filled), wait for their own copies and make them visible to the async proxy
// (wgmma reads them); each then arrives on the tile's mbarrier.
template <int KS, int NC>
__device__ __forceinline__ void gather_a_tile(const GatherA& g, const ExpertTile& tile, std::uint32_t a_base, int tid) {
  constexpr int CHUNKS = KS * BK / 8, A_SLAB = Tile<NC>::A_SLAB;  // 16-byte chunks per row
  const int r = tid >> 1;
  const bool row_live = r < tile.valid;
  std::int64_t off = 0;
  if (row_live) {
    const int a = __ldg(g.vals + tile.row0 + r), pair = a / g.k;
    off = (std::int64_t(pair / g.hv) * g.hl + pair % g.hv) * g.d;
  }
#pragma unroll
  for (int c = tid & 1; c < CHUNKS; c += 2) {
    const bool live = row_live && c * 8 < g.d;
    const bf16* src = live ? g.x + off + c * 8 : g.x;
    const std::uint32_t dst = a_base + (c / 8) * A_SLAB + r * 128 + (((c % 8) ^ (r & 7)) << 4);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(live ? 16 : 0) : "memory");
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
#endif

// Declared identically for the host and device passes; the body exists only for sm_90a.
// Warpgroups 0 .. NC-1 consume; warpgroup NC (one warp when NC = 2) produces: one thread issues
// every TMA copy.
template <int KS, bool PAIR, bool TANH, int NC>
__global__ void __launch_bounds__(Tile<NC>::THREADS, 1)
    gate_up_swiglu_sm90_kernel(const __grid_constant__ CUtensorMap xmap, const __grid_constant__ CUtensorMap wmap,
                               bf16* __restrict__ act, const ExpertTile* __restrict__ tiles, int inter, int wrows,
                               const GatherA gather, int prefetch) {
#ifdef LB_WGMMA
  static_assert(NC == 2 || !PAIR, "paired: 128-row tiles");
  constexpr int STAGES = Tile<NC>::STAGES, A_SLAB = Tile<NC>::A_SLAB;
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t raw = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  const std::uint32_t a_base = (raw + 1023u) & ~1023u;
  const std::uint32_t b_base = a_base + KMAX / BK * A_SLAB;
  const std::uint32_t c_base = b_base + STAGES * B_STAGE;
  const std::uint32_t full = c_base + NC * C_BYTES, empty = full + 8 * STAGES, a_full = empty + 8 * STAGES;
  // Paired (see the launcher): the CTAs of a cluster take list entries 2p and 2p + 1. A live
  // second entry: two tiles of one expert sharing each weight stage (each CTA loads one half,
  // multicast). A negative one: one tile whose column blocks the two CTAs split (even / odd).
  const ExpertTile first = tiles[PAIR ? blockIdx.x & ~1u : blockIdx.x];
  if (first.valid <= 0) return;  // an empty entry of a device-built tile list (both CTAs of a pair)
  const int nb = (inter + BNH - 1) / BNH;
  ExpertTile tile = first;
  bool share = false;
  int rank = 0, j0 = 0, dj = 1, nbl = nb;
  if constexpr (PAIR) {
    rank = cluster_rank();
    const ExpertTile second = tiles[blockIdx.x | 1u];
    share = second.valid > 0;
    if (share && rank == 1) tile = second;
    if (!share) {
      j0 = nb > 1 ? rank : 0;
      dj = nb > 1 ? 2 : 1;
      nbl = nb > 1 ? (nb - rank + 1) / 2 : (rank == 0 ? nb : 0);
    }
  }
  const int total = nbl * KS;
  if (threadIdx.x == 0) {
    for (int i = 0; i < STAGES; ++i) {
      mbar_init(full + 8 * i, 1);
      mbar_init(empty + 8 * i, PAIR ? (share ? 16 : 8) : NC * 128);
    }
    mbar_init(a_full, gather.x ? NC * 128 : 1);  // gathered: every consumer thread arrives
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if constexpr (PAIR)
    cluster_sync();  // the peer's barriers exist before anything arrives on them
  else
    __syncthreads();
  const int wg = threadIdx.x >> 7;  // 0 .. NC-1: consumers; NC: the producer
  if (wg == NC) {
    if constexpr (NC == 3) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    const int wrow0 = tile.expert * wrows;
    if (threadIdx.x == 128 * NC) {
      if (!gather.x) {
        // A tile (BM rows x KS slabs of 64 k); rows past the matrix and k >= d arrive as zeros.
        mbar_arrive_expect_tx(a_full, KS * A_SLAB);
        for (int ks = 0; ks < KS; ++ks)
          tma_load_2d(a_base + ks * A_SLAB, &xmap, ks * BK, static_cast<int>(tile.row0), a_full);
      }
      for (int s = 0; s < total; ++s) {
        const int stage = s % STAGES, li = s / KS, ks = s - li * KS, row = wrow0 + (j0 + li * dj) * BN;
        // The weight boxes `prefetch` steps ahead, into L2 (at the start every step past the ring).
        for (int t = prefetch > 0 && s == 0 ? min(STAGES, prefetch) : s + prefetch; prefetch > 0 && t <= s + prefetch && t < total; ++t) {
          const int lt = t / KS, kt = t - lt * KS, prow = wrow0 + (j0 + lt * dj) * BN;
          if constexpr (PAIR) {  // boxes of BNH rows
            prefetch_l2(&wmap, kt * BK, prow + (share ? rank * BNH : 0));
            if (!share) prefetch_l2(&wmap, kt * BK, prow + BNH);
          } else {
            prefetch_l2(&wmap, kt * BK, prow);
          }
        }
        if (s >= STAGES) mbar_wait(empty + 8 * stage, ((s / STAGES) - 1) & 1);
        const std::uint32_t dst = b_base + stage * B_STAGE, bar = full + 8 * stage;
        mbar_arrive_expect_tx(bar, B_STAGE);
        if constexpr (PAIR) {  // boxes of BNH rows: the gate half, then the up half
          if (share) {
            tma_load_2d_multicast(dst + rank * (B_STAGE / 2), &wmap, ks * BK, row + rank * BNH, bar, 0x3);
          } else {
            tma_load_2d(dst, &wmap, ks * BK, row, bar);
            tma_load_2d(dst + B_STAGE / 2, &wmap, ks * BK, row + BNH, bar);
          }
        } else {
          tma_load_2d(dst, &wmap, ks * BK, row, bar);
        }
      }
    }
  } else if (NC == 3 || nbl > 0) {  // nbl = 0: a paired CTA with no column block of a lone tile
    if constexpr (NC == 3) asm volatile("setmaxnreg.inc.sync.aligned.u32 152;\n" ::: "memory");
    Ctx c;
    c.a_base = a_base;
    c.b_base = b_base;
    c.c_base = c_base + wg * C_BYTES;
    c.full = full;
    c.empty = empty;
    c.out = act + tile.row0 * inter;
    c.inter = inter;
    c.valid = tile.valid;
    c.g = wg;
    c.rows0 = 64 * wg;
    c.tid = threadIdx.x & 127;
    c.j0 = j0;
    c.dj = dj;
    c.share = share;
    if (gather.x) {
      gather_a_tile<KS, NC>(gather, tile, a_base, threadIdx.x);
      mbar_arrive(a_full);
    }
    mbar_wait(a_full, 0);
    if (c.g >= 1) asm volatile("bar.sync 1, %0;\n" ::"n"(128 * NC) : "memory");  // see column_block
    float acc[64];
    if constexpr (NC == 3) {
      // Units (column block li, live 64-row block rb), li-major, round-robin over the
      // consumers: each consumer has at most one unit per column block and hands the stages of
      // the others straight back.
      const int live = min(NC, (c.valid + 63) / 64);
      int li = 0;
      for (int u = c.g; u < nbl * live; u += NC) {
        const int lu = u / live;
        for (; li < lu; ++li) pass_block<KS, PAIR, NC>(c, li);
        c.rows0 = 64 * (u - lu * live);
        column_block<KS, PAIR, TANH, NC>(c, acc, lu, u == 0);
        ++li;
      }
      for (; li < nbl; ++li) pass_block<KS, PAIR, NC>(c, li);
    } else if (c.valid <= 64) {
      // Half tile (at most 64 live rows, e.g. an expert's last): both consumers take rows 0-63
      // and split the column blocks, even to consumer 0 and odd to consumer 1; each hands the
      // other's stages straight back. They still alternate MMAs and epilogues.
      c.rows0 = 0;
      int li = 0;
      for (int mine = c.g; mine < nbl; mine += 2) {
        for (; li < mine; ++li) pass_block<KS, PAIR, NC>(c, li);
        column_block<KS, PAIR, TANH, NC>(c, acc, mine, c.g == 0 && mine == 0);
        ++li;
      }
      for (; li < nbl; ++li) pass_block<KS, PAIR, NC>(c, li);
    } else {
      // No zero fill: the first MMA of every block overwrites (scale_d = 0), and writing the
      // registers here would make ptxas serialise the wgmma pipeline.
      column_block<KS, PAIR, TANH, NC>(c, acc, 0, c.g == 0);
      for (int li = 1; li < nbl; ++li) column_block<KS, PAIR, TANH, NC>(c, acc, li);
    }
  }
  if constexpr (PAIR) cluster_sync();  // no CTA leaves while its peer may still write into it
#else
  __trap();  // never launched: the launcher requires a compute capability 9.0 device
#endif
}

template <int KS, bool PAIR, bool TANH, int NC = 2>
void launch_kernel(const CUtensorMap& xmap, const CUtensorMap& wmap, bf16* act, const ExpertTile* tiles,
                   std::int64_t n_tiles, int inter, int wrows, const GatherA& g, int pf, cudaStream_t s) {
  constexpr int smem = Tile<NC>::SMEM, threads = Tile<NC>::THREADS;
  ensure_max_dynamic_smem(reinterpret_cast<const void*>(gate_up_swiglu_sm90_kernel<KS, PAIR, TANH, NC>), smem);
  if constexpr (!PAIR) {
    gate_up_swiglu_sm90_kernel<KS, false, TANH, NC><<<static_cast<unsigned>(n_tiles), threads, smem, s>>>(
        xmap, wmap, act, tiles, inter, wrows, g, pf);
  } else {
    PairLaunch pl(static_cast<unsigned>(n_tiles), threads, smem, s);
    LB_CUDA_CHECK(cudaLaunchKernelEx(&pl.cfg, gate_up_swiglu_sm90_kernel<KS, true, TANH, NC>, xmap, wmap, act, tiles,
                                     inter, wrows, g, pf));
  }
  LB_CUDA_CHECK_LAUNCH();
}

template <int KS>
void launch_sm90(const CUtensorMap& xmap, const CUtensorMap& wmap, bf16* act, const ExpertTile* tiles,
                 std::int64_t n_tiles, int inter, int wrows, const GatherA& g, bool paired, bool tanh_sigmoid,
                 int pf, bool wide, cudaStream_t s) {
  if (wide) {  // built with the tanh sigmoid only (the launcher checks)
    launch_kernel<KS, false, true, 3>(xmap, wmap, act, tiles, n_tiles, inter, wrows, g, pf, s);
  } else if (paired) {
    if (tanh_sigmoid)
      launch_kernel<KS, true, true>(xmap, wmap, act, tiles, n_tiles, inter, wrows, g, pf, s);
    else
      launch_kernel<KS, true, false>(xmap, wmap, act, tiles, n_tiles, inter, wrows, g, pf, s);
  } else {
    if (tanh_sigmoid)
      launch_kernel<KS, false, true>(xmap, wmap, act, tiles, n_tiles, inter, wrows, g, pf, s);
    else
      launch_kernel<KS, false, false>(xmap, wmap, act, tiles, n_tiles, inter, wrows, g, pf, s);
  }
}

}  // namespace

bool gate_up_swiglu_sm90_supported(std::int64_t d, std::int64_t inter) {
  return sm90::device_is_sm90() && d >= BK && d <= KMAX && d % 8 == 0 && inter > 0 && inter % 8 == 0;
}

namespace {

void gate_up_launch(const bf16* xs, std::int64_t rows, const bf16* w13k, std::int64_t experts, bf16* act,
                    const ExpertTile* tiles, std::int64_t n_tiles, std::int64_t d, std::int64_t inter, const GatherA& g,
                    bool paired, const Sm90Variant& v, std::int64_t tile_rows, cudaStream_t s) {
  if (n_tiles == 0) return;
  const bool wide = tile_rows == kWideTileRows;
  LB_CHECK(tile_rows == kExpertTileRows || (wide && !paired && v.tanh_sigmoid),
           "Hopper gate/up kernel: 128-row tiles, or unpaired 192-row tiles with the tanh sigmoid");
  LB_CHECK(!paired || n_tiles % 2 == 0, "Hopper gate/up kernel: a paired tile list has an even length");
  LB_CHECK(gate_up_swiglu_sm90_supported(d, inter),
           "Hopper gate/up kernel: needs a compute capability 9.0 device, 64 <= d_head <= 256, d and I multiples of 8");
  LB_CHECK(n_tiles < (std::int64_t{1} << 31), "too many expert tiles for one launch");
  const std::int64_t dp = (d + BK - 1) / BK * BK, wrows = 2 * ((inter + BNH - 1) / BNH * BNH);
  LB_CHECK(rows < (std::int64_t{1} << 31) && experts * wrows < (std::int64_t{1} << 31),
           "Hopper gate/up kernel: TMA coordinates are 32-bit");
  const CUtensorMap xmap = encode_tma_2d(xs, static_cast<std::uint64_t>(d), static_cast<std::uint64_t>(rows), BK,
                                         static_cast<std::uint32_t>(tile_rows));
  const CUtensorMap wmap = encode_tma_2d(w13k, static_cast<std::uint64_t>(dp), static_cast<std::uint64_t>(experts * wrows),
                                         BK, paired ? BNH : BN);
  const int ii = static_cast<int>(inter), wr = static_cast<int>(wrows);
  const bool th = v.tanh_sigmoid;
  const int pf = v.gate_up_prefetch;
  LB_CHECK(pf >= 0, "Hopper gate/up kernel: prefetch distance >= 0");
  switch (dp / BK) {  // k slabs of 64
    case 1: launch_sm90<1>(xmap, wmap, act, tiles, n_tiles, ii, wr, g, paired, th, pf, wide, s); break;
    case 2: launch_sm90<2>(xmap, wmap, act, tiles, n_tiles, ii, wr, g, paired, th, pf, wide, s); break;
    case 3: launch_sm90<3>(xmap, wmap, act, tiles, n_tiles, ii, wr, g, paired, th, pf, wide, s); break;
    default: launch_sm90<4>(xmap, wmap, act, tiles, n_tiles, ii, wr, g, paired, th, pf, wide, s); break;
  }
}

}  // namespace

void gate_up_swiglu_sm90(const bf16* xs, std::int64_t rows, const bf16* w13k, std::int64_t experts, bf16* act,
                         const ExpertTile* tiles, std::int64_t n_tiles, std::int64_t d, std::int64_t inter,
                         cudaStream_t s, bool paired, const Sm90Variant& v, std::int64_t tile_rows) {
  gate_up_launch(xs, rows, w13k, experts, act, tiles, n_tiles, d, inter, GatherA{}, paired, v, tile_rows, s);
}

void gate_up_swiglu_sm90_gathered(const bf16* x, std::int64_t x_rows, const int* vals_sorted, std::int64_t hl,
                                  std::int64_t hv, std::int64_t k, const bf16* w13k, std::int64_t experts, bf16* act,
                                  const ExpertTile* tiles, std::int64_t n_tiles, std::int64_t d, std::int64_t inter,
                                  cudaStream_t s, bool paired, const Sm90Variant& v,
                                  std::int64_t tile_rows) {
  LB_CHECK(x_rows * d < (std::int64_t{1} << 40), "gathered gate/up: x too large");
  const GatherA g{x, vals_sorted, static_cast<int>(hl), static_cast<int>(hv), static_cast<int>(k), static_cast<int>(d)};
  gate_up_launch(x, x_rows, w13k, experts, act, tiles, n_tiles, d, inter, g, paired, v, tile_rows, s);
}

}  // namespace layerbench::moe::cuda
