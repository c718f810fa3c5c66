// Hopper (sm_90a) fused expert gate/up GEMM + SwiGLU7 with warpgroup MMA (wgmma):
//   act[r, c] = swiglu7(x[r] . W13[e][:, c], x[r] . W13[e][:, I + c])
// over the same device-side tile list as the mma.sync kernel (moe/expert_gemm.cu), with the
// fp32 accumulators fed straight to the activation: the (rows, 2I) intermediate never reaches
// memory. Built for sm_90a only (wgmma is arch-specific); the launcher checks the device.
//
// Weights are read in a K-major, block-interleaved copy prepared once per weight set
// (prepare_w13_kmajor): W13k (E, 2*Ip, dp) bf16, Ip = I rounded up to 64, dp = d rounded up to
// 64 (<= 256), zero padded, where rows [128j, 128j + 64) are the gate columns [64j, 64j + 64)
// and rows [128j + 64, 128j + 128) the matching up columns. One wgmma N = 128 block then holds
// a gate column and its up column in the same thread's accumulators.
//
// CTA: one 128-row tile of one expert, 2 warpgroups (rows 0-63, 64-127), 256 threads.
//   A  (128, dp)  resident in shared memory for the whole CTA: dp/64 slabs of (128, 64)
//   B  (128, 64)  per step = (act column block j, k slab); STAGES-deep cp.async ring, prefetch
//                 distance STAGES - 2 (a buffer is rewritten two steps after its last reader)
//   acc           two (64, 128) fp32 accumulator sets per warpgroup: block j's MMAs run on the
//                 tensor cores while the SwiGLU7 epilogue of block j - 1 runs on the others
// Shared-memory tiles use the 128-byte swizzle of wgmma's K-major canonical layout: 16-byte
// chunk c of row r sits at chunk c ^ (r & 7) of that row's 128 bytes; atoms of 8 rows (1024 B)
// are 1024-byte aligned.
#include "collectives/error.hpp"
#include "moe/cuda_kernels.cuh"

#include <cstdint>

