#include "moe/magi2/expert_check.hpp"

#include "collectives/types.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace layerbench::moe {

namespace {

// n activation elements from element offset `at` of `base`, as fp32.
std::vector<float> download_act(Device& dev, const void* base, DType act, std::int64_t at, std::int64_t n) {
  if (act != DType::bf16) return dev.download<float>(static_cast<const float*>(base) + at, static_cast<std::size_t>(n));
  const auto raw = dev.download<std::uint16_t>(static_cast<const std::uint16_t*>(base) + at, static_cast<std::size_t>(n));
  std::vector<float> out(raw.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = bf16_bits_to_float(raw[i]);
  return out;
}

}  // namespace

nlohmann::json ExpertCheck::to_json() const {
  return {{"sampled_pairs", sampled}, {"near_ties_skipped", near_ties}, {"max_abs_err", max_abs_err},
          {"max_abs_ref", max_abs_ref}, {"tolerance", tolerance}, {"ok", ok()}};
}

ExpertCheck check_routed_experts(Device& dev, const RoutedArgs& r, DType act, std::uint64_t seed, int samples) {
  ExpertCheck c;
  if (r.tokens == 0 || r.heads_valid == 0 || samples <= 0) return c;
  const std::int64_t E = r.experts, d = r.d, I = r.inter, k = r.topk;
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  std::vector<float> score(static_cast<std::size_t>(E)), prob(static_cast<std::size_t>(k)),
      gu(static_cast<std::size_t>(2 * I)), a(static_cast<std::size_t>(I)), out(static_cast<std::size_t>(d)),
      ref(static_cast<std::size_t>(d));
  std::vector<std::int32_t> order(static_cast<std::size_t>(E)), idx(static_cast<std::size_t>(k));
  for (int s = 0; s < samples; ++s) {
    const auto t = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(r.tokens));
    const auto h = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(r.heads_valid));
    const std::int64_t row = t * r.heads_local + h;
    const auto x = download_act(dev, r.x, act, row * d, d);
    const auto gate = dev.download<float>(r.gate + h * E * d, static_cast<std::size_t>(E * d));
    const auto bias = dev.download<float>(r.bias + h * E, static_cast<std::size_t>(E));
    // The backend rounds its logits differently: a top-k boundary closer than this may
    // legitimately fall the other way, so such pairs are not compared.
    if (route_row(x.data(), gate.data(), bias.data(), E, d, k, r.scale, score, order, idx.data(), prob.data()) < 1e-4f) {
      ++c.near_ties;
      continue;
    }
    std::fill(ref.begin(), ref.end(), 0.0f);
    for (std::int64_t j = 0; j < k; ++j) {
      const std::int64_t e = h * E + idx[static_cast<std::size_t>(j)];
      const auto w13 = download_act(dev, r.w13, act, e * d * 2 * I, d * 2 * I);  // (d, 2I)
      const auto wd = download_act(dev, r.w_down, act, e * I * d, I * d);       // (I, d)
      add_expert_row(x.data(), w13.data(), wd.data(), d, I, prob[static_cast<std::size_t>(j)], ref.data(), gu, a, out);
    }
    const auto y = download_act(dev, r.y, act, row * d, d);
    for (std::int64_t q = 0; q < d; ++q) {
      const double err = std::isfinite(y[q]) ? std::fabs(double(y[q]) - ref[q]) : INFINITY;
      c.max_abs_err = std::max(c.max_abs_err, err);
      c.max_abs_ref = std::max(c.max_abs_ref, std::fabs(double(ref[q])));
    }
    ++c.sampled;
  }
  // bf16 activations, weights and intermediates: a few bf16 ulps of the output's scale; fp32: tight.
  c.tolerance = act == DType::bf16 ? 2e-2 * c.max_abs_ref + 1e-3 : 1e-4 * c.max_abs_ref + 1e-6;
  return c;
}

}  // namespace layerbench::moe
