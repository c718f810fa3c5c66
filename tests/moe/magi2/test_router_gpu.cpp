// The fused router kernel against the host reference (route_row, fp32): the same experts in the
// same order (descending score + bias, exact ties to the lower id) and the same probabilities
// for every (token, head) whose top-k boundary is clear of the rounding of the logits; every
// output written (outputs poisoned first); more local heads than routed ones.
#include "collectives/cuda_internal.hpp"
#include "collectives/device.hpp"
#include "collectives/types.hpp"
#include "moe/magi2/cuda_kernels.cuh"
#include "moe/init.hpp"
#include "moe/magi2/ops.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace layerbench::moe {
namespace {

struct RouterCase {
  std::int64_t tokens, hl, hv, d, k;
  std::uint32_t seed;
};

void check_router(const RouterCase& cs) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  constexpr std::int64_t E = 256;
  if (!cuda::fused_route_supported(E, cs.d, cs.k)) GTEST_SKIP() << "needs compute capability 8.0";
  auto dev = make_cuda_device(0);
  const auto st = detail::cuda_stream(dev->compute_stream());
  const std::int64_t T = cs.tokens, hl = cs.hl, hv = cs.hv, d = cs.d, k = cs.k, A = T * hv * k;
  std::vector<std::uint16_t> x(static_cast<std::size_t>(T * hl * d));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float_to_bf16_bits(seeded_value(cs.seed, 1, i, 1.5f));
  std::vector<float> gate(static_cast<std::size_t>(hl * E * d)), bias(static_cast<std::size_t>(hl * E));
  for (std::size_t i = 0; i < gate.size(); ++i) gate[i] = seeded_value(cs.seed, 2, i, 2.0f / std::sqrt(float(d)));
  for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = seeded_value(cs.seed, 3, i, 0.05f);
  // Exact ties in every head: expert 200 duplicates expert 5 (gate row and bias), both lifted so
  // that they are always chosen; the lower id must come first.
  for (std::int64_t h = 0; h < hl; ++h) {
    std::copy_n(gate.begin() + (h * E + 5) * d, d, gate.begin() + (h * E + 200) * d);
    bias[h * E + 5] = bias[h * E + 200] = 1.0f;
  }
  Buffer dx = dev->upload(x), dg = dev->upload(gate), db = dev->upload(bias);
  Buffer dsplit = dev->alloc(static_cast<std::size_t>(cuda::router_gate_split_elems(hl, d)) * 2);
  Buffer didx = dev->upload(std::vector<int>(static_cast<std::size_t>(A), -1));
  Buffer dprob = dev->upload(std::vector<float>(static_cast<std::size_t>(A), NAN));
  Buffer dvals = dev->upload(std::vector<int>(static_cast<std::size_t>(A), -1));
  cuda::prepare_router_gate(dg.as<float>(), dsplit.as<cuda::bf16>(), hl, E, d, st);
  cuda::fused_route(dx.as<cuda::bf16>(), hl, dsplit.as<cuda::bf16>(), db.as<float>(), didx.as<int>(), dprob.as<float>(),
                    dvals.as<int>(), T, hv, E, d, k, 4.9f, st);
  const auto idx = dev->download<int>(didx.data(), static_cast<std::size_t>(A));
  const auto prob = dev->download<float>(dprob.data(), static_cast<std::size_t>(A));
  const auto vals = dev->download<int>(dvals.data(), static_cast<std::size_t>(A));

  std::vector<float> xf(static_cast<std::size_t>(d)), score(E), hp(static_cast<std::size_t>(k));
  std::vector<std::int32_t> order(E), hidx(static_cast<std::size_t>(k));
  std::int64_t compared = 0, near = 0, bad = 0, tie_pairs = 0;
  double max_rel = 0;
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t h = 0; h < hv; ++h) {
      for (std::int64_t q = 0; q < d; ++q) xf[q] = bf16_bits_to_float(x[(t * hl + h) * d + q]);
      const float* gh = gate.data() + h * E * d;
      const float* bh = bias.data() + h * E;
      const float margin = route_row(xf.data(), gh, bh, E, d, k, 4.9f, score, order, hidx.data(), hp.data());
      const std::int64_t a0 = (t * hv + h) * k;
      for (std::int64_t j = 0; j < k; ++j) bad += vals[a0 + j] != a0 + j;
      if (margin < 1e-5f) {
        ++near;
        continue;
      }
      ++compared;
      for (std::int64_t j = 0; j < k; ++j) {
        const int e = idx[a0 + j] - static_cast<int>(h * E);
        const auto it = std::find(hidx.begin(), hidx.end(), e);
        if (e < 0 || e >= E || it == hidx.end()) {
          if (bad++ < 5) std::printf("t %lld h %lld: expert %d not in the host's top-%lld\n", (long long)t, (long long)h, e, (long long)k);
          continue;
        }
        const float want = hp[static_cast<std::size_t>(it - hidx.begin())];
        const double rel = std::fabs(double(prob[a0 + j]) - want) / std::fabs(double(want));
        max_rel = std::max(max_rel, std::isfinite(rel) ? rel : INFINITY);
        if (!(rel <= 1e-5)) ++bad;
        if (j == 0) continue;
        // Descending score + bias; an exact tie (in the host's fp32) keeps the lower id first.
        const int ep = idx[a0 + j - 1] - static_cast<int>(h * E);
        if (ep < 0 || ep >= E) continue;
        const float sp = score[ep] + bh[ep], sj = score[e] + bh[e];
        if (sp == sj) ++tie_pairs;
        if (sp < sj - 1e-5f || (sp == sj && ep > e)) {
          if (bad++ < 5) std::printf("t %lld h %lld: order %d before %d\n", (long long)t, (long long)h, ep, e);
        }
      }
    }
  std::printf("router T %lld hl %lld hv %lld d %lld k %lld: %lld compared, %lld near ties, %lld exact-tie pairs, "
              "max rel prob err %.3g, %lld bad\n",
              (long long)T, (long long)hl, (long long)hv, (long long)d, (long long)k, (long long)compared,
              (long long)near, (long long)tie_pairs, max_rel, (long long)bad);
  EXPECT_EQ(bad, 0);
  EXPECT_GT(compared, 0);
  EXPECT_LE(near * 20, T * hv);     // a meaningful comparison: near ties are rare
  EXPECT_GE(tie_pairs, compared);   // the duplicated expert is always chosen beside its twin
}

TEST(RouterGpu, FusedRouterMatchesTheHostReference) {
  check_router({1000, 3, 2, 256, 6, 21});  // the released geometry's router; 3 local heads, 2 routed
  check_router({130, 1, 1, 64, 8, 22});    // two k chunks, top-8, a partial 128-token tile
  check_router({37, 2, 2, 32, 2, 23});     // one k chunk, fewer tokens than a warp tile
}

}  // namespace
}  // namespace layerbench::moe