namespace layerbench::moe::cuda {

namespace {

constexpr int BM = 128, BNH = 64, BN = 2 * BNH, BK = 64, KMAX = 256, STAGES = 8, THREADS = 256;
constexpr int A_SLAB = BM * BK * 2;   // bytes
constexpr int B_STAGE = BN * BK * 2;  // bytes
constexpr int SMEM_BYTES = (KMAX / BK) * A_SLAB + STAGES * B_STAGE + 1024;  // + alignment slack
static_assert(SMEM_BYTES <= 227 * 1024, "one CTA per SM");

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LB_WGMMA 1
#endif

__device__ __forceinline__ float swiglu7_f(float g, float u) {
  const float gc = fminf(g, 7.0f);
  const float uc = fminf(fmaxf(u, -7.0f), 7.0f);
  return gc * (1.0f / (1.0f + __expf(-1.702f * gc))) * (uc + 1.0f);
}

#ifdef LB_WGMMA
__device__ __forceinline__ void cp_async16(std::uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
// Generic-proxy writes (cp.async) made visible to the async proxy that wgmma reads through.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator accesses across the wgmma fences.
__device__ __forceinline__ void fence_acc(float (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Shared-memory matrix descriptor, K-major, 128-byte swizzle: start address >> 4 (bits 0-13),
// leading byte offset unused for this layout (1), stride byte offset = 1024 B between 8-row
// atoms (bits 32-45), swizzle mode 1 = 128 B (bits 62-63).
__device__ __forceinline__ std::uint64_t desc_sw128(std::uint32_t saddr) {
  return static_cast<std::uint64_t>((saddr & 0x3FFFF) >> 4) | (std::uint64_t{1} << 16) |
         (std::uint64_t{1024 >> 4} << 32) | (std::uint64_t{1} << 62);
}

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
  const bf16* xa;                // the tile's first input row
  const bf16* wk;                // the expert's W13k (2 Ip, dp)
  bf16* out;                     // the tile's first act row
  int d, dp, inter, kslabs, valid, wg, tid;
};

// B tile of step s = (column block s / kslabs, k slab s % kslabs): 128 W13k rows x 64 k,
// 4 chunks of 16 B per thread; a thread's rows share r & 7, so its swizzle is fixed.
__device__ __forceinline__ void load_b(const Ctx& c, int s) {
  const int j = s / c.kslabs, ks = s - j * c.kslabs;
  const int ch = c.tid & 7, r0 = c.tid >> 3;
  const bf16* src = c.wk + (std::int64_t(j) * BN + r0) * c.dp + ks * BK + ch * 8;
  const std::uint32_t dst = c.b_base + static_cast<std::uint32_t>((s % STAGES) * B_STAGE + r0 * 128 +
                                                                  ((ch ^ (r0 & 7)) << 4));
#pragma unroll
  for (int i = 0; i < 4; ++i) cp_async16(dst + i * 32 * 128, src + std::int64_t(32 * i) * c.dp, 16);
}

// SwiGLU7 of column block j from one accumulator set: thread (warp w, lane l) of warpgroup g
// holds rows 64g + 16w + l/4 (+8) and, per n8 group q, columns 8q + 2(l%4) + {0,1}; gate
// groups q < 8 pair with up groups q + 8 (registers i and i + 32).
__device__ __forceinline__ void epilogue(const Ctx& c, const float (&acc)[64], int j) {
  const int lane = c.tid & 31, w = (c.tid >> 5) & 3;
  const int row0 = c.wg * 64 + w * 16 + (lane >> 2);
  const int col0 = j * BNH + (lane & 3) * 2;
#pragma unroll
  for (int i = 0; i < 32; i += 2) {
    const int row = row0 + ((i >> 1) & 1) * 8, col = col0 + (i >> 2) * 8;
    if (row < c.valid && col < c.inter) {
      const float v0 = swiglu7_f(acc[i], acc[i + 32]);
      const float v1 = swiglu7_f(acc[i + 1], acc[i + 33]);
      *reinterpret_cast<__nv_bfloat162*>(c.out + std::int64_t(row) * c.inter + col) = __floats2bfloat162_rn(v0, v1);
    }
  }
}

// One column block: KS steps of 4 wgmma k16 MMAs into `acc`, one wgmma group in flight across
// steps. With EPI, the previous block's epilogue runs from `prev` after the first step: ptxas
// keeps the wgmma pipeline only when accumulators are read after a wait_group 0, so that step
// drains (the other steps overlap their successor's issue, barrier and loads).
template <int KS, bool EPI>
__device__ __forceinline__ void column_block(const Ctx& c, float (&acc)[64], int j, float (&prev)[64],
                                             int total_steps) {
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
    const int s = j * KS + ks;
    cp_async_wait<STAGES - 3>();  // step s's group (and the A tile) landed for this thread
    fence_proxy_async();
    __syncthreads();              // ... for every thread; and step s - 2's MMAs are done in both warpgroups
    if (s + STAGES - 2 < total_steps) load_b(c, s + STAGES - 2);
    cp_async_commit();
    fence_acc(acc);
    wgmma_fence();
    const std::uint64_t da = desc_sw128(c.a_base + ks * A_SLAB + c.wg * 64 * 128);
    const std::uint64_t db = desc_sw128(c.b_base + (s % STAGES) * B_STAGE);
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)  // +32 bytes along K = +2 in the descriptor's address field
      wgmma_m64n128k16(acc, da + 2 * kk, db + 2 * kk, ks > 0 || kk > 0);
    wgmma_commit();
    if (EPI && ks == 0) {
      wgmma_wait<0>();
      fence_acc(prev);
      epilogue(c, prev, j - 1);
    } else {
      wgmma_wait<1>();  // step s - 1 complete
    }
  }
}

#endif  // LB_WGMMA

// Declared identically for the host and device passes; the body exists only for sm_90a.
template <int KS>
__global__ void __launch_bounds__(THREADS, 1)
    gate_up_swiglu_sm90_kernel(const bf16* __restrict__ xs, const bf16* __restrict__ w13k,
                               bf16* __restrict__ act, const ExpertTile* __restrict__ tiles, int d,
                               int inter) {
#ifdef LB_WGMMA
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t raw = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem_raw));
  const std::uint32_t a_base = (raw + 1023u) & ~1023u;
  const ExpertTile tile = tiles[blockIdx.x];
  const int dp = (d + BK - 1) / BK * BK, ip = (inter + BNH - 1) / BNH * BNH;
  Ctx c;
  c.a_base = a_base;
  c.b_base = a_base + (KMAX / BK) * A_SLAB;
  c.xa = xs + tile.row0 * d;
  c.wk = w13k + std::int64_t(tile.expert) * 2 * ip * dp;
  c.out = act + tile.row0 * inter;
  c.d = d;
  c.dp = dp;
  c.inter = inter;
  c.kslabs = KS;
  c.valid = tile.valid;
  c.tid = threadIdx.x;
  c.wg = threadIdx.x >> 7;
  const int nb = ip / BNH, total = nb * KS;

  // A tile: (128, dp) as kslabs slabs of (128, 64); rows past the tile and k >= d read as zero.
  for (int id = c.tid; id < BM * 8 * c.kslabs; id += THREADS) {
    const int slab = id >> 10, row = (id >> 3) & 127, ch = id & 7, k = slab * BK + ch * 8;
    const bool ok = row < c.valid && k < d;
    cp_async16(c.a_base + slab * A_SLAB + row * 128 + ((ch ^ (row & 7)) << 4),
               ok ? c.xa + std::int64_t(row) * d + k : xs, ok ? 16 : 0);
  }
  for (int s = 0; s < STAGES - 2; ++s) {  // the A tile travels in the first group
    if (s < total) load_b(c, s);
    cp_async_commit();
  }
  // No zero fill: the first MMA of every block overwrites (scale_d = 0), and writing the
  // registers here would make ptxas serialise the wgmma pipeline.
  float acc0[64], acc1[64];
  column_block<KS, false>(c, acc0, 0, acc1, total);
  for (int j = 1; j < nb; j += 2) {
    column_block<KS, true>(c, acc1, j, acc0, total);
    if (j + 1 < nb) column_block<KS, true>(c, acc0, j + 1, acc1, total);
  }
  wgmma_wait<0>();
  fence_acc(acc0);
  fence_acc(acc1);
  if ((nb - 1) % 2 == 0)
    epilogue(c, acc0, nb - 1);
  else
    epilogue(c, acc1, nb - 1);
  cp_async_wait<0>();
#else
  __trap();  // never launched: the launcher requires a compute capability 9.0 device
#endif
}

