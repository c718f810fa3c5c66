// CUDA implementation of the MoE primitives: bf16 activations and weights; cuBLAS for the dense
// GEMMs. Experts (--expert-gemm):
//   device    (auto on compute capability 9.0 when both Hopper kernels apply) the device-side
//             schedule: tiles built on the device from the counts, our gate/up + SwiGLU7 kernel
//             reading its rows straight from the tokens and our down kernel over them; no host
//             synchronisation, so the layer can be a CUDA graph;
//   device-wide the same with the gate/up kernel over 192-row tiles (three consumer warpgroups:
//             a third fewer weight streams per expert; the down kernel keeps 128-row tiles);
//   device-pairs the same with the tiles paired per expert and both kernels in 2-CTA clusters
//             that share each weight stage (TMA multicast);
//   fused     (auto on compute capability 9.0 when 64 <= d_head <= 256 and d, I are multiples
//             of 8) our gate/up GEMM with SwiGLU7 in its epilogue
//             over 128-row expert tiles, one launch (moe/hopper/expert_gemm_sm90.cu: TMA + wgmma on
//             Hopper; moe/magi2/expert_gemm.cu: mma.sync elsewhere, or with fused-mma), then cuBLAS
//             batched down GEMMs over load buckets;
//   fused-down the same with our Hopper down kernel too (moe/hopper/expert_down_sm90.cu; memory-bound,
//             measured no faster than cuBLAS, so opt-in);
//   bucketed  (auto elsewhere) cuBLAS batched gate/up and down GEMMs over experts of similar
//             load (one call per bucket, padded to its largest count) and a SwiGLU7 pass.
// (A capacity-padded strided-batched path and a cuBLAS grouped-batched path were measured
// slowest on 2xH200 and removed.)
// Routing: the fused router kernel (moe/magi2/router_kernels.cu) where it applies (256 experts, d_head
// a multiple of 32), else fp32 logits by cuBLAS SGEMM and a top-k kernel.
// Routing result, permutation, expert intermediates and the kernels' K-major weight copies
// live in this object's workspace.
#include "collectives/cuda_internal.hpp"
#include "collectives/error.hpp"
#include "moe/magi2/cuda_kernels.cuh"
#include "moe/expert_buckets.hpp"
#include "moe/magi2/ops.hpp"

#include <cublas_v2.h>
#include <cub/cub.cuh>

#include <algorithm>

namespace layerbench::moe {

namespace {

using cuda::bf16;

class CudaOps final : public Ops {
 public:
  CudaOps(Device& dev, ExpertPath path)
      : dev_(dev),
        auto_(path == ExpertPath::automatic),
        device_(path == ExpertPath::device || path == ExpertPath::device_wide || path == ExpertPath::device_pairs),
        pairs_(path == ExpertPath::device_pairs),
        wide_(path == ExpertPath::device_wide),
        fused_(path == ExpertPath::fused || path == ExpertPath::fused_down || path == ExpertPath::fused_mma),
        own_down_(path == ExpertPath::fused_down),
        force_mma_(path == ExpertPath::fused_mma),
        dense_(make_cuda_dense_ops(dev)) {
    LB_CUBLAS_CHECK(cublasCreate(&blas_));
    LB_CUDA_CHECK(cudaMallocHost(&host_counts_, sizeof(int) * kMaxExperts));
    LB_CUDA_CHECK(cudaMallocHost(&host_base_, sizeof(std::int64_t) * kMaxExperts));
  }
  ~CudaOps() override {
    cudaDeviceSynchronize();  // queued copies may still read the pinned tables freed below
    cublasDestroy(blas_);
    cudaFreeHost(host_counts_);
    cudaFreeHost(host_base_);
    if (host_ptrs_) cudaFreeHost(host_ptrs_);
    if (host_tiles_) cudaFreeHost(host_tiles_);
  }
  DType act() const override { return DType::bf16; }
  // The expert path of the last experts() call (it depends on the device and d_head), else
  // the mode's.
  std::string describe() const override {
    if (!last_path_.empty()) return "cuda bf16, experts: " + last_path_;
    return device_  ? "cuda bf16, experts: device-side schedule, Hopper gate/up and down kernels"
           : auto_  ? "cuda bf16, experts: device-side schedule with the Hopper kernels on compute capability 9.0 "
                      "(else cuBLAS buckets)"
           : fused_ ? "cuda bf16, experts: fused gate/up GEMM + SwiGLU7 kernel"
                    : "cuda bf16, cuBLAS batched expert GEMMs over load buckets";
  }

