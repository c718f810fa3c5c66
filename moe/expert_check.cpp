#include "moe/expert_check.hpp"

#include "collectives/types.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace layerbench::moe {

namespace {

// n activation elements from element offset `at` of `base`, as double.
std::vector<double> download_act(Device& dev, const void* base, DType act, std::int64_t at, std::int64_t n) {
  std::vector<double> out(static_cast<std::size_t>(n));
  if (act == DType::bf16) {
    const auto raw = dev.download<std::uint16_t>(static_cast<const std::uint16_t*>(base) + at, out.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = bf16_bits_to_float(raw[i]);
  } else {
    const auto raw = dev.download<float>(static_cast<const float*>(base) + at, out.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = raw[i];
  }
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
  std::vector<double> logit(static_cast<std::size_t>(E)), score(static_cast<std::size_t>(E));
  std::vector<std::int64_t> order(static_cast<std::size_t>(E));
  for (int s = 0; s < samples; ++s) {
    const auto t = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(r.tokens));
    const auto h = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(r.heads_valid));
    const std::int64_t row = t * r.heads_local + h;
    const auto x = download_act(dev, r.x, act, row * d, d);
    const auto gate = dev.download<float>(r.gate + h * E * d, static_cast<std::size_t>(E * d));
    const auto bias = dev.download<float>(r.bias + h * E, static_cast<std::size_t>(E));
    // Routing: sigmoid scores, selection on score + bias (ties to the lower id), L1 normalised.
    for (std::int64_t e = 0; e < E; ++e) {
      double l = 0;
      for (std::int64_t q = 0; q < d; ++q) l += x[q] * gate[static_cast<std::size_t>(e * d + q)];
      logit[e] = l;
      score[e] = 1.0 / (1.0 + std::exp(-l));
    }
    std::iota(order.begin(), order.end(), 0);
    const auto sel = [&](std::int64_t e) { return score[e] + bias[static_cast<std::size_t>(e)]; };
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) { return sel(a) > sel(b); });
    // The backend rounds its logits in fp32: a top-k boundary closer than this may legitimately
    // fall the other way, so such pairs are not compared.
    if (k < E && sel(order[k - 1]) - sel(order[k]) < 1e-4) {
      ++c.near_ties;
      continue;
    }
    double l1 = 0;
    for (std::int64_t j = 0; j < k; ++j) l1 += std::fabs(score[order[j]]);
    const double norm = r.scale / std::max(l1, 1e-12);
    std::vector<double> ref(static_cast<std::size_t>(d), 0.0), gu(static_cast<std::size_t>(2 * I));
    for (std::int64_t j = 0; j < k; ++j) {
      const std::int64_t e = h * E + order[j];
      const auto w13 = download_act(dev, r.w13, act, e * d * 2 * I, d * 2 * I);  // (d, 2I)
      const auto wd = download_act(dev, r.w_down, act, e * I * d, I * d);       // (I, d)
      std::fill(gu.begin(), gu.end(), 0.0);
      for (std::int64_t q = 0; q < d; ++q)
        for (std::int64_t col = 0; col < 2 * I; ++col) gu[col] += x[q] * w13[static_cast<std::size_t>(q * 2 * I + col)];
      const double p = score[order[j]] * norm;
      for (std::int64_t col = 0; col < I; ++col) {
        const double a = swiglu7(static_cast<float>(gu[col]), static_cast<float>(gu[I + col]));
        for (std::int64_t q = 0; q < d; ++q) ref[q] += p * a * wd[static_cast<std::size_t>(col * d + q)];
      }
    }
    const auto y = download_act(dev, r.y, act, row * d, d);
    for (std::int64_t q = 0; q < d; ++q) {
      const double err = std::isfinite(y[q]) ? std::fabs(y[q] - ref[q]) : INFINITY;
      c.max_abs_err = std::max(c.max_abs_err, err);
      c.max_abs_ref = std::max(c.max_abs_ref, std::fabs(ref[q]));
    }
    ++c.sampled;
  }
  // bf16 activations, weights and intermediates: a few bf16 ulps of the output's scale; fp32: tight.
  c.tolerance = act == DType::bf16 ? 2e-2 * c.max_abs_ref + 1e-3 : 1e-4 * c.max_abs_ref + 1e-6;
  return c;
}

}  // namespace layerbench::moe
