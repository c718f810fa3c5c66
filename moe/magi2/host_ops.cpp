// Host implementation of the MoE primitives: fp32 everywhere, plain loops in a fixed order.
// It is the numerical reference of the layer, so clarity and determinism beat speed here.
#include "collectives/error.hpp"
#include "moe/init.hpp"
#include "moe/magi2/ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace layerbench::moe {

float swiglu7(float g, float u) {
  const float gc = std::min(g, 7.0f);
  const float uc = std::clamp(u, -7.0f, 7.0f);
  return gc * (1.0f / (1.0f + std::exp(-1.702f * gc))) * (uc + 1.0f);
}

float route_row(const float* x, const float* gate, const float* bias, std::int64_t experts, std::int64_t d,
                std::int64_t topk, float scale, std::span<float> score, std::span<std::int32_t> order,
                std::int32_t* idx, float* prob) {
  for (std::int64_t e = 0; e < experts; ++e) {
    const float* g = gate + e * d;
    float logit = 0;
    for (std::int64_t q = 0; q < d; ++q) logit += x[q] * g[q];
    score[static_cast<std::size_t>(e)] = 1.0f / (1.0f + std::exp(-logit));
  }
  // Selection on score + bias; ties go to the lower expert id (the CUDA path agrees).
  const auto sel = [&](std::int32_t e) { return score[static_cast<std::size_t>(e)] + bias[e]; };
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + topk, order.end(), [&](std::int32_t a, std::int32_t b) {
    const float va = sel(a), vb = sel(b);
    return va > vb || (va == vb && a < b);
  });
  float l1 = 0;
  for (std::int64_t j = 0; j < topk; ++j) l1 += std::fabs(score[static_cast<std::size_t>(order[j])]);
  const float norm = scale / std::max(l1, 1e-12f);
  for (std::int64_t j = 0; j < topk; ++j) {
    idx[j] = order[static_cast<std::size_t>(j)];
    prob[j] = score[static_cast<std::size_t>(order[j])] * norm;
  }
  float best_unselected = -INFINITY;
  for (std::int64_t j = topk; j < experts; ++j) best_unselected = std::max(best_unselected, sel(order[j]));
  return sel(order[static_cast<std::size_t>(topk - 1)]) - best_unselected;
}

void add_expert_row(const float* x, const float* w13, const float* w_down, std::int64_t d, std::int64_t inter,
                    float p, float* acc, std::span<float> gu, std::span<float> act, std::span<float> out) {
  std::fill(gu.begin(), gu.end(), 0.0f);
  for (std::int64_t q = 0; q < d; ++q)
    for (std::int64_t c = 0; c < 2 * inter; ++c) gu[c] += x[q] * w13[q * 2 * inter + c];
  for (std::int64_t c = 0; c < inter; ++c) act[c] = swiglu7(gu[c], gu[inter + c]);
  std::fill(out.begin(), out.end(), 0.0f);
  for (std::int64_t c = 0; c < inter; ++c)
    for (std::int64_t q = 0; q < d; ++q) out[q] += act[c] * w_down[c * d + q];
  for (std::int64_t q = 0; q < d; ++q) acc[q] += p * out[q];
}

namespace {

class HostOps final : public Ops {
 public:
  DType act() const override { return DType::fp32; }
  std::string describe() const override { return "host fp32 loops"; }

  void fill(void* dst, DType t, const SeededSlice& f, Stream s) override { dense_->fill(dst, t, f, s); }
  void linear(const void* a, const void* w, void* c, const GemmShape& g, bool accumulate, Stream s) override {
    dense_->linear(a, w, c, g, accumulate, s);
  }
  void add(const void* x, const void* y, void* out, std::int64_t n, Stream s) override { dense_->add(x, y, out, n, s); }

  void rms_norm(const void* x, const float* w, void* y, std::span<const Segment> segs,
                std::int64_t h, Stream) override {
    const auto* in = static_cast<const float*>(x);
    auto* out = static_cast<float*>(y);
    for (const auto& sg : segs) {
      const float* wm = w + sg.modality * h;
      for (std::int64_t i = sg.begin; i < sg.begin + sg.count; ++i) {
        double ss = 0;
        for (std::int64_t c = 0; c < h; ++c) ss += double(in[i * h + c]) * in[i * h + c];
        const float inv = 1.0f / std::sqrt(static_cast<float>(ss / double(h)) + 1e-6f);
        for (std::int64_t c = 0; c < h; ++c) out[i * h + c] = in[i * h + c] * inv * (wm[c] + 1.0f);
      }
    }
  }

