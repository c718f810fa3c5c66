// The FP8 expert MLPs' fallback on CUDA devices without the Hopper kernels (compute capability 8.9
// or newer, not 9.0: Ada, Blackwell): per expert, cuBLASLt e4m3 GEMMs with the rowwise recipe
// (moe/fp8_lt.hpp), the recipe's own quantizers (moe/fp8_quant.cuh) and the block's GLU kernel:
//   x rows quantized one scale per row (per expert); per expert gate/up = [gate | up] bf16 (rows, 2I) (gate and
//   up rounded to bf16, as every expert path); the GLU into act (bf16); act quantized per row; per
//   expert down into y. The oracle's order of operations (moe/standard/std_fp8_experts.hpp).
// The GEMMs are sized by the host counts (a plan per row count, kept): no device counts, so the
// block's device path (and a CUDA graph of the layer) is not open to it.
#include "collectives/cuda_internal.hpp"
#include "collectives/error.hpp"
#include "moe/fp8_lt.hpp"
#include "moe/fp8_quant.cuh"
#include "moe/standard/std_fp8_experts.hpp"
#include "moe/standard/std_kernels.cuh"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

namespace layerbench::moe {

namespace {

class LtFp8Experts final : public Fp8Experts {
 public:
  LtFp8Experts(Device& dev, const Fp8ExpertShape& s) : dev_(dev), s_(s) {
    const std::string why = lt_fp8_experts_unsupported(s);
    if (!why.empty()) throw UsageError("FP8 experts (" + std::string(to_string(s.precision)) + "): " + why);
    const std::int64_t E = s.experts, H = s.hidden, I = s.inter, R = std::max<std::int64_t>(s.rows_cap, 1);
    auto alloc = [&](std::int64_t bytes) { return dev_.alloc(static_cast<std::size_t>(std::max<std::int64_t>(bytes, 256))); };
    w13_q_ = alloc(E * 2 * I * H);
    wd_q_ = alloc(E * H * I);
    w13_s_ = alloc(4 * E * 2 * I);
    wd_s_ = alloc(4 * E * H);
    x_q_ = alloc(R * H);
    x_s_ = alloc(4 * (R + 4 * E));  // each expert's row scales from a 16-byte boundary (see mlp)
    gu_ = alloc(2 * R * 2 * I);
    a_q_ = alloc(R * I);
    a_s_ = alloc(4 * (R + 4 * E));
  }

  void set_weights(const void* w13, const void* wd, Stream s) override {
    const auto st = detail::cuda_stream(s);
    const std::int64_t E = s_.experts, H = s_.hidden, I = s_.inter;
    cuda::fp8_quantize_rows(static_cast<const __nv_bfloat16*>(w13), E * 2 * I, H, w13_q_.as<std::uint8_t>(),
                            w13_s_.as<float>(), st);
    cuda::fp8_quantize_rows(static_cast<const __nv_bfloat16*>(wd), E * H, I, wd_q_.as<std::uint8_t>(), wd_s_.as<float>(),
                            st);
  }

