// FP8 expert MLPs on the CUDA backend (moe/standard/std_fp8_experts.hpp): moe/hopper's grouped
// TMA + wgmma e4m3 kernels, tile lists built on the device from the counts.
//   fp8-rowwise  rows quantized one scale per row; gate/up with the activation (bf16 act);
//                the act quantized one scale per row; down (fp8_grouped_sm90.cuh).
//   fp8-block    rows quantized 1 x 128; gate/up with the activation quantized 1 x 128 in its
//                epilogue; down (fp8_block_sm90.cuh: promotion every 128 K elements).
#include "collectives/cuda_internal.hpp"
#include "collectives/error.hpp"
#include "moe/hopper/fp8_block_sm90.cuh"
#include "moe/hopper/fp8_grouped_sm90.cuh"
#include "moe/hopper/std_grouped_sm90.cuh"
#include "moe/standard/std_fp8_experts.hpp"

#include <cuda_bf16.h>

#include <algorithm>
#include <string>

namespace layerbench::moe {

namespace {

using bf16 = __nv_bfloat16;
std::int64_t groups_of(std::int64_t n) { return (n + fp8::kBlock - 1) / fp8::kBlock; }

// The grouped kernels' limits (moe/hopper).
std::string grouped_unsupported(const Fp8ExpertShape& s) {
  if (s.precision == ExpertPrecision::act) return "not an FP8 recipe";
  if (s.activation.kind != Activation::silu_glu && s.activation.kind != Activation::swiglu_clamped)
    return "the FP8 kernels' fused epilogue has SiLU-GLU and clamped SwiGLU only";
  if (s.rows_cap >= (std::int64_t{1} << 31)) return std::to_string(s.rows_cap) + " rows: the kernels count rows in 32 bits";
  return s.precision == ExpertPrecision::fp8_block
             ? cuda::fp8_block_unsupported(s.hidden, s.inter, s.experts, std::max<std::int64_t>(s.rows_cap, 1))
             : cuda::fp8_grouped_unsupported(s.hidden, s.inter, s.experts);
}

class CudaFp8Experts final : public Fp8Experts {
 public:
  CudaFp8Experts(Device& dev, const Fp8ExpertShape& s) : dev_(dev), s_(s) {
    const std::string why = grouped_unsupported(s);
    if (!why.empty()) throw UsageError("FP8 experts (" + std::string(to_string(s.precision)) + "): " + why);
    const std::int64_t E = s.experts, H = s.hidden, I = s.inter, R = std::max<std::int64_t>(s.rows_cap, 1);
    const bool block = s.precision == ExpertPrecision::fp8_block;
    auto alloc = [&](std::int64_t bytes) { return dev_.alloc(static_cast<std::size_t>(std::max<std::int64_t>(bytes, 256))); };
    w13_q_ = alloc(E * 2 * I * H);
    wd_q_ = alloc(E * H * I);
    w13_s_ = alloc(4 * (block ? 2 * E * groups_of(I) * groups_of(H) : E * 2 * I));
    wd_s_ = alloc(4 * (block ? E * groups_of(H) * groups_of(I) : E * H) + 8);
    x_q_ = alloc(R * H);
    x_s_ = alloc(4 * R * (block ? groups_of(H) : 1));
    a_q_ = alloc(R * I);
    a_s_ = alloc(4 * R * (block ? groups_of(I) : 1));
    counts_ = alloc(4 * E);
    work_ = alloc(block ? cuda::fp8_block_work_bytes(R, E, H, I) : cuda::std_grouped_work_bytes(R, E, H, I));
  }

  void set_weights(const void* w13, const void* wd, Stream s) override {
    const auto st = detail::cuda_stream(s);
    const std::int64_t E = s_.experts, H = s_.hidden, I = s_.inter;
    if (s_.precision == ExpertPrecision::fp8_block) {
      cuda::fp8_quantize_128x128(static_cast<const bf16*>(w13), 2 * E, I, H, w13_q_.as<std::uint8_t>(),
                                 w13_s_.as<float>(), st);
      cuda::fp8_quantize_128x128(static_cast<const bf16*>(wd), E, H, I, wd_q_.as<std::uint8_t>(), wd_s_.as<float>(), st);
    } else {
      cuda::fp8_quantize_rows(static_cast<const bf16*>(w13), E * 2 * I, H, w13_q_.as<std::uint8_t>(),
                              w13_s_.as<float>(), st);
      cuda::fp8_quantize_rows(static_cast<const bf16*>(wd), E * H, I, wd_q_.as<std::uint8_t>(), wd_s_.as<float>(), st);
    }
  }