  void swiglu_packed(const void* in, void* out, std::int64_t m, std::int64_t n, Stream) override {
    const auto* x = static_cast<const float*>(in);
    auto* y = static_cast<float*>(out);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        y[i * n + j] = swiglu7(x[i * 2 * n + 2 * j], x[i * 2 * n + 2 * j + 1]);
  }

  void transpose_blocks(const void* in, void* out, std::int64_t a, std::int64_t b, std::int64_t w,
                        Stream) override {
    const auto* x = static_cast<const float*>(in);
    auto* y = static_cast<float*>(out);
    for (std::int64_t i = 0; i < a; ++i)
      for (std::int64_t j = 0; j < b; ++j)
        std::memcpy(y + (j * a + i) * w, x + (i * b + j) * w, static_cast<std::size_t>(w) * 4);
  }

  void route(const RoutedArgs& r, Stream) override {
    const auto* x = static_cast<const float*>(r.x);
    const std::int64_t pairs = r.tokens * r.heads_valid;
    idx_.assign(static_cast<std::size_t>(pairs * r.topk), 0);
    prob_.assign(static_cast<std::size_t>(pairs * r.topk), 0.0f);
    std::vector<float> score(static_cast<std::size_t>(r.experts));
    std::vector<std::int32_t> order(static_cast<std::size_t>(r.experts));
    for (std::int64_t t = 0; t < r.tokens; ++t)
      for (std::int64_t h = 0; h < r.heads_valid; ++h) {
        const auto a = static_cast<std::size_t>((t * r.heads_valid + h) * r.topk);
        (void)route_row(x + (t * r.heads_local + h) * r.d, r.gate + h * r.experts * r.d, r.bias + h * r.experts,
                        r.experts, r.d, r.topk, r.scale, score, order, idx_.data() + a, prob_.data() + a);
      }
  }

  void experts(const RoutedArgs& r, Stream) override {
    const auto* x = static_cast<const float*>(r.x);
    const auto* w13 = static_cast<const float*>(r.w13);
    const auto* wd = static_cast<const float*>(r.w_down);
    auto* y = static_cast<float*>(r.y);
    std::vector<float> gu(static_cast<std::size_t>(2 * r.inter)), act(static_cast<std::size_t>(r.inter)),
        out(static_cast<std::size_t>(r.d));
    for (std::int64_t t = 0; t < r.tokens; ++t)
      for (std::int64_t h = 0; h < r.heads_valid; ++h) {
        float* acc = y + (t * r.heads_local + h) * r.d;
        std::fill(acc, acc + r.d, 0.0f);
        for (std::int64_t j = 0; j < r.topk; ++j) {  // fixed k order: deterministic
          const auto a = static_cast<std::size_t>((t * r.heads_valid + h) * r.topk + j);
          const std::int64_t e = h * r.experts + idx_[a];
          add_expert_row(x + (t * r.heads_local + h) * r.d, w13 + e * r.d * 2 * r.inter, wd + e * r.inter * r.d,
                         r.d, r.inter, prob_[a], acc, gu, act, out);
        }
      }
  }

  std::vector<std::int64_t> expert_counts(const RoutedArgs& r) override {
    std::vector<std::int64_t> c(static_cast<std::size_t>(r.heads_valid * r.experts), 0);
    const std::int64_t pairs = r.tokens * r.heads_valid;
    for (std::int64_t p = 0; p < pairs; ++p)
      for (std::int64_t j = 0; j < r.topk; ++j) {
        const std::int64_t h = p % r.heads_valid;
        ++c[static_cast<std::size_t>(h * r.experts + idx_[static_cast<std::size_t>(p * r.topk + j)])];
      }
    return c;
  }

 private:
  std::unique_ptr<DenseOps> dense_ = make_host_dense_ops();
  std::vector<std::int32_t> idx_;  // (tokens, heads_valid, topk) expert id within the head's bank
  std::vector<float> prob_;        // (tokens, heads_valid, topk)
};

}  // namespace

std::unique_ptr<Ops> make_host_ops() { return std::make_unique<HostOps>(); }

std::string_view to_string(ExpertPath p) {
  for (const auto& e : kExpertPaths)
    if (e.path == p) return e.name;
  return "?";
}

std::optional<ExpertPath> parse_expert_path(std::string_view name) {
  for (const auto& e : kExpertPaths)
    if (e.name == name) return e.path;
  return std::nullopt;
}

#if !defined(LAYERBENCH_HAVE_CUDA)
std::unique_ptr<Ops> make_cuda_ops(Device&, ExpertPath) {
  throw UsageError("this build has no CUDA support (use --backend host)");
}
#endif

}  // namespace layerbench::moe