template <int KS>
void launch_sm90(const bf16* xs, const bf16* w13k, bf16* act, const ExpertTile* tiles, std::int64_t n_tiles,
                 int d, int inter, cudaStream_t s) {
  // The shared-memory opt-in is per device and per instantiation.
  static bool configured[64] = {};
  int dev = 0;
  LB_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 0 || dev >= 64 || !configured[dev]) {
    LB_CUDA_CHECK(cudaFuncSetAttribute(gate_up_swiglu_sm90_kernel<KS>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       SMEM_BYTES));
    if (dev >= 0 && dev < 64) configured[dev] = true;
  }
  gate_up_swiglu_sm90_kernel<KS><<<static_cast<unsigned>(n_tiles), THREADS, SMEM_BYTES, s>>>(xs, w13k, act, tiles,
                                                                                            d, inter);
  LB_CUDA_CHECK_LAUNCH();
}

// W13 (E, d, 2I) [gate | up] -> W13k (E, 2 Ip, dp), see the file comment.
__global__ void prepare_w13_kmajor_kernel(const bf16* __restrict__ w13, bf16* __restrict__ w13k, std::int64_t experts,
                                          int d, int inter) {
  const int dp = (d + BK - 1) / BK * BK, ip = (inter + BNH - 1) / BNH * BNH;
  const std::int64_t n = experts * 2 * ip * dp;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const int k = static_cast<int>(i % dp);
    const std::int64_t row = i / dp;
    const int rr = static_cast<int>(row % (2 * ip));
    const std::int64_t e = row / (2 * ip);
    const int j = rr / BN, q = rr % BN, col = j * BNH + (q % BNH);
    bf16 v = __float2bfloat16_rn(0.0f);
    if (k < d && col < inter) v = w13[(e * d + k) * 2 * inter + (q < BNH ? 0 : inter) + col];
    w13k[i] = v;
  }
}

}  // namespace

bool gate_up_swiglu_sm90_supported(std::int64_t d, std::int64_t inter) {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
    return false;
  return major == 9 && minor == 0 && d > 0 && d <= KMAX && d % 8 == 0 && inter > 0 && inter % 8 == 0;
}

std::int64_t w13_kmajor_elems(std::int64_t experts, std::int64_t d, std::int64_t inter) {
  return experts * 2 * ((inter + BNH - 1) / BNH * BNH) * ((d + BK - 1) / BK * BK);
}

void prepare_w13_kmajor(const bf16* w13, bf16* w13k, std::int64_t experts, std::int64_t d, std::int64_t inter,
                        cudaStream_t s) {
  LB_CHECK(d > 0 && d <= KMAX && inter > 0, "W13 K-major copy: 0 < d_head <= 256");
  const std::int64_t n = w13_kmajor_elems(experts, d, inter);
  if (n == 0) return;
  const int blocks = static_cast<int>(std::min<std::int64_t>((n + 255) / 256, 65535LL * 8));
  prepare_w13_kmajor_kernel<<<blocks, 256, 0, s>>>(w13, w13k, experts, static_cast<int>(d), static_cast<int>(inter));
  LB_CUDA_CHECK_LAUNCH();
}

void gate_up_swiglu_sm90(const bf16* xs, const bf16* w13k, bf16* act, const ExpertTile* tiles,
                         std::int64_t n_tiles, std::int64_t d, std::int64_t inter, cudaStream_t s) {
  if (n_tiles == 0) return;
  LB_CHECK(gate_up_swiglu_sm90_supported(d, inter),
           "Hopper gate/up kernel: needs a compute capability 9.0 device, 0 < d_head <= 256, d and I multiples of 8");
  LB_CHECK(n_tiles < (std::int64_t{1} << 31), "too many expert tiles for one launch");
  const int di = static_cast<int>(d), ii = static_cast<int>(inter);
  switch ((d + BK - 1) / BK) {  // k slabs of 64
    case 1: launch_sm90<1>(xs, w13k, act, tiles, n_tiles, di, ii, s); break;
    case 2: launch_sm90<2>(xs, w13k, act, tiles, n_tiles, di, ii, s); break;
    case 3: launch_sm90<3>(xs, w13k, act, tiles, n_tiles, di, ii, s); break;
    default: launch_sm90<4>(xs, w13k, act, tiles, n_tiles, di, ii, s); break;
  }
}

}  // namespace layerbench::moe::cuda
