#pragma once
// Hopper (sm_90a) building blocks shared by the expert kernels (moe/hopper/expert_gemm_sm90.cu,
// moe/hopper/expert_down_sm90.cu): warpgroup MMA fences, shared-memory matrix descriptors, mbarriers
// and TMA (bulk tensor) copies. Device code exists only in the sm_90a pass (LB_WGMMA).
#include "moe/hopper/experts_sm90.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <stdexcept>
#include <utility>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LB_WGMMA 1
#endif

namespace layerbench::moe::cuda::sm90 {

// A 2-D bf16 tensor map (rows of `inner` elements, `outer` rows, dense) with (box_inner,
// box_outer) boxes and the 128-byte swizzle; cuTensorMapEncodeTiled through the runtime's
// driver entry point (no link against libcuda, so binaries still start without a driver).
CUtensorMap encode_tma_2d(const void* base, std::uint64_t inner, std::uint64_t outer, std::uint32_t box_inner,
                          std::uint32_t box_outer);
// The same for a tensor of bytes (fp8 e4m3): `inner` one-byte elements per row (a multiple of 16).
CUtensorMap encode_tma_2d_u8(const void* base, std::uint64_t inner, std::uint64_t outer, std::uint32_t box_inner,
                             std::uint32_t box_outer);
// Compute capability 9.0 (the sm_90a kernels' only target).
bool device_is_sm90();
// The current device (dev) and its multiprocessor count.
int current_device_sms(int& dev);

// A kernel's launch configuration for cudaLaunchKernelEx (used in place: cfg points at attr),
// with optional attributes: 2-CTA clusters, and an early start (programmatic dependent launch:
// the kernel may begin while the stream's previous kernel runs, once that kernel's CTAs executed
// grid_dependents_may_start() or exited; it must call grid_dependency_wait() before it reads what
// that kernel writes).
struct Launch {
  cudaLaunchAttribute attr[2]{};
  cudaLaunchConfig_t cfg{};
  Launch(unsigned grid, int threads, int smem, cudaStream_t s) {
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(static_cast<unsigned>(threads));
    cfg.dynamicSmemBytes = static_cast<std::size_t>(smem);
    cfg.stream = s;
    cfg.attrs = attr;
    cfg.numAttrs = 0;
  }
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;
  void cluster_pairs() {
    auto& a = next();
    a.id = cudaLaunchAttributeClusterDimension;
    a.val.clusterDim.x = 2;
    a.val.clusterDim.y = 1;
    a.val.clusterDim.z = 1;
  }
  void early_start() {
    auto& a = next();
    a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    a.val.programmaticStreamSerializationAllowed = 1;
  }

