#include "moe/config/router.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace layerbench::moe {

float glu(float g, float u, const ActivationSpec& a) {
  if (a.kind == Activation::silu_glu) return g / (1.0f + std::exp(-g)) * u;
  if (a.kind == Activation::gelu_tanh_glu) {  // gelu_pytorch_tanh(g) * u
    constexpr float k = 0.7978845608028654f;  // sqrt(2 / pi)
    return 0.5f * g * (1.0f + std::tanh(k * (g + 0.044715f * g * g * g))) * u;
  }
  const float lim = static_cast<float>(a.limit);
  const float gc = std::min(g, lim);
  const float uc = std::clamp(u, -lim, lim);
  return gc * (1.0f / (1.0f + std::exp(-static_cast<float>(a.alpha) * gc))) * (uc + 1.0f);
}

float route_token(const float* logits, const float* bias, const RouterSpec& spec, std::int64_t experts,
                  std::int64_t topk, std::int32_t* idx, float* weight, std::span<float> work) {
  const std::int64_t E = experts;
  float* score = work.data();
  float* sel = work.data() + E;
  float* gval = work.data() + 2 * E;  // group values (groups <= E)
  const float neg_inf = -std::numeric_limits<float>::infinity();
  // 1-2. scores and selection values.
  if (spec.topk_before_score) {
    for (std::int64_t e = 0; e < E; ++e) score[e] = logits[e];
  } else if (spec.score == Score::softmax) {
    float mx = neg_inf;
    for (std::int64_t e = 0; e < E; ++e) mx = std::max(mx, logits[e]);
    float sum = 0;
    for (std::int64_t e = 0; e < E; ++e) {
      score[e] = std::exp(logits[e] - mx);
      sum += score[e];
    }
    for (std::int64_t e = 0; e < E; ++e) score[e] /= sum;
  } else {
    for (std::int64_t e = 0; e < E; ++e) score[e] = 1.0f / (1.0f + std::exp(-logits[e]));
  }
  for (std::int64_t e = 0; e < E; ++e) sel[e] = score[e] + (spec.selection_bias ? bias[e] : 0.0f);
  // 3. group limit: exclude (mark -inf) every expert outside the topk_groups best groups.
  std::vector<char> allowed(static_cast<std::size_t>(E), 1);
  if (spec.groups > 1) {
    const std::int64_t G = spec.groups, per = E / G;
    for (std::int64_t g = 0; g < G; ++g) {
      float b1 = neg_inf, b2 = neg_inf;
      for (std::int64_t e = g * per; e < (g + 1) * per; ++e) {
        const float v = sel[e];
        if (v > b1) {
          b2 = b1;
          b1 = v;
        } else if (v > b2) {
          b2 = v;
        }
      }
      gval[g] = spec.group_score == GroupScore::max ? b1 : b1 + b2;
    }
    std::vector<char> keep(static_cast<std::size_t>(G), 0);
    for (std::int64_t r = 0; r < spec.topk_groups; ++r) {
      std::int64_t best = -1;
      for (std::int64_t g = 0; g < G; ++g)
        if (!keep[g] && (best < 0 || gval[g] > gval[best])) best = g;
      keep[best] = 1;
    }
    for (std::int64_t e = 0; e < E; ++e) allowed[e] = keep[e / per];
  }
  // 4. top-k among the allowed experts, ties to the lower id.
  std::vector<char> taken(static_cast<std::size_t>(E), 0);
  for (std::int64_t j = 0; j < topk; ++j) {
    std::int64_t best = -1;
    for (std::int64_t e = 0; e < E; ++e)
      if (allowed[e] && !taken[e] && (best < 0 || sel[e] > sel[best])) best = e;
    taken[best] = 1;
    idx[j] = static_cast<std::int32_t>(best);
  }
  float excluded = neg_inf;
  for (std::int64_t e = 0; e < E; ++e)
    if (allowed[e] && !taken[e]) excluded = std::max(excluded, sel[e]);
  const float margin = excluded == neg_inf ? std::numeric_limits<float>::infinity() : sel[idx[topk - 1]] - excluded;
  // 5. weights.
  if (spec.topk_before_score && spec.score == Score::softmax) {
    float mx = neg_inf, sum = 0;
    for (std::int64_t j = 0; j < topk; ++j) mx = std::max(mx, logits[idx[j]]);
    for (std::int64_t j = 0; j < topk; ++j) {
      weight[j] = std::exp(logits[idx[j]] - mx);
      sum += weight[j];
    }
    for (std::int64_t j = 0; j < topk; ++j) weight[j] /= sum;
  } else if (spec.topk_before_score) {
    for (std::int64_t j = 0; j < topk; ++j) weight[j] = 1.0f / (1.0f + std::exp(-logits[idx[j]]));
  } else {
    for (std::int64_t j = 0; j < topk; ++j) weight[j] = score[idx[j]];
  }
  if (spec.normalize) {
    float sum = 0;
    for (std::int64_t j = 0; j < topk; ++j) sum += weight[j];
    sum = std::max(sum, 1e-20f);
    for (std::int64_t j = 0; j < topk; ++j) weight[j] /= sum;
  }
  for (std::int64_t j = 0; j < topk; ++j) weight[j] *= static_cast<float>(spec.scale);
  return margin;
}

}  // namespace layerbench::moe
