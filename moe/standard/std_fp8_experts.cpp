// FP8 expert MLPs (moe/standard/std_fp8_experts.hpp): the recipes and the host backend (fp32 on the
// dequantized operands, the host block's order of operations).
#include "moe/standard/std_fp8_experts.hpp"

#include "collectives/error.hpp"
#include "moe/config/router.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace layerbench::moe {

std::string_view to_string(ExpertPrecision p) {
  switch (p) {
    case ExpertPrecision::act: return "act";
    case ExpertPrecision::fp8_rowwise: return "fp8-rowwise";
    case ExpertPrecision::fp8_block: return "fp8-block";
  }
  return "?";
}

ExpertPrecision expert_precision(const Precision::Part& p) {
  switch (p.format) {
    case Precision::Format::bf16: return ExpertPrecision::act;
    case Precision::Format::fp8_rowwise: return ExpertPrecision::fp8_rowwise;
    case Precision::Format::fp8_block: return ExpertPrecision::fp8_block;
  }
  return ExpertPrecision::act;
}

fp8::Scaling activation_scaling(ExpertPrecision p) {
  LB_CHECK(p != ExpertPrecision::act, "an FP8 recipe");
  return p == ExpertPrecision::fp8_rowwise ? fp8::Scaling::rowwise : fp8::Scaling::block_1x128;
}

fp8::Scaling weight_scaling(ExpertPrecision p) {
  LB_CHECK(p != ExpertPrecision::act, "an FP8 recipe");
  return p == ExpertPrecision::fp8_rowwise ? fp8::Scaling::rowwise : fp8::Scaling::block_128x128;
}

void quantize_dequantize_rows(float* x, std::int64_t rows, std::int64_t cols, ExpertPrecision p) {
  if (rows == 0) return;
  const auto d = fp8::dequantize(fp8::quantize(x, 1, rows, cols, activation_scaling(p)));
  std::copy(d.begin(), d.end(), x);
}

void quantize_dequantize_weights(float* w13, float* wd, std::int64_t experts, std::int64_t h, std::int64_t inter,
                                 ExpertPrecision p) {
  if (experts == 0) return;
  const bool rowwise = p == ExpertPrecision::fp8_rowwise;
  const auto s = weight_scaling(p);
  // Rowwise: one scale per output channel (a row of either matrix); blocks: the 128 x 128 blocks of
  // each expert's gate, up and down matrices apart.
  const auto a = rowwise ? fp8::quantize(w13, 1, experts * 2 * inter, h, s) : fp8::quantize(w13, 2 * experts, inter, h, s);
  const auto b = rowwise ? fp8::quantize(wd, 1, experts * h, inter, s) : fp8::quantize(wd, experts, h, inter, s);
  const auto da = fp8::dequantize(a), db = fp8::dequantize(b);
  std::copy(da.begin(), da.end(), w13);
  std::copy(db.begin(), db.end(), wd);
}

void Fp8Experts::mlp_on_device(const void*, void*, void*, const std::int32_t*, std::int64_t, Stream) {
  throw Error("these FP8 experts size their work from host counts (takes_device_counts() is false)");
}

namespace {

class HostFp8Experts final : public Fp8Experts {
 public:
  explicit HostFp8Experts(const Fp8ExpertShape& s) : s_(s) {
    LB_CHECK(s.precision != ExpertPrecision::act, "an FP8 recipe");
  }
  void set_weights(const void* w13, const void* wd, Stream) override {
    const auto n13 = static_cast<std::size_t>(s_.experts * 2 * s_.inter * s_.hidden);
    const auto nd = static_cast<std::size_t>(s_.experts * s_.hidden * s_.inter);
    w13_.assign(static_cast<const float*>(w13), static_cast<const float*>(w13) + n13);
    wd_.assign(static_cast<const float*>(wd), static_cast<const float*>(wd) + nd);
    quantize_dequantize_weights(w13_.data(), wd_.data(), s_.experts, s_.hidden, s_.inter, s_.precision);
  }
  void mlp(const void* x, void* act, void* y, const std::vector<std::int64_t>& rows, Stream) override {
    LB_CHECK(static_cast<std::int64_t>(rows.size()) == s_.experts, "one row count per expert");
    const std::int64_t H = s_.hidden, I = s_.inter;
    std::int64_t R = 0;
    for (auto r : rows) R += r;
    LB_CHECK(R <= s_.rows_cap, "at most rows_cap rows");
    if (R == 0) return;
    // The rows quantized as the CUDA kernels read them (moe/fp8.hpp's recipe), then fp32 loops in
    // the host block's order (moe/standard/std_reference.cpp repeats it).
    xq_.assign(static_cast<const float*>(x), static_cast<const float*>(x) + R * H);
    quantize_dequantize_rows(xq_.data(), R, H, s_.precision);
    auto* a = static_cast<float*>(act);
    std::vector<float> gu(static_cast<std::size_t>(2 * I));
    std::int64_t row = 0;
    for (std::int64_t e = 0; e < s_.experts; ++e)
      for (std::int64_t i = 0; i < rows[static_cast<std::size_t>(e)]; ++i, ++row) {
        const float* in = xq_.data() + row * H;
        const float* w = w13_.data() + e * 2 * I * H;
        for (std::int64_t c = 0; c < 2 * I; ++c) {
          float acc = 0;
          for (std::int64_t q = 0; q < H; ++q) acc += in[q] * w[c * H + q];
          gu[static_cast<std::size_t>(c)] = acc;
        }
        for (std::int64_t c = 0; c < I; ++c)
          a[row * I + c] = glu(gu[static_cast<std::size_t>(c)], gu[static_cast<std::size_t>(I + c)], s_.activation);
      }
    quantize_dequantize_rows(a, R, I, s_.precision);
    auto* out = static_cast<float*>(y);
    row = 0;
    for (std::int64_t e = 0; e < s_.experts; ++e)
      for (std::int64_t i = 0; i < rows[static_cast<std::size_t>(e)]; ++i, ++row) {
        const float* w = wd_.data() + e * H * I;
        for (std::int64_t q = 0; q < H; ++q) {
          float acc = 0;
          for (std::int64_t c = 0; c < I; ++c) acc += a[row * I + c] * w[q * I + c];
          out[row * H + q] = acc;
        }
      }
  }
  std::string path() const override {
    return fmt::format("{}: host fp32 loops on operands quantized to e4m3 and dequantized (activations {}, weights {})",
                       to_string(s_.precision), fp8::to_string(activation_scaling(s_.precision)),
                       fp8::to_string(weight_scaling(s_.precision)));
  }

 private:
  Fp8ExpertShape s_;
  std::vector<float> w13_, wd_, xq_;
};

}  // namespace

std::unique_ptr<Fp8Experts> make_host_fp8_experts(const Fp8ExpertShape& shape) {
  return std::make_unique<HostFp8Experts>(shape);
}

#if !defined(LAYERBENCH_HAVE_CUDA)
std::string cuda_fp8_experts_unsupported(const Fp8ExpertShape&) { return "this build has no CUDA support"; }
std::string lt_fp8_experts_unsupported(const Fp8ExpertShape&) { return "this build has no CUDA support"; }
std::unique_ptr<Fp8Experts> make_lt_fp8_experts(Device&, const Fp8ExpertShape&) {
  throw UsageError("this build has no CUDA support (use --backend host)");
}
std::unique_ptr<Fp8Experts> make_cuda_fp8_experts(Device&, const Fp8ExpertShape&) {
  throw UsageError("this build has no CUDA support (use --backend host)");
}
#endif

}  // namespace layerbench::moe