 private:
  cudaLaunchAttribute& next() {
    if (cfg.numAttrs >= sizeof(attr) / sizeof(attr[0])) throw std::logic_error("sm90::Launch: too many attributes");
    return attr[cfg.numAttrs++];
  }
};

// Launch configuration of a kernel in 2-CTA clusters.
struct PairLaunch : Launch {
  PairLaunch(unsigned grid, int threads, int smem, cudaStream_t s) : Launch(grid, threads, smem, s) { cluster_pairs(); }
};

// Programmatic dependent launch, device side (sm_90; no-ops for a kernel launched without it).
__device__ __forceinline__ void grid_dependents_may_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// What the grid before this one wrote (a tile list, its length), read after grid_dependency_wait():
// through L2 (ld.global.cg), in order with the wait. Not the read-only path: a grid launched early
// is resident while the one before it still writes, so that data is not read-only for this grid's
// lifetime (ld.global.nc's contract, which a const __restrict__ pointer lets the compiler assume),
// and a read-only load may be scheduled ahead of the wait.
__device__ __forceinline__ int load_after_wait(const int* p) {
  int v;
  asm volatile("ld.global.cg.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
template <class T>
__device__ __forceinline__ T load16_after_wait(const T* p) {
  static_assert(sizeof(T) == 16 && alignof(T) <= 16, "a 16-byte record");
  int4 v;
  asm volatile("ld.global.cg.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  T t;
  __builtin_memcpy(&t, &v, sizeof(T));
  return t;
}

// L2 eviction priorities of a TMA copy's lines (the cache-policy operand of .L2::cache_hint).
constexpr std::uint64_t kL2EvictNormal = 0x1000000000000000ull, kL2EvictFirst = 0x12F0000000000000ull,
                        kL2EvictLast = 0x14F0000000000000ull;

#ifdef LB_WGMMA
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator accesses across the wgmma fences.
template <int N>
__device__ __forceinline__ void fence_acc(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Shared-memory matrix descriptor, K-major, 128-byte swizzle: start address >> 4 (bits 0-13),
// leading byte offset unused for this layout (1), stride byte offset = 1024 B between 8-row
// atoms (bits 32-45), swizzle mode 1 = 128 B (bits 62-63).
__device__ __forceinline__ std::uint64_t desc_sw128(std::uint32_t saddr) {
  return static_cast<std::uint64_t>((saddr & 0x3FFFF) >> 4) | (std::uint64_t{1} << 16) |
         (std::uint64_t{1024 >> 4} << 32) | (std::uint64_t{1} << 62);
}

// Register budgets per warpgroup (sm_90a setmaxnreg): the producer warpgroup gives registers
// back, the consumer warpgroups take them (the kernel needs __launch_bounds__(threads, 1), and
// every warp of a warpgroup executes the same call).
template <int N>
__device__ __forceinline__ void regs_release() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void regs_take() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

// mbarriers and TMA.
__device__ __forceinline__ void mbar_init(std::uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint32_t bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// try_wait without a suspend-time hint: a 1 ms hint measured 2-4% slower on the gate/up kernel.
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, int parity) {
  std::uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
// 2-D tile (box) of a tensor map into shared memory; completion is signalled on `bar`. HINT: with
// an L2 cache policy for the lines it reads (kL2Evict*).
template <bool HINT = false>
__device__ __forceinline__ void tma_load_2d(std::uint32_t dst, const CUtensorMap* map, int c0, int c1,
                                            std::uint32_t bar, std::uint64_t policy = 0) {
  const auto m = reinterpret_cast<std::uint64_t>(map);
  if constexpr (!HINT)
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
            dst),
        "l"(m), "r"(c0), "r"(c1), "r"(bar)
        : "memory");
  else
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst), "l"(m), "r"(c0), "r"(c1), "r"(bar), "l"(policy)
                 : "memory");
}

// Asks L2 for a box of a tensor map (no shared memory, no completion): the copy that later
// reads it finds it there.
__device__ __forceinline__ void prefetch_l2(const CUtensorMap* map, int c0, int c1) {
  asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];\n" ::"l"(reinterpret_cast<std::uint64_t>(map)),
               "r"(c0), "r"(c1)
               : "memory");
}

// 2-CTA clusters (the paired expert kernels): rank in the cluster, a cluster-wide barrier of
// all threads, an arrive on the same mbarrier of the peer CTA, and a TMA box multicast into the
// same offset of every CTA in `mask` (each CTA's `bar` at that offset gets the bytes).
__device__ __forceinline__ int cluster_rank() {
  int r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// The same mbarrier (same offset) in CTA `peer` of the cluster.
__device__ __forceinline__ void mbar_arrive_peer(std::uint32_t bar, int peer) {
  std::uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(bar), "r"(peer));
  // Default (CTA-scope) release, as for a local arrive: a cluster-scope release would first wait
  // for this thread's outstanding global stores (the epilogue's) to become visible to the peer.
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}
// tma_load_2d into the same offset of every CTA in `mask`, completing on each one's `bar`.
template <bool HINT = false>
__device__ __forceinline__ void tma_load_2d_multicast(std::uint32_t dst, const CUtensorMap* map, int c0, int c1,
                                                      std::uint32_t bar, std::uint16_t mask, std::uint64_t policy = 0) {
  const auto m = reinterpret_cast<std::uint64_t>(map);
  if constexpr (!HINT)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst), "l"(m), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
                 : "memory");
  else
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 ".L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5, %6;\n" ::"r"(dst), "l"(m), "r"(c0), "r"(c1),
                 "r"(bar), "h"(mask), "l"(policy)
                 : "memory");
}

// D (64 x 256, fp32) (+)= A (64 x 16, smem) * B (256 x 16, smem)^T; scale_d = 0 overwrites D.
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], std::uint64_t da, std::uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,"
      "%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
      "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,"
      "%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,"
      "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,"
      "%120,%121,%122,%123,%124,%125,%126,%127}, "
      "%128, %129, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db), "r"(scale_d));
}