  void mlp(const void* x, void* act, void* y, const std::vector<std::int64_t>& rows, Stream s) override {
    LB_CHECK(static_cast<std::int64_t>(rows.size()) == s_.experts, "one row count per expert");
    std::int64_t R = 0;
    host_counts_.resize(rows.size());
    for (std::size_t e = 0; e < rows.size(); ++e) {
      R += rows[e];
      host_counts_[e] = static_cast<std::int32_t>(rows[e]);
    }
    if (R == 0) return;
    // The host path's counts are known here; the kernels read them from the device (uploaded only
    // when they change: the loads of one input repeat, as ExpertPaths::wgmma does).
    if (host_counts_ != uploaded_) {
      LB_CUDA_CHECK(cudaMemcpyAsync(counts_.data(), host_counts_.data(), host_counts_.size() * 4,
                                    cudaMemcpyHostToDevice, detail::cuda_stream(s)));
      uploaded_ = host_counts_;
    }
    mlp_on_device(x, act, y, counts_.as<std::int32_t>(), R, s);
  }

  void mlp_on_device(const void* x, void* act, void* y, const std::int32_t* counts, std::int64_t rows,
                     Stream s) override {
    if (rows == 0) return;
    LB_CHECK(rows <= s_.rows_cap, "at most rows_cap rows");
    const auto st = detail::cuda_stream(s);
    const std::int64_t E = s_.experts, H = s_.hidden, I = s_.inter;
    auto* xq = x_q_.as<std::uint8_t>();
    auto* aq = a_q_.as<std::uint8_t>();
    if (s_.precision == ExpertPrecision::fp8_block) {
      const auto w = cuda::fp8_block_work(work_.data(), rows, E, H, I);
      cuda::fp8_quantize_1x128(static_cast<const bf16*>(x), rows, H, xq, x_s_.as<float>(), st);
      cuda::fp8_block_tiles(counts, E, H, I, w, st);
      cuda::fp8_block_gate_up_sm90(xq, x_s_.as<float>(), rows, H, w13_q_.as<std::uint8_t>(), w13_s_.as<float>(), E, I,
                                   nullptr, aq, a_s_.as<float>(), w.gu, w.gu_max, w.live, s_.activation, st);
      cuda::fp8_block_down_sm90(aq, a_s_.as<float>(), rows, I, wd_q_.as<std::uint8_t>(), wd_s_.as<float>(), E, H,
                                static_cast<bf16*>(y), w.dn, w.dn_max, w.live + 1, st);
    } else {
      const auto w = cuda::std_grouped_work(work_.data(), rows, E, H, I);
      cuda::fp8_quantize_rows(static_cast<const bf16*>(x), rows, H, xq, x_s_.as<float>(), st);
      cuda::std_grouped_tiles(counts, E, cuda::std_gate_up_blocks(I), cuda::std_down_blocks(H), w.gu, w.gu_max, w.dn,
                              w.dn_max, w.live, st);
      cuda::fp8_gate_up_sm90(xq, x_s_.as<float>(), rows, H, w13_q_.as<std::uint8_t>(), w13_s_.as<float>(), E, I,
                             static_cast<bf16*>(act), w.gu, w.gu_max, w.live, s_.activation, st);
      cuda::fp8_quantize_rows(static_cast<const bf16*>(act), rows, I, aq, a_s_.as<float>(), st);
      cuda::fp8_down_sm90(aq, a_s_.as<float>(), rows, I, wd_q_.as<std::uint8_t>(), wd_s_.as<float>(), E, H,
                          static_cast<bf16*>(y), w.dn, w.dn_max, w.live + 1, st);
    }
  }

  bool takes_device_counts() const override { return true; }

  std::string path() const override {
    if (s_.precision == ExpertPrecision::fp8_block)
      return "fp8-block: rows quantized 1x128 on the device (e4m3, fp32 scales), tile lists built on the device, "
             "one persistent TMA + wgmma e4m3 grouped GEMM per projection with 128x128 weight blocks and promotion "
             "every 128 K (the activation and its 1x128 quantization in the gate/up epilogue)";
    return "fp8-rowwise: rows quantized one scale per row on the device, tile lists built on the device, one "
           "persistent TMA + wgmma e4m3 grouped GEMM per projection with per-channel weight scales (the activation "
           "in the gate/up epilogue), the activation quantized per row between them";
  }

 private:
  Device& dev_;
  Fp8ExpertShape s_;
  Buffer w13_q_, w13_s_, wd_q_, wd_s_, x_q_, x_s_, a_q_, a_s_, counts_, work_;
  std::vector<std::int32_t> host_counts_, uploaded_;  // this call's counts, and those counts_ holds
};

}  // namespace

std::string cuda_fp8_experts_unsupported(const Fp8ExpertShape& s) {
  const std::string grouped = grouped_unsupported(s);
  if (grouped.empty()) return "";
  const std::string lt = lt_fp8_experts_unsupported(s);
  return lt.empty() ? "" : grouped + "; " + lt;
}

std::unique_ptr<Fp8Experts> make_cuda_fp8_experts(Device& dev, const Fp8ExpertShape& shape) {
  if (grouped_unsupported(shape).empty()) return std::make_unique<CudaFp8Experts>(dev, shape);
  return make_lt_fp8_experts(dev, shape);  // throws UsageError where neither takes the shape
}

}  // namespace layerbench::moe