  std::string route_path(std::int64_t experts, std::int64_t d, std::int64_t k) const override {
    return cuda::fused_route_supported(experts, d, k)
               ? "fused router kernel (tensor-core logits, sigmoid, top-k, normalise)"
               : "cuBLAS SGEMM fp32 logits + top-k kernel (fallback: the fused router needs 256 experts)";
  }

  void fill(void* dst, DType t, const SeededSlice& f, Stream s) override { dense_->fill(dst, t, f, s); }
  void linear(const void* a, const void* w, void* c, const GemmShape& g, bool accumulate, Stream s) override {
    dense_->linear(a, w, c, g, accumulate, s);
  }
  void add(const void* x, const void* y, void* out, std::int64_t n, Stream s) override { dense_->add(x, y, out, n, s); }
  void rms_norm(const void* x, const float* w, void* y, std::span<const Segment> segs,
                std::int64_t h, Stream s) override {
    for (const auto& g : segs)  // one launch per modality run (few per rank)
      cuda::rms_norm(static_cast<const bf16*>(x) + g.begin * h, w + g.modality * h,
                     static_cast<bf16*>(y) + g.begin * h, g.count, h, detail::cuda_stream(s));
  }
  void swiglu_packed(const void* in, void* out, std::int64_t m, std::int64_t n, Stream s) override {
    cuda::swiglu_packed(static_cast<const bf16*>(in), static_cast<bf16*>(out), m, n, detail::cuda_stream(s));
  }
  void transpose_blocks(const void* in, void* out, std::int64_t a, std::int64_t b, std::int64_t w,
                        Stream s) override {
    cuda::transpose_blocks(static_cast<const bf16*>(in), static_cast<bf16*>(out), a, b, w, detail::cuda_stream(s));
  }
  void route(const RoutedArgs& r, Stream s) override {
    cudaStream_t st = detail::cuda_stream(s);
    const std::int64_t T = r.tokens, hv = r.heads_valid, E = r.experts, d = r.d, k = r.topk;
    const std::int64_t A = T * hv * k;
    ensure(idx_, A * 4);
    ensure(prob_, A * 4);
    ensure(vals_, A * 4);
    routed_ = r;
    if (cuda::fused_route_supported(E, d, k)) {
      // One kernel: fp32-accurate logits on the tensor cores, sigmoid, top-k, normalise, scale.
      derive(gate_split_, r.gate, r, cuda::router_gate_split_elems(hv, d), [&](const void* w, bf16* out, std::int64_t) {
        cuda::prepare_router_gate(static_cast<const float*>(w), out, hv, E, d, st);
      });
      cuda::fused_route(static_cast<const bf16*>(r.x), r.heads_local, gate_split_.buf.as<bf16>(), r.bias, idx_.as<int>(),
                        prob_.as<float>(), vals_.as<int>(), T, hv, E, d, k, r.scale, st);
      return;
    }
    ensure(xf_, T * r.heads_local * d * 4);
    ensure(logits_, hv * T * E * 4);
    cuda::route_sgemm(static_cast<const bf16*>(r.x), r.heads_local, r.gate, r.bias, xf_.as<float>(), logits_.as<float>(),
                      idx_.as<int>(), prob_.as<float>(), vals_.as<int>(), T, hv, E, d, k, r.scale, blas_, st);
  }

