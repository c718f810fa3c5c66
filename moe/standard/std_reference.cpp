#include "moe/standard/std_reference.hpp"

#include "collectives/types.hpp"
#include "moe/init.hpp"
#include "moe/config/router.hpp"
#include "moe/standard/fp8_dispatch.hpp"

#include <algorithm>
#include <cmath>

namespace layerbench::moe {

std::uint64_t std_layer_seed(std::uint64_t seed, int layer) {
  return splitmix64(seed ^ (0x537464ull << 32) ^ static_cast<std::uint64_t>(layer));
}

namespace {
float uniform_scale_for(std::int64_t fan_in) { return std::sqrt(3.0f / static_cast<float>(fan_in)); }
}  // namespace

StdReference::StdReference(const Model& m, std::uint64_t seed, int layer_index, bool bf16, DispatchPrecision dispatch,
                           ExpertPrecision experts, ExpertPrecision shared)
    : m_(m), seed_(std_layer_seed(seed, layer_index)), bf16_(bf16), dispatch_(dispatch), experts_p_(experts),
      shared_p_(shared) {
  const std::int64_t H = m.hidden, E = m.experts, Is = m.shared.intermediate();
  router_.resize(static_cast<std::size_t>(E * H));
  for (std::int64_t i = 0; i < E * H; ++i) router_[i] = w(kRouterGate, i, uniform_scale_for(H));
  bias_.resize(static_cast<std::size_t>(E));
  for (std::int64_t e = 0; e < E; ++e) bias_[e] = seeded_value(seed_, kExpertBias, e, 0.05f);  // fp32 on every backend
  if (Is > 0) {
    s13_.resize(static_cast<std::size_t>(2 * Is * H));
    for (std::int64_t i = 0; i < 2 * Is * H; ++i) s13_[i] = w(kSharedFc1, i, uniform_scale_for(H));
    s2_.resize(static_cast<std::size_t>(H * Is));
    for (std::int64_t i = 0; i < H * Is; ++i) s2_[i] = w(kSharedFc2, i, uniform_scale_for(Is));
    sgate_.resize(static_cast<std::size_t>(H));
    for (std::int64_t i = 0; i < H; ++i) sgate_[i] = w(kModalityFc1, i, uniform_scale_for(H));
    if (shared_p_ != ExpertPrecision::act) quantize_dequantize_weights(s13_.data(), s2_.data(), 1, H, Is, shared_p_);
  }
}

float StdReference::round(float v) const { return bf16_ ? round_to_bf16(v) : v; }

float StdReference::w(std::uint32_t tensor, std::uint64_t index, float scale) const {
  return round(seeded_value(seed_, tensor, index, scale));
}

const std::vector<float>& StdReference::expert(std::int64_t e) {
  auto it = experts_.find(e);
  if (it != experts_.end()) return it->second;
  const std::int64_t H = m_.hidden, I = m_.moe_intermediate;
  std::vector<float> v(static_cast<std::size_t>(3 * I * H));
  for (std::int64_t r = 0; r < I; ++r)
    for (std::int64_t q = 0; q < H; ++q) {
      const auto i = static_cast<std::uint64_t>((e * I + r) * H + q);
      v[static_cast<std::size_t>(r * H + q)] = w(kExpertGate, i, uniform_scale_for(H));
      v[static_cast<std::size_t>((I + r) * H + q)] = w(kExpertUp, i, uniform_scale_for(H));
    }
  for (std::int64_t i = 0; i < H * I; ++i)
    v[static_cast<std::size_t>(2 * I * H + i)] = w(kExpertDown, static_cast<std::uint64_t>(e * H * I + i), uniform_scale_for(I));
  if (experts_p_ != ExpertPrecision::act) quantize_dequantize_weights(v.data(), v.data() + 2 * I * H, 1, H, I, experts_p_);
  return experts_.emplace(e, std::move(v)).first->second;
}

float StdReference::token(const float* x, float* out, std::int32_t* ids, float* weights) {
  const std::int64_t H = m_.hidden, E = m_.experts, k = m_.topk, I = m_.moe_intermediate, Is = m_.shared.intermediate();
  std::vector<float> logits(static_cast<std::size_t>(E)), work(static_cast<std::size_t>(3 * E));
  for (std::int64_t e = 0; e < E; ++e) {
    float acc = 0;
    for (std::int64_t q = 0; q < H; ++q) acc += x[q] * router_[static_cast<std::size_t>(e * H + q)];
    logits[e] = acc;
  }
  std::vector<std::int32_t> idx(static_cast<std::size_t>(k));
  std::vector<float> wt(static_cast<std::size_t>(k));
  const float margin = route_token(logits.data(), bias_.data(), m_.router, E, k, idx.data(), wt.data(), work);
  // A two-layer GLU MLP: w13 (2I', H), w2 (H, I') -> y (H), the backend's order and roundings.
  // FP8 (p not act): the row read and the activation quantized and dequantized with the recipe
  // (dequantized values are not rounded: the kernels apply the scales in fp32).
  auto mlp = [&](const float* x_in, const float* w13, const float* w2, std::int64_t inter, std::vector<float>& y,
                 ExpertPrecision p) {
    std::vector<float> in(x_in, x_in + H);
    if (p != ExpertPrecision::act) quantize_dequantize_rows(in.data(), 1, H, p);
    std::vector<float> gu(static_cast<std::size_t>(2 * inter)), a(static_cast<std::size_t>(inter));
    for (std::int64_t c = 0; c < 2 * inter; ++c) {
      float acc = 0;
      for (std::int64_t q = 0; q < H; ++q) acc += in[q] * w13[c * H + q];
      gu[c] = round(acc);
    }
    for (std::int64_t c = 0; c < inter; ++c) a[c] = round(glu(gu[c], gu[inter + c], m_.activation));
    if (p != ExpertPrecision::act) quantize_dequantize_rows(a.data(), 1, inter, p);
    y.assign(static_cast<std::size_t>(H), 0.0f);
    for (std::int64_t q = 0; q < H; ++q) {
      float acc = 0;
      for (std::int64_t c = 0; c < inter; ++c) acc += a[c] * w2[q * inter + c];
      y[q] = round(acc);
    }
  };
  // What the routed experts receive: the token, or its FP8 dispatch row dequantized to the act type.
  std::vector<float> xd(x, x + H);
  if (dispatch_ == DispatchPrecision::fp8) {
    std::vector<std::uint8_t> row(static_cast<std::size_t>(fp8::dispatch_row_bytes(H)));
    fp8::quantize_dispatch_row(x, H, row.data());
    fp8::dequantize_dispatch_row(row.data(), H, xd.data());
    for (auto& v : xd) v = round(v);
  }
  std::vector<std::vector<float>> ys(static_cast<std::size_t>(k));
  for (std::int64_t j = 0; j < k; ++j) {
    const auto& ew = expert(idx[j]);
    mlp(xd.data(), ew.data(), ew.data() + 2 * I * H, I, ys[j], experts_p_);
  }
  std::vector<float> shared;
  if (Is > 0) {
    mlp(x, s13_.data(), s2_.data(), Is, shared, shared_p_);
    if (m_.shared.gate) {
      float g = 0;
      for (std::int64_t q = 0; q < H; ++q) g += x[q] * sgate_[q];
      const float s = 1.0f / (1.0f + std::exp(-g));
      for (auto& v : shared) v = round(v * s);
    }
  }
  for (std::int64_t q = 0; q < H; ++q) {
    float acc = 0;
    for (std::int64_t j = 0; j < k; ++j) acc += wt[j] * ys[j][q];
    const float routed = round(acc);
    out[q] = Is > 0 ? round(routed + shared[q]) : routed;
  }
  if (ids) std::copy(idx.begin(), idx.end(), ids);
  if (weights) std::copy(wt.begin(), wt.end(), weights);
  return margin;
}

nlohmann::json StdCheck::to_json() const {
  return {{"sampled_tokens", sampled}, {"near_ties_skipped", near_ties}, {"routing_mismatches", id_mismatches},
          {"max_abs_err", max_abs_err}, {"max_abs_ref", max_abs_ref}, {"tolerance", tolerance}, {"ok", ok()}};
}

StdCheck check_std_block(StdBlock& block, const void* x, const void* out, std::uint64_t seed, int samples) {
  auto& dev = block.ep().device();
  const Model& m = block.model();
  const bool bf16 = block.act_bytes() == 2;
  const std::int64_t N = block.plan().tokens, H = m.hidden, k = m.topk;
  StdReference ref(m, seed, 0, bf16, block.dispatch_precision(), block.expert_precision(), block.shared_precision());
  auto rows = [&](const void* p) {
    std::vector<float> v(static_cast<std::size_t>(N * H));
    if (!bf16) return dev.download<float>(p, v.size());
    const auto raw = dev.download<std::uint16_t>(p, v.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = bf16_bits_to_float(raw[i]);
    return v;
  };
  const auto xs = rows(x), ys = rows(out);
  const auto ids = block.routed_ids();
  StdCheck c;
  std::vector<float> want(static_cast<std::size_t>(H));
  std::vector<std::int32_t> rid(static_cast<std::size_t>(k));
  const std::int64_t n = std::min<std::int64_t>(samples, N);
  for (std::int64_t s = 0; s < n; ++s) {
    const std::int64_t t = n == 1 ? 0 : s * (N - 1) / (n - 1);
    const float margin = ref.token(xs.data() + t * H, want.data(), rid.data());
    std::vector<std::int32_t> a(rid.begin(), rid.end()), b(ids.begin() + t * k, ids.begin() + (t + 1) * k);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (a != b) {
      if (margin < (bf16 ? 1e-3f : 1e-6f)) {
        ++c.near_ties;
        continue;
      }
      ++c.id_mismatches;
      continue;
    }
    ++c.sampled;
    for (std::int64_t q = 0; q < H; ++q) {
      c.max_abs_err = std::max(c.max_abs_err, double(std::fabs(want[q] - ys[t * H + q])));
      c.max_abs_ref = std::max(c.max_abs_ref, double(std::fabs(want[q])));
    }
  }
  // FP8 experts on bf16: the activation's e4m3 quantization adds a rounding step (up to 6.25%) to the
  // elements where the device's bf16 activation and the oracle's fall on either side of a boundary.
  const bool fp8 = block.expert_precision() != ExpertPrecision::act || block.shared_precision() != ExpertPrecision::act;
  c.tolerance = bf16 ? (fp8 ? 3e-2 : 2e-2) * c.max_abs_ref + 1e-3 : 1e-5 * c.max_abs_ref + 1e-6;
  return c;
}

}  // namespace layerbench::moe