// D (64 x 256, fp32) (+)= A (64 x 32, e4m3, smem) * B (256 x 32, e4m3, smem)^T; both K-major (FP8
// wgmma has no transpose); scale_d = 0 overwrites D.
__device__ __forceinline__ void wgmma_m64n256k32_e4m3(float (&d)[128], std::uint64_t da, std::uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {"
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,"
      "%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
      "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,"
      "%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,"
      "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,"
      "%120,%121,%122,%123,%124,%125,%126,%127"
      "}, "
      "%128, %129, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db), "r"(scale_d));
}

// The ring's mbarriers made by thread 0 (full: the producer's one arrival plus the bytes; empty:
// the consumer threads, or with PAIR the consumer warps of both CTAs), then a barrier over the
// CTA, or over the cluster so that the peer's barriers exist before anything arrives on them.
template <int STAGES, bool PAIR>
__device__ __forceinline__ void init_ring(std::uint32_t full, std::uint32_t empty) {
  if (threadIdx.x == 0) {
    for (int i = 0; i < STAGES; ++i) {
      mbar_init(full + 8 * i, 1);
      mbar_init(empty + 8 * i, PAIR ? 2 * 8 : 2 * 128);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if constexpr (PAIR)
    cluster_sync();
  else
    __syncthreads();
}

// A consumer warp hands a ring stage back: to its own CTA's empty barrier, and with PAIR (2-CTA
// clusters whose weight box is multicast into both) to the peer's as well, once per warp.
template <bool PAIR>
__device__ __forceinline__ void release_stage(std::uint32_t empty, int stage, int lane, int rank) {
  if constexpr (PAIR) {
    __syncwarp();
    if (lane == 0) {
      mbar_arrive(empty + 8 * stage);
      mbar_arrive_peer(empty + 8 * stage, rank ^ 1);
    }
  } else {
    mbar_arrive(empty + 8 * stage);
  }
}

// One K step of a consumer: wait for ring step s's stage, issue its BK / 16 MMAs, commit.
// FP8: BK e4m3 elements per step (the same bytes per row as BK / 2 bf16), BK / 32 MMAs of k32.
template <int STAGES, int STAGE_BYTES, int A_STAGE, int BK, bool FP8 = false>
__device__ __forceinline__ void issue_step(float (&acc)[128], int s, bool first, std::uint32_t full,
                                           std::uint32_t base, int wg) {
  const int stage = s % STAGES;
  mbar_wait(full + 8 * stage, (s / STAGES) & 1);
  fence_acc(acc);
  wgmma_fence();
  const std::uint64_t da = desc_sw128(base + stage * STAGE_BYTES + wg * 64 * 128);
  const std::uint64_t db = desc_sw128(base + stage * STAGE_BYTES + A_STAGE);
  if constexpr (FP8) {
#pragma unroll
    for (int kk = 0; kk < BK / 32; ++kk)  // 32 e4m3 = 32 bytes along K = +2 in the address field
      wgmma_m64n256k32_e4m3(acc, da + 2 * kk, db + 2 * kk, !first || kk > 0);
  } else {
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)  // +32 bytes along K = +2 in the descriptor's address field
      wgmma_m64n256k16(acc, da + 2 * kk, db + 2 * kk, !first || kk > 0);
  }
  wgmma_commit();
}

// The rest of a tile from K step `from` on (the steps before it issued, all but the last one
// released): per step wait, issue, release the previous step's stage; then the tile's last.
template <int STAGES, int STAGE_BYTES, int A_STAGE, int BK, bool FP8 = false, class Release>
__device__ __forceinline__ void finish_tile(float (&acc)[128], int& s, int from, int ksteps, std::uint32_t full,
                                            std::uint32_t base, int wg, const Release& release) {
  for (int ks = from; ks < ksteps; ++ks, ++s) {
    issue_step<STAGES, STAGE_BYTES, A_STAGE, BK, FP8>(acc, s, false, full, base, wg);
    wgmma_wait<1>();
    release((s - 1) % STAGES);  // step s - 1's MMAs are complete
  }
  wgmma_wait<0>();
  release((s - 1) % STAGES);  // the tile's last step
  fence_acc(acc);
}

// One consumer warpgroup's share of a tile (its 64 rows of A at wg * 64, the 256-wide B box after
// A_STAGE): per K step wait for the stage, issue BK / 16 wgmma, release the previous step's stage
// once its MMAs are complete; the tile's last stage after the final wait. `s` counts ring steps.
template <int STAGES, int STAGE_BYTES, int A_STAGE, int BK, bool FP8 = false, class Release>
__device__ __forceinline__ void consume_tile(float (&acc)[128], int& s, int ksteps, std::uint32_t full,
                                             std::uint32_t base, int wg, const Release& release) {
  for (int ks = 0; ks < ksteps; ++ks, ++s) {
    issue_step<STAGES, STAGE_BYTES, A_STAGE, BK, FP8>(acc, s, ks == 0, full, base, wg);
    wgmma_wait<1>();
    if (ks > 0) release((s - 1) % STAGES);  // step s - 1's MMAs are complete
  }
  wgmma_wait<0>();
  release((s - 1) % STAGES);  // the tile's last step
  fence_acc(acc);
}

// consume_tile with a hook run while the tile's MMAs are in flight, in PIECES parts: the first
// AHEAD + 1 K steps are issued back to back (their stages held), then hook.template
// operator()<0>() runs, then part q after one more step is issued (q = 1 .. PIECES - 1), then the
// loop goes on as consume_tile's. The hook must not touch acc (the deferred epilogue of the
// previous tile, from registers of its own); it is outside the loop, so its registers are free
// during the loop. In parts, every part has MMAs queued behind it (one long part can outlast the
// three steps before it).
template <int STAGES, int STAGE_BYTES, int A_STAGE, int BK, int AHEAD, int PIECES, bool FP8 = false, class Release,
          class Hook>
__device__ __forceinline__ void consume_tile_hooked(float (&acc)[128], int& s, int ksteps, std::uint32_t full,
                                                    std::uint32_t base, int wg, const Release& release,
                                                    const Hook& hook) {
  static_assert(AHEAD + 1 < STAGES, "the producer needs a free stage while the hook runs");
  const int s0 = s, head = ksteps < AHEAD + 1 ? ksteps : AHEAD + 1;
#pragma unroll
  for (int ks = 0; ks < AHEAD + 1; ++ks)
    if (ks < head) issue_step<STAGES, STAGE_BYTES, A_STAGE, BK, FP8>(acc, s0 + ks, ks == 0, full, base, wg);
  s = s0 + head;
  hook.template operator()<0>();
  wgmma_wait<1>();
  for (int r = s0; r < s - 1; ++r) release(r % STAGES);  // all but the last issued step are complete
  [&]<int... Q>(std::integer_sequence<int, Q...>) {
    (
        [&] {
          if (s - s0 < ksteps) {
            issue_step<STAGES, STAGE_BYTES, A_STAGE, BK, FP8>(acc, s, false, full, base, wg);
            ++s;
            wgmma_wait<1>();
            release((s - 2) % STAGES);
          }
          hook.template operator()<Q + 1>();
        }(),
        ...);
  }(std::make_integer_sequence<int, PIECES - 1>{});
  finish_tile<STAGES, STAGE_BYTES, A_STAGE, BK, FP8>(acc, s, s - s0, ksteps, full, base, wg, release);
}

// A consumer with no rows in a tile hands its stages straight back (waiting on `full` keeps the
// releases in phase).
template <int STAGES, class Release>
__device__ __forceinline__ void skip_tile(int& s, int ksteps, std::uint32_t full, const Release& release) {
  for (int ks = 0; ks < ksteps; ++ks, ++s) {
    mbar_wait(full + 8 * (s % STAGES), (s / STAGES) & 1);
    release(s % STAGES);
  }
}

// Named barrier 2 + g of one of two consumer warpgroups (128 threads; immediate ids so ptxas reserves
// only these).
__device__ __forceinline__ void consumer_pair_sync(int g) {
  if (g == 0)
    asm volatile("bar.sync 2, 128;\n" ::: "memory");
  else
    asm volatile("bar.sync 3, 128;\n" ::: "memory");
}

// Named barrier ID over N threads: wait at it, or arrive without waiting (the FP8 kernels'
// warpgroup schedules: one warpgroup arrives, the other waits).
template <int ID, int N>
__device__ __forceinline__ void named_sync() {
  asm volatile("bar.sync %0, %1;\n" ::"n"(ID), "n"(N) : "memory");
}
template <int ID, int N>
__device__ __forceinline__ void named_arrive() {
  asm volatile("bar.arrive %0, %1;\n" ::"n"(ID), "n"(N) : "memory");
}

// Staggered consumer warpgroups (StdGroupedVariant::staggered): warpgroup 1 waits at barrier 5
// from its start until warpgroup 0 lets it go, once (after issuing its first MMAs, or having none).
struct Stagger {
  bool lead;
  __device__ __forceinline__ Stagger(bool on, int wg) : lead(on && wg == 0) {
    if (on && wg == 1) named_sync<5, 256>();
  }
  __device__ __forceinline__ void let_go() {
    if (lead) named_arrive<5, 256>();
    lead = false;
  }
};

// The staged epilogue's two moves: a bf16 pair into the staging buffer, and a 16-byte chunk of a
// staged row back out.
__device__ __forceinline__ void st_shared_b32(std::uint32_t addr, std::uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void st_shared_bf16x2(std::uint32_t addr, __nv_bfloat162 v) {
  st_shared_b32(addr, *reinterpret_cast<const std::uint32_t*>(&v));
}
__device__ __forceinline__ uint4 ld_shared_v4(std::uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
#endif  // LB_WGMMA

}  // namespace layerbench::moe::cuda::sm90