  void mlp(const void* x, void* act, void* y, const std::vector<std::int64_t>& rows, Stream s) override {
    LB_CHECK(static_cast<std::int64_t>(rows.size()) == s_.experts, "one row count per expert");
    std::int64_t R = 0;
    for (const auto r : rows) R += r;
    if (R == 0) return;
    LB_CHECK(R <= s_.rows_cap, "at most rows_cap rows");
    const auto st = detail::cuda_stream(s);
    const std::int64_t H = s_.hidden, I = s_.inter;
    auto* xq = x_q_.as<std::uint8_t>();
    auto* aq = a_q_.as<std::uint8_t>();
    auto* gu = gu_.as<__nv_bfloat16>();
    // Each expert's rows are quantized on their own, their scales from a 16-byte boundary: a
    // cuBLASLt scale vector starts where a vector load may (the operands' row offsets are
    // multiples of 16 bytes already: hidden and intermediate are multiples of 16).
    std::int64_t off = 0, slot = 0;
    for (std::size_t e = 0; e < rows.size(); ++e) {
      if (rows[e] > 0) {
        float* xs = x_s_.as<float>() + slot;
        cuda::fp8_quantize_rows(static_cast<const __nv_bfloat16*>(x) + off * H, rows[e], H, xq + off * H, xs, st);
        gemm(gate_up_, rows[e], 2 * I, H)
            .run(xq + off * H, xs, w13_q_.as<std::uint8_t>() + static_cast<std::int64_t>(e) * 2 * I * H,
                 w13_s_.as<float>() + static_cast<std::int64_t>(e) * 2 * I, gu + off * 2 * I, s);
      }
      off += rows[e];
      slot += (rows[e] + 3) / 4 * 4;
    }
    cuda::std_glu(gu, static_cast<__nv_bfloat16*>(act), R, I, s_.activation, st);
    off = 0;
    slot = 0;
    for (std::size_t e = 0; e < rows.size(); ++e) {
      if (rows[e] > 0) {
        float* as = a_s_.as<float>() + slot;
        cuda::fp8_quantize_rows(static_cast<const __nv_bfloat16*>(act) + off * I, rows[e], I, aq + off * I, as, st);
        gemm(down_, rows[e], H, I)
            .run(aq + off * I, as, wd_q_.as<std::uint8_t>() + static_cast<std::int64_t>(e) * H * I,
                 wd_s_.as<float>() + static_cast<std::int64_t>(e) * H, static_cast<__nv_bfloat16*>(y) + off * H, s);
      }
      off += rows[e];
      slot += (rows[e] + 3) / 4 * 4;
    }
  }

  std::string path() const override {
    return "fp8-rowwise, cuBLASLt fallback (no compute capability 9.0 kernels on this device): rows quantized one "
           "scale per row on the device, per expert one cuBLASLt e4m3 GEMM for gate/up and one for down with "
           "rowwise scales (fast accumulation), the GLU kernel and the activation's rowwise quantization between "
           "them; sized by the host counts";
  }

 private:
  using Plans = std::map<std::int64_t, std::unique_ptr<Fp8LtGemm>>;
  // The plan of an (m, n, k) GEMM, made the first time m is seen (cuBLASLt's heuristic runs on the
  // host: a load that repeats reuses its plans).
  Fp8LtGemm& gemm(Plans& plans, std::int64_t m, std::int64_t n, std::int64_t k) {
    auto& p = plans[m];
    if (!p) p = make_fp8_lt_gemm(dev_, m, n, k);
    return *p;
  }

  Device& dev_;
  Fp8ExpertShape s_;
  Buffer w13_q_, w13_s_, wd_q_, wd_s_, x_q_, x_s_, gu_, a_q_, a_s_;
  Plans gate_up_, down_;
};

}  // namespace

std::string lt_fp8_experts_unsupported(const Fp8ExpertShape& s) {
  if (s.precision != ExpertPrecision::fp8_rowwise)
    return "the cuBLASLt fallback runs the fp8-rowwise recipe only (the block-scaled recipe needs the compute "
           "capability 9.0 kernels; --precision fp8-rowwise or bf16 run here)";
  if (s.activation.kind != Activation::silu_glu && s.activation.kind != Activation::swiglu_clamped)
    return "the FP8 experts have SiLU-GLU and clamped SwiGLU only";
  if (s.hidden % 16 != 0 || s.inter % 16 != 0)
    return fmt::format("cuBLASLt e4m3 GEMMs need hidden and intermediate sizes that are multiples of 16, not {} and {}",
                       s.hidden, s.inter);
  return fp8_lt_unsupported(1, 2 * s.inter, s.hidden);
}

std::unique_ptr<Fp8Experts> make_lt_fp8_experts(Device& dev, const Fp8ExpertShape& shape) {
  return std::make_unique<LtFp8Experts>(dev, shape);
}

}  // namespace layerbench::moe