  void experts(const RoutedArgs& r, Stream s) override {
    cudaStream_t st = detail::cuda_stream(s);
    const std::int64_t T = r.tokens, hv = r.heads_valid, E = r.experts, d = r.d, k = r.topk,
                       I = r.inter;
    const std::int64_t A = T * hv * k, G = hv * E;
    LB_CHECK(G <= kMaxExperts, "too many local experts");
    // 1. Stable sort of the assignments by local expert (deterministic order inside a bucket).
    ensure(keys_sorted_, A * 4);
    ensure(vals_sorted_, A * 4);
    ensure(counts_, G * 4);
    ensure(offsets_, G * 4);
    ensure(inv_, A * 4);
    int end_bit = 1;
    while ((std::int64_t{1} << end_bit) < G) ++end_bit;
    std::size_t tmp_bytes = 0, scan_bytes = 0;
    LB_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, tmp_bytes, idx_.as<int>(), keys_sorted_.as<int>(),
                                                  vals_.as<int>(), vals_sorted_.as<int>(), int(A), 0, end_bit, st));
    LB_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, counts_.as<int>(), offsets_.as<int>(), int(G), st));
    ensure(cub_tmp_, static_cast<std::int64_t>(std::max(tmp_bytes, scan_bytes)));
    LB_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(cub_tmp_.data(), tmp_bytes, idx_.as<int>(), keys_sorted_.as<int>(),
                                                  vals_.as<int>(), vals_sorted_.as<int>(), int(A), 0, end_bit, st));
    LB_CUDA_CHECK(cudaMemsetAsync(counts_.data(), 0, G * 4, st));
    cuda::histogram(keys_sorted_.as<int>(), counts_.as<int>(), A, st);
    scan_bytes = cub_tmp_.bytes();
    LB_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(cub_tmp_.data(), scan_bytes, counts_.as<int>(), offsets_.as<int>(), int(G), st));
    if (device_schedule(d, I)) {
      device_experts(r, st);
      return;
    }
    // 2. Per-expert counts to the host: the GEMM shapes depend on them (one small D2H + sync,
    //    as a framework's grouped GEMM launch needs too).
    LB_CUDA_CHECK(cudaMemcpyAsync(host_counts_, counts_.data(), G * 4, cudaMemcpyDeviceToHost, st));
    dev_.synchronize(s);  // watched: polls NCCL errors (a dispatch may be queued ahead of this)
    ++host_syncs_;
    const std::int64_t rows = plan_buckets(G);
    ensure(xs_, rows * d * 2);       // (rows, d)    expert-major inputs
    // The fused gate/up kernels keep a (128, d) input tile in shared memory: d <= 256. `auto`
    // takes the Hopper kernels where they apply and cuBLAS buckets elsewhere.
    const bool sm90_gate_up = cuda::gate_up_swiglu_sm90_supported(d, I);
    fuse_now_ = (fused_ || (auto_ && sm90_gate_up)) && d <= cuda::gate_up_swiglu_max_d();
    sm90_now_ = fuse_now_ && !force_mma_ && sm90_gate_up;
    down_now_ = sm90_now_ && own_down_ && cuda::down_sm90_supported(d, I);
    if (sm90_now_) prepare_w13k(r, st);
    if (down_now_) prepare_wdk(r, st);
    last_path_ = !fuse_now_ ? "cuBLAS batched gate/up and down GEMMs over load buckets, SwiGLU7 pass"
                              : std::string(sm90_now_ ? "wgmma (sm_90a) " : "mma.sync ") +
                                    "fused gate/up GEMM + SwiGLU7 over 128-row expert tiles; " +
                                    (down_now_ ? "wgmma (sm_90a) down GEMM over the same tiles"
                                               : "cuBLAS batched down GEMMs over load buckets");
    if (!fuse_now_) ensure(h13_, rows * 2 * I * 2);  // (rows, 2I)   [gate | up]
    ensure(act_, rows * I * 2);      // (rows, I)
    ensure(yd_, rows * d * 2);       // (rows, d)
    ensure(base_, G * 8);
    LB_CUDA_CHECK(cudaMemcpyAsync(base_.data(), host_base_, G * 8, cudaMemcpyHostToDevice, st));
    cuda::gather(static_cast<const bf16*>(r.x), keys_sorted_.as<int>(), vals_sorted_.as<int>(),
                 offsets_.as<int>(), xs_.as<bf16>(), inv_.as<int>(), A, r.heads_local, hv, k, d, 0,
                 base_.as<std::int64_t>(), st);
    LB_CUBLAS_CHECK(cublasSetStream(blas_, st));
    bucketed_gemms(r, rows, st);
    // 4. y(t, h) = sum_j p_j * yd[inv(t, h, j)], fixed j order.
    cuda::combine(yd_.as<bf16>(), inv_.as<int>(), prob_.as<float>(), static_cast<bf16*>(r.y), T,
                  r.heads_local, hv, k, d, st);
  }

  void weights_changed() override {
    w13k_.src = nullptr;
    wdk_.src = nullptr;
    gate_split_.src = nullptr;
  }

  std::vector<std::int64_t> expert_counts(const RoutedArgs& r) override {
    experts(r, dev_.compute_stream());
    const auto c = dev_.download<int>(counts_.data(), static_cast<std::size_t>(r.heads_valid * r.experts));
    return {c.begin(), c.end()};
  }

  std::int64_t host_syncs() const override { return host_syncs_; }

 private:
  static constexpr std::int64_t kMaxExperts = 1 << 16;

  void ensure(Buffer& b, std::int64_t bytes) {
    if (static_cast<std::int64_t>(b.bytes()) >= bytes) return;
    dev_.synchronize_all();  // the old buffer may still be in use on a stream (first calls only)
    ++host_syncs_;
    b = dev_.alloc(static_cast<std::size_t>(std::max<std::int64_t>(bytes, 256)));
  }

  // The device-side schedule: `device` / `device-pairs`, and `auto` on compute capability 9.0
  // where both Hopper kernels apply.
  bool device_schedule(std::int64_t d, std::int64_t I) const {
    if (!device_ && !auto_) return false;
    const bool ok = cuda::gate_up_swiglu_sm90_supported(d, I) && cuda::down_sm90_supported(d, I) &&
                    d <= cuda::gate_up_swiglu_max_d();
    LB_CHECK(ok || !device_, "--expert-gemm device needs a compute capability 9.0 device, 64 <= d_head <= 256, "
                             "I >= 64, d and I multiples of 8");
    return ok;
  }

  // 2'-4'. After the sort, counts and offsets: tiles built on the device from the counts, our
  // gate/up + SwiGLU7 kernel reading its rows straight from x (no expert-major copy) and our
  // down kernel over that list (launched over its upper bound; empty entries are skipped), the
  // combine. Every shape the host needs (rows = assignments, the tile bound) is known without
  // the counts: no host read, so the layer can be captured in a CUDA graph.
  void device_experts(const RoutedArgs& r, cudaStream_t st) {
    const std::int64_t T = r.tokens, hv = r.heads_valid, d = r.d, k = r.topk, I = r.inter;
    const std::int64_t A = T * hv * k, G = hv * r.experts, max_tiles = cuda::max_expert_tiles(A, G);
    const std::int64_t gu_rows = wide_ ? kWideTileRows : kExpertTileRows;
    const std::int64_t max_wide = wide_ ? cuda::max_expert_tiles(A, G, gu_rows) : 0;
    ensure(tiles_, max_tiles * static_cast<std::int64_t>(sizeof(cuda::ExpertTile)));
    if (wide_) ensure(wide_tiles_, max_wide * static_cast<std::int64_t>(sizeof(cuda::ExpertTile)));
    ensure(n_live_, 4);
    ensure(act_, A * I * 2);
    ensure(yd_, A * d * 2);
    prepare_w13k(r, st);
    prepare_wdk(r, st);
    last_path_ = std::string("device-side schedule (tiles built on the device, no host read); wgmma (sm_90a) fused ") +
                 "gather + gate/up GEMM + SwiGLU7 over " + std::to_string(gu_rows) + "-row and wgmma down GEMM over " +
                 "128-row expert tiles" + (pairs_ ? ", in 2-CTA clusters sharing each weight stage" : "");
    const cuda::WideTiles wide{wide_ ? wide_tiles_.as<cuda::ExpertTile>() : nullptr, max_wide, gu_rows};
    cuda::build_expert_tiles(counts_.as<int>(), offsets_.as<int>(), tiles_.as<cuda::ExpertTile>(), n_live_.as<int>(), G,
                             max_tiles, pairs_, st, wide);
    cuda::invert_permutation(vals_sorted_.as<int>(), inv_.as<int>(), A, st);
    const auto* tl = tiles_.as<cuda::ExpertTile>();
    cuda::gate_up_swiglu_sm90_gathered(static_cast<const bf16*>(r.x), T * r.heads_local, vals_sorted_.as<int>(),
                                       r.heads_local, hv, k, w13k_.buf.as<bf16>(), G, act_.as<bf16>(),
                                       wide_ ? wide.tiles : tl, wide_ ? max_wide : max_tiles, d, I, st, pairs_, {},
                                       gu_rows);
    cuda::down_sm90(act_.as<bf16>(), A, wdk_.buf.as<bf16>(), G, yd_.as<bf16>(), tl, max_tiles, d, I, st,
                    n_live_.as<int>(), pairs_);
    cuda::combine(yd_.as<bf16>(), inv_.as<int>(), prob_.as<float>(), static_cast<bf16*>(r.y), T, r.heads_local, hv, k,
                  d, st);
  }

  // Pinned host table of `nptr` pointers (and its device twin) for batched/grouped GEMM calls.
  // Rewritten only after the previous call's copy finished: experts() synchronises the stream
  // on the counts read-back before any table is rebuilt. This holds while every experts() call
  // of this object uses the same stream (the layer's compute stream).
  const void** pointer_tables(std::size_t nptr) {
    if (host_ptr_cap_ < nptr) {
      if (host_ptrs_) cudaFreeHost(host_ptrs_);
      LB_CUDA_CHECK(cudaMallocHost(&host_ptrs_, nptr * sizeof(void*)));
      host_ptr_cap_ = nptr;
    }
    ensure(dev_ptrs_, static_cast<std::int64_t>(nptr * sizeof(void*)));
    return static_cast<const void**>(host_ptrs_);
  }

  // Experts of similar load share a batched call (moe/expert_buckets.hpp). Fills host_base_
  // (first row of each expert's slot) and plan_; returns the rows needed.
  std::int64_t plan_buckets(std::int64_t G) {
    plan_ = plan_expert_buckets(std::span<const int>(host_counts_, static_cast<std::size_t>(G)));
    std::copy(plan_.base.begin(), plan_.base.end(), host_base_);
    return std::max<std::int64_t>(plan_.rows, 8);
  }

  // 3c. One pair of pointer-array batched GEMMs per bucket (same m, n, k inside a bucket).
  //     Padding rows of a slot hold stale data; each output row depends only on its own input
  //     row and no padding row is ever combined, so they never reach the result.
  void bucketed_gemms(const RoutedArgs& r, std::int64_t rows, cudaStream_t st) {
    const std::int64_t d = r.d, I = r.inter;
    const auto& order = plan_.order;
    const std::size_t ne = order.size();
    if (ne == 0) return;
    if (fuse_now_) upload_tiles(st);
    const std::int64_t G = r.heads_valid * r.experts;
    if (down_now_) {
      // Both GEMMs in our Hopper kernels, one launch each over the 128-row expert tiles.
      cuda::gate_up_swiglu_sm90(xs_.as<bf16>(), rows, w13k_.buf.as<bf16>(), G, act_.as<bf16>(),
                                tiles_.as<cuda::ExpertTile>(), n_tiles_, d, I, st);
      cuda::down_sm90(act_.as<bf16>(), rows, wdk_.buf.as<bf16>(), G, yd_.as<bf16>(), tiles_.as<cuda::ExpertTile>(),
                      n_tiles_, d, I, st);
      return;
    }
    const std::size_t nptr = ne * 6;
    auto** hp = pointer_tables(nptr);
    const auto* w13 = static_cast<const bf16*>(r.w13);
    const auto* wd = static_cast<const bf16*>(r.w_down);
    for (std::size_t i = 0; i < ne; ++i) {
      const std::int64_t e = order[i], b = host_base_[e];
      hp[i] = w13 + e * d * 2 * I;                      // (d, 2I) col-major = W13[e]
      hp[ne + i] = xs_.as<bf16>() + b * d;              // (cap, d) rows of expert e
      hp[2 * ne + i] = fuse_now_ ? nullptr : h13_.as<bf16>() + b * 2 * I;  // (cap, 2I)
      hp[3 * ne + i] = wd + e * I * d;                  // (I, d) = W_down[e]
      hp[4 * ne + i] = act_.as<bf16>() + b * I;         // (cap, I)
      hp[5 * ne + i] = yd_.as<bf16>() + b * d;          // (cap, d)
    }
    LB_CUDA_CHECK(cudaMemcpyAsync(dev_ptrs_.data(), host_ptrs_, nptr * sizeof(void*), cudaMemcpyHostToDevice, st));
    auto** dp = dev_ptrs_.as<void*>();
    const float alpha = 1.0f, beta = 0.0f;
    if (fuse_now_) {
      // Gate/up GEMM and SwiGLU7 in one launch over exact 128-row tiles of every expert.
      if (sm90_now_)
        cuda::gate_up_swiglu_sm90(xs_.as<bf16>(), rows, w13k_.buf.as<bf16>(), G, act_.as<bf16>(),
                                  tiles_.as<cuda::ExpertTile>(), n_tiles_, d, I, st);
      else
        cuda::gate_up_swiglu(xs_.as<bf16>(), w13, act_.as<bf16>(), tiles_.as<cuda::ExpertTile>(), n_tiles_, d, I, st);
    } else {
      for (const auto& bk : plan_.buckets) {
        const int n = static_cast<int>(bk.cap), cnt = static_cast<int>(bk.count);
        LB_CUBLAS_CHECK(cublasGemmBatchedEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, int(2 * I), n, int(d), &alpha,
                                            dp + bk.first, CUDA_R_16BF, int(2 * I), dp + ne + bk.first,
                                            CUDA_R_16BF, int(d), &beta, dp + 2 * ne + bk.first, CUDA_R_16BF,
                                            int(2 * I), cnt, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      }
      cuda::swiglu_split(h13_.as<bf16>(), act_.as<bf16>(), rows, I, nullptr, 0, st);
    }
    for (const auto& bk : plan_.buckets) {
      const int n = static_cast<int>(bk.cap), cnt = static_cast<int>(bk.count);
      LB_CUBLAS_CHECK(cublasGemmBatchedEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, int(d), n, int(I), &alpha,
                                          dp + 3 * ne + bk.first, CUDA_R_16BF, int(d), dp + 4 * ne + bk.first,
                                          CUDA_R_16BF, int(I), &beta, dp + 5 * ne + bk.first, CUDA_R_16BF,
                                          int(d), cnt, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
  }

  // A copy of expert weights in a kernel's own layout (the Hopper kernels' K-major copies,
  // cuda_kernels.cuh), made on the first experts() call after the weights were filled
  // (weights_changed()) or moved. Weights are constant while a layer runs, as in inference, so
  // the copy is not part of the timed work.
  struct DerivedWeights {
    Buffer buf;
    const void* src = nullptr;
    std::int64_t key[3] = {};
  };
  template <class Make>
  void derive(DerivedWeights& w, const void* src, const RoutedArgs& r, std::int64_t elems, Make make) {
    const std::int64_t G = r.heads_valid * r.experts;
    if (w.src == src && w.key[0] == G && w.key[1] == r.d && w.key[2] == r.inter) return;
    ensure(w.buf, elems * 2);
    make(src, w.buf.as<bf16>(), G);
    w.src = src;
    w.key[0] = G;
    w.key[1] = r.d;
    w.key[2] = r.inter;
  }
  void prepare_w13k(const RoutedArgs& r, cudaStream_t st) {
    derive(w13k_, r.w13, r, cuda::w13_kmajor_elems(r.heads_valid * r.experts, r.d, r.inter),
           [&](const void* w, bf16* out, std::int64_t G) {
             cuda::prepare_w13_kmajor(static_cast<const bf16*>(w), out, G, r.d, r.inter, st);
           });
  }
  void prepare_wdk(const RoutedArgs& r, cudaStream_t st) {
    derive(wdk_, r.w_down, r, cuda::wdown_kmajor_elems(r.heads_valid * r.experts, r.inter),
           [&](const void* w, bf16* out, std::int64_t G) {
             cuda::prepare_wdown_kmajor(static_cast<const bf16*>(w), out, G, r.d, r.inter, st);
           });
  }

  // Tile list of the fused gate/up kernel: ceil(count / 128) row tiles per non-empty expert,
  // in bucket order (tiles of one expert are adjacent, so its weights are reused from L2).
  // The pinned table is rewritten only after the previous call's copy finished (experts()
  // synchronises the stream on the counts read-back first; one stream per object, as above).
  void upload_tiles(cudaStream_t st) {
    const std::span<const int> counts(host_counts_, plan_.base.size());
    const std::int64_t n = expert_tile_count(counts, plan_.order);
    if (host_tiles_cap_ < n) {
      if (host_tiles_) cudaFreeHost(host_tiles_);
      LB_CUDA_CHECK(cudaMallocHost(&host_tiles_, static_cast<std::size_t>(n) * sizeof(cuda::ExpertTile)));
      host_tiles_cap_ = n;
    }
    ensure(tiles_, n * static_cast<std::int64_t>(sizeof(cuda::ExpertTile)));
    fill_expert_tiles(counts, plan_.base, plan_.order, std::span<cuda::ExpertTile>(host_tiles_, static_cast<std::size_t>(n)));
    n_tiles_ = n;
    LB_CUDA_CHECK(cudaMemcpyAsync(tiles_.data(), host_tiles_, static_cast<std::size_t>(n) * sizeof(cuda::ExpertTile),
                                  cudaMemcpyHostToDevice, st));
  }

  Device& dev_;
  bool auto_, device_, pairs_, wide_, fused_, own_down_, force_mma_, fuse_now_ = false, sm90_now_ = false,
      down_now_ = false;
  std::unique_ptr<DenseOps> dense_;  // fill, linear, add
  std::int64_t host_syncs_ = 0;
  std::string last_path_;
  DerivedWeights w13k_, wdk_, gate_split_;
  cuda::ExpertTile* host_tiles_ = nullptr;
  std::int64_t host_tiles_cap_ = 0, n_tiles_ = 0;
  std::int64_t* host_base_ = nullptr;
  ExpertBuckets plan_;
  cublasHandle_t blas_ = nullptr;
  int* host_counts_ = nullptr;
  void* host_ptrs_ = nullptr;
  std::size_t host_ptr_cap_ = 0;
  RoutedArgs routed_;
  Buffer xf_, logits_, idx_, prob_, vals_, keys_sorted_, vals_sorted_, counts_, offsets_, inv_,
      cub_tmp_, xs_, h13_, act_, yd_, dev_ptrs_, base_, tiles_, wide_tiles_, n_live_;
};

}  // namespace

std::unique_ptr<Ops> make_cuda_ops(Device& dev, ExpertPath path) {
  LB_CHECK(dev.backend() == Backend::cuda, "cuda ops need the cuda backend");
  return std::make_unique<CudaOps>(dev, path);
}

}  // namespace layerbench::moe
