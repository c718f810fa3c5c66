// The standard block's CUDA kernels on one GPU (skips without one):
//  - the warp-per-token router (moe/standard/std_kernels.cu) for every router family against
//    moe/config/router.cpp's route_token on the same fp32 logits: the same experts in the same order
//    and the same weights for every token whose top-k boundary (and group boundary) is clear of
//    rounding; exact ties (duplicated experts) go to the lower id; every output written;
//  - the expert MLPs (per-expert cuBLAS on one stream and on 4, grouped cuBLAS, padded batched, the
//    grouped wgmma kernels, also replayed from a CUDA graph on new device counts) against a CPU product with the device's
//    roundings (bf16 gate/up and activation), at edge shapes: one row, empty experts, K not a
//    multiple of any tile, more than 1024 groups.
#include "collectives/cuda_internal.hpp"
#include "collectives/device.hpp"
#include "collectives/types.hpp"
#include "moe/init.hpp"
#include "moe/config/router.hpp"
#include "moe/hopper/std_grouped_sm90.cuh"
#include "moe/standard/std_kernels.cuh"
#include "moe/standard/std_ops.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace layerbench::moe {
namespace {

struct RouteCase {
  std::string name;
  RouterSpec spec;
  std::int64_t tokens, experts, k;
};

// The gap between the last kept group and the best dropped one (+inf without a group limit),
// from the same selection values the host computes.
float group_gap(const float* l, const float* bias, const RouterSpec& sp, std::int64_t E) {
  if (sp.groups <= 1 || sp.topk_groups == sp.groups) return INFINITY;
  std::vector<double> sc(static_cast<std::size_t>(E));
  double mx = -INFINITY, sum = 0;
  for (std::int64_t e = 0; e < E; ++e) mx = std::max(mx, double(l[e]));
  for (std::int64_t e = 0; e < E; ++e) {
    sc[e] = sp.topk_before_score ? l[e] : sp.score == Score::sigmoid ? 1 / (1 + std::exp(-double(l[e]))) : std::exp(l[e] - mx);
    sum += sc[e];
  }
  const std::int64_t per = E / sp.groups;
  std::vector<double> gv;
  for (std::int64_t g = 0; g < sp.groups; ++g) {
    std::vector<double> v;
    for (std::int64_t e = g * per; e < (g + 1) * per; ++e)
      v.push_back((!sp.topk_before_score && sp.score == Score::softmax ? sc[e] / sum : sc[e]) +
                  (sp.selection_bias ? bias[e] : 0.0));
    std::sort(v.rbegin(), v.rend());
    gv.push_back(sp.group_score == GroupScore::max ? v[0] : v[0] + v[1]);
  }
  std::sort(gv.rbegin(), gv.rend());
  return static_cast<float>(gv[static_cast<std::size_t>(sp.topk_groups - 1)] - gv[static_cast<std::size_t>(sp.topk_groups)]);
}

void check_route(const RouteCase& c) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  auto dev = make_cuda_device(0);
  const std::int64_t T = c.tokens, E = c.experts, k = c.k;
  std::vector<float> logits(static_cast<std::size_t>(T * E)), bias(static_cast<std::size_t>(E));
  for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = seeded_value(41, 1, i, 3.0f);
  for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = seeded_value(41, 2, i, 0.05f);
  // Exact ties: in every 7th token expert E-1 repeats expert 0's logit (same bias too).
  if (E > 1) {
    bias[static_cast<std::size_t>(E - 1)] = bias[0];
    for (std::int64_t t = 0; t < T; t += 7) logits[static_cast<std::size_t>(t * E + E - 1)] = logits[static_cast<std::size_t>(t * E)] = 4.0f;
  }
  Buffer dl = dev->upload(logits), db = dev->upload(bias);
  Buffer di = dev->upload(std::vector<std::int32_t>(static_cast<std::size_t>(T * k), -1));
  Buffer dw = dev->upload(std::vector<float>(static_cast<std::size_t>(T * k), NAN));
  cuda::std_route(dl.as<float>(), db.as<float>(), c.spec, T, E, k, di.as<std::int32_t>(), dw.as<float>(),
                  detail::cuda_stream(dev->compute_stream()));
  const auto idx = dev->download<std::int32_t>(di.data(), static_cast<std::size_t>(T * k));
  const auto w = dev->download<float>(dw.data(), static_cast<std::size_t>(T * k));
  std::vector<float> work(static_cast<std::size_t>(3 * E));
  std::vector<std::int32_t> hi(static_cast<std::size_t>(k));
  std::vector<float> hw(static_cast<std::size_t>(k));
  std::int64_t compared = 0, near = 0, bad = 0, ties = 0;
  for (std::int64_t t = 0; t < T; ++t) {
    const float* l = logits.data() + t * E;
    const float margin = route_token(l, bias.data(), c.spec, E, k, hi.data(), hw.data(), work);
    for (std::int64_t j = 0; j < k; ++j) {  // every output written, in range
      const auto e = idx[static_cast<std::size_t>(t * k + j)];
      bad += e < 0 || e >= E || !std::isfinite(w[static_cast<std::size_t>(t * k + j)]);
    }
    if (margin < 1e-6f || group_gap(l, bias.data(), c.spec, E) < 1e-6f) {
      ++near;
      continue;
    }
    ++compared;
    for (std::int64_t j = 0; j < k; ++j) {
      const auto q = static_cast<std::size_t>(t * k + j);
      if (idx[q] != hi[static_cast<std::size_t>(j)]) {
        if (bad++ < 5) ADD_FAILURE() << c.name << " token " << t << " pick " << j << ": " << idx[q] << " vs host " << hi[static_cast<std::size_t>(j)];
        continue;
      }
      const float ref = hw[static_cast<std::size_t>(j)];
      if (!(std::fabs(w[q] - ref) <= 1e-5f * std::fabs(ref) + 1e-7f)) {
        if (bad++ < 5) ADD_FAILURE() << c.name << " token " << t << " weight " << j << ": " << w[q] << " vs host " << ref;
      }
    }
    // the tie pair: when both tied experts were taken, expert 0 comes before E-1
    if (t % 7 == 0 && E > 1) {
      const auto b0 = std::find(hi.begin(), hi.end(), 0), b1 = std::find(hi.begin(), hi.end(), E - 1);
      if (b0 != hi.end() && b1 != hi.end()) ++ties;
    }
  }
  EXPECT_EQ(bad, 0) << c.name;
  EXPECT_GT(compared, T * 3 / 4) << c.name << ": near-ties " << near;
  if (T >= 7 && E > 2 && c.spec.groups == 1) {
    EXPECT_GT(ties, 0) << c.name << ": the tie pair was never selected";
  }
}

RouterSpec spec_of(Score s, bool bias, std::int64_t groups, std::int64_t topk_groups, GroupScore gs, bool before,
                   bool normalize, double scale) {
  return {.score = s, .selection_bias = bias, .groups = groups, .topk_groups = topk_groups, .group_score = gs,
          .topk_before_score = before, .normalize = normalize, .scale = scale};
}

TEST(StdRouterGpu, EveryFamilyMatchesTheHostDefinition) {
  const std::vector<RouteCase> cases = {
      {"deepseek-v3", spec_of(Score::sigmoid, true, 8, 4, GroupScore::top2_sum, false, true, 2.5), 4099, 256, 8},
      {"qwen3", spec_of(Score::softmax, false, 1, 1, GroupScore::max, false, true, 1.0), 2048, 128, 8},
      {"mixtral", spec_of(Score::softmax, false, 1, 1, GroupScore::max, false, true, 1.0), 2048, 8, 2},
      {"gpt-oss", spec_of(Score::softmax, false, 1, 1, GroupScore::max, true, false, 1.0), 2048, 128, 4},
      {"glm-4.5-air", spec_of(Score::sigmoid, true, 1, 1, GroupScore::max, false, true, 1.0), 2048, 128, 8},
      {"softmax un-normalised, 512 experts", spec_of(Score::softmax, false, 1, 1, GroupScore::max, false, false, 1.0), 1000, 512, 32},
      {"sigmoid of the k selected", spec_of(Score::sigmoid, false, 1, 1, GroupScore::max, true, false, 1.0), 1000, 96, 6},
      {"group max, 64 groups of 8", spec_of(Score::softmax, false, 64, 3, GroupScore::max, false, true, 16.0), 1000, 512, 12},
      {"odd expert count 33, groups of 11", spec_of(Score::sigmoid, true, 3, 2, GroupScore::top2_sum, false, false, 1.0), 999, 33, 5},
      {"one token, one expert", spec_of(Score::softmax, false, 1, 1, GroupScore::max, false, false, 1.0), 1, 1, 1},
      {"one token", spec_of(Score::sigmoid, true, 8, 4, GroupScore::top2_sum, false, true, 2.5), 1, 256, 8},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    check_route(c);
  }
}

// ---- expert MLPs ------------------------------------------------------------------------

struct MlpCase {
  std::string name;
  std::vector<std::int64_t> rows;
  std::int64_t h, inter;
  Activation act;
};

// Seeded bf16 bits (tensor `tensor` of seed 7).
std::vector<std::uint16_t> seeded_bits(std::size_t n, std::uint32_t tensor, float scale) {
  std::vector<std::uint16_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = float_to_bf16_bits(seeded_value(7, tensor, i, scale));
  return v;
}

// The largest |device - CPU| over the rows' outputs, and the largest |CPU|: the CPU product with
// the device's roundings (bf16 gate/up and activation), fp64 accumulation.
std::pair<double, double> mlp_error(const std::vector<std::uint16_t>& x, const std::vector<std::uint16_t>& w13,
                                    const std::vector<std::uint16_t>& wd, const std::vector<std::uint16_t>& out,
                                    const std::vector<std::int64_t>& rows, std::int64_t H, std::int64_t I,
                                    const ActivationSpec& as) {
  double max_err = 0, max_ref = 0;
  std::int64_t row = 0;
  std::vector<float> a(static_cast<std::size_t>(I));
  for (std::int64_t e = 0; e < static_cast<std::int64_t>(rows.size()); ++e)
    for (std::int64_t r = 0; r < rows[static_cast<std::size_t>(e)]; ++r, ++row) {
      const auto* xr = x.data() + row * H;
      for (std::int64_t i = 0; i < I; ++i) {
        double g = 0, u = 0;
        for (std::int64_t q = 0; q < H; ++q) {
          const double xv = bf16_bits_to_float(xr[q]);
          g += xv * bf16_bits_to_float(w13[static_cast<std::size_t>((e * 2 * I + i) * H + q)]);
          u += xv * bf16_bits_to_float(w13[static_cast<std::size_t>((e * 2 * I + I + i) * H + q)]);
        }
        a[static_cast<std::size_t>(i)] = round_to_bf16(glu(round_to_bf16(float(g)), round_to_bf16(float(u)), as));
      }
      for (std::int64_t q = 0; q < H; ++q) {
        double acc = 0;
        for (std::int64_t i = 0; i < I; ++i)
          acc += double(a[static_cast<std::size_t>(i)]) * bf16_bits_to_float(wd[static_cast<std::size_t>((e * H + q) * I + i)]);
        const double got = bf16_bits_to_float(out[static_cast<std::size_t>(row * H + q)]);
        max_err = std::max(max_err, std::isfinite(got) ? std::fabs(got - acc) : INFINITY);
        max_ref = std::max(max_ref, std::fabs(acc));
      }
    }
  return {max_err, max_ref};
}

void check_mlp(const MlpCase& c, StdExpertPath path) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  auto dev = make_cuda_device(0);
  auto ops = make_cuda_std_ops(*dev);
  ops->set_expert_path(path);
  const std::int64_t E = static_cast<std::int64_t>(c.rows.size()), H = c.h, I = c.inter;
  std::int64_t R = 0;
  for (auto r : c.rows) R += r;
  const auto x = seeded_bits(static_cast<std::size_t>(R * H), 1, 1.5f);
  const auto w13 = seeded_bits(static_cast<std::size_t>(E * 2 * I * H), 2, std::sqrt(3.0f / float(H)));
  const auto wd = seeded_bits(static_cast<std::size_t>(E * H * I), 3, std::sqrt(3.0f / float(I)));
  Buffer dx = dev->upload(x), d13 = dev->upload(w13), dd = dev->upload(wd);
  Buffer gu = dev->alloc(static_cast<std::size_t>(std::max<std::int64_t>(R, 1) * 2 * I) * 2);
  Buffer act = dev->alloc(static_cast<std::size_t>(std::max<std::int64_t>(R, 1) * I) * 2);
  Buffer y = dev->upload(std::vector<std::uint16_t>(static_cast<std::size_t>(std::max<std::int64_t>(R, 1) * H), 0x7fc0));
  ActivationSpec as;
  as.kind = c.act;
  ops->expert_mlp(dx.data(), d13.data(), dd.data(), gu.data(), act.data(), y.data(), c.rows, H, I, as,
                  dev->compute_stream());
  const auto out = dev->download<std::uint16_t>(y.data(), static_cast<std::size_t>(R * H));
  const auto [max_err, max_ref] = mlp_error(x, w13, wd, out, c.rows, H, I, as);
  EXPECT_EQ(ops->path("expert_compute").find("refused"), std::string::npos) << "cuBLAS refused the grouped GEMM";
  if (path == StdExpertPath::wgmma) {  // the GPU machines are H200s: the kernels must have run, not the fallback
    EXPECT_NE(ops->path("expert_compute").find("wgmma grouped"), std::string::npos) << ops->path("expert_compute");
  }
  EXPECT_LE(max_err, 2e-2 * max_ref + 1e-3) << c.name << " (" << to_string(path) << "): max |ref| " << max_ref;
}

std::vector<MlpCase> mlp_cases() {
  std::vector<std::int64_t> many(1100);
  for (std::size_t e = 0; e < many.size(); ++e) many[e] = e % 5 == 0 ? 0 : 1 + static_cast<std::int64_t>(e % 3);
  return {
      {"one row", {1}, 64, 32, Activation::silu_glu},
      {"empty experts, K 100 and I 52 off every tile", {0, 3, 0, 130, 1}, 100, 52, Activation::silu_glu},
      {"clamped SwiGLU, vectorised activation", {17, 0, 257, 64}, 256, 128, Activation::swiglu_clamped},
      {"1100 groups", many, 48, 24, Activation::silu_glu},
  };
}

TEST(StdExpertMlpGpu, GroupedMatchesTheCpuProduct) {
  for (const auto& c : mlp_cases()) check_mlp(c, StdExpertPath::grouped);
}
TEST(StdExpertMlpGpu, PerExpertMatchesTheCpuProduct) {
  for (const auto& c : mlp_cases()) check_mlp(c, StdExpertPath::per_expert);
}
TEST(StdExpertMlpGpu, PaddedBatchedMatchesTheCpuProduct) {
  for (const auto& c : mlp_cases()) check_mlp(c, StdExpertPath::padded);
}
TEST(StdExpertMlpGpu, MultiStreamMatchesTheCpuProduct) {
  for (const auto& c : mlp_cases()) check_mlp(c, StdExpertPath::multi_stream);
}

// The grouped wgmma kernels (hidden and inter multiples of 8): every edge of their tiling, in
// launch variants (2-CTA pairs or single CTAs, half tiles or not, list in pair order or not,
// epilogue deferred into the next tile (spread over its K steps or at once) or in place, L2
// eviction priorities of the copies).
std::vector<MlpCase> wgmma_cases() {
  std::vector<std::int64_t> many(1100);
  for (std::size_t e = 0; e < many.size(); ++e) many[e] = e % 5 == 0 ? 0 : 1 + static_cast<std::int64_t>(e % 3);
  std::vector<std::int64_t> spread(300);
  for (std::size_t e = 0; e < spread.size(); ++e) spread[e] = static_cast<std::int64_t>((e * 37) % 41);
  return {
      {"one row", {1}, 64, 32, Activation::silu_glu},
      {"empty experts, K 200 and 104 off the 64 step, N off 256 / 128", {0, 3, 0, 130, 1}, 200, 104, Activation::silu_glu},
      {"clamped SwiGLU (gpt-oss), a tile of 129 rows", {17, 0, 257, 64}, 256, 128, Activation::swiglu_clamped},
      {"h 520, I 392: several column blocks, partial last ones", {300, 0, 129}, 520, 392, Activation::swiglu_clamped},
      {"tails of 72, 64, 65 and 0 rows, one down column block", {200, 64, 65, 128}, 136, 200, Activation::silu_glu},
      {"1100 groups", many, 48, 24, Activation::silu_glu},
      {"300 experts: several tiles per CTA, each epilogue deferred into the next tile", spread, 256, 136,
       Activation::swiglu_clamped},
  };
}
TEST(StdExpertMlpGpu, WgmmaMatchesTheCpuProduct) {
  const auto chosen = cuda::std_grouped_variant();
  // Each as the modifiers of the default variant ("" is the default itself).
  const char* const variants[] = {"pair-order",
                                  "",
                                  "whole-tiles+pair-order",
                                  "unpaired+pair-order",
                                  "unpaired+whole-tiles",
                                  "in-place",
                                  "unpaired+in-place",
                                  "at-once",
                                  "unpaired+pair-order+at-once",
                                  "a-evict-last+b-evict-first",
                                  "unpaired+a-evict-first+b-evict-last"};
  for (const char* words : variants) {
    const auto v = cuda::parse_grouped_variant(words);
    SCOPED_TRACE(cuda::describe(v));
    cuda::std_grouped_set_variant(v);
    for (const auto& c : wgmma_cases()) check_mlp(c, StdExpertPath::wgmma);
  }
  cuda::std_grouped_set_variant(chosen);
}

// The device schedule: the three launches captured once in a CUDA graph with one set of counts,
// then replayed after other counts (same total) were written into the device buffer; the output
// follows the new counts.
TEST(StdExpertMlpGpu, WgmmaGraphFollowsDeviceCounts) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  auto dev = make_cuda_device(0);
  const std::int64_t H = 136, I = 72, R = 300;
  const std::vector<std::int64_t> first{5, 0, 200, 95}, second{0, 130, 1, 169};
  const auto E = static_cast<std::int64_t>(first.size());
  if (!cuda::std_grouped_sm90_supported(H, I, E)) GTEST_SKIP() << "not a compute capability 9.0 device";
  const auto x = seeded_bits(static_cast<std::size_t>(R * H), 11, 1.5f);
  const auto w13 = seeded_bits(static_cast<std::size_t>(E * 2 * I * H), 12, std::sqrt(3.0f / float(H)));
  const auto wd = seeded_bits(static_cast<std::size_t>(E * H * I), 13, std::sqrt(3.0f / float(I)));
  Buffer dx = dev->upload(x), d13 = dev->upload(w13), dd = dev->upload(wd);
  Buffer act = dev->alloc(static_cast<std::size_t>(R * I) * 2), y = dev->alloc(static_cast<std::size_t>(R * H) * 2);
  Buffer counts = dev->upload(std::vector<int>(first.begin(), first.end()));
  Buffer work = dev->alloc(static_cast<std::size_t>(cuda::std_grouped_work_bytes(R, E, H, I)));
  const auto w = cuda::std_grouped_work(work.data(), R, E, H, I);
  ActivationSpec as;
  const cudaStream_t st = detail::cuda_stream(dev->compute_stream());
  auto launch = [&] {
    cuda::std_expert_mlp_sm90(dx.as<__nv_bfloat16>(), d13.as<__nv_bfloat16>(), dd.as<__nv_bfloat16>(),
                              act.as<__nv_bfloat16>(), y.as<__nv_bfloat16>(), counts.as<int>(), E, R, H, I, as, w, st);
  };
  launch();  // once outside the capture (the kernels' one-time attributes)
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  launch();
  ASSERT_EQ(cudaStreamEndCapture(st, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (const auto* rows : {&first, &second}) {
    const std::vector<int> c(rows->begin(), rows->end());
    ASSERT_EQ(cudaMemcpyAsync(counts.data(), c.data(), c.size() * sizeof(int), cudaMemcpyHostToDevice, st), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, st), cudaSuccess);
    const auto out = dev->download<std::uint16_t>(y.data(), static_cast<std::size_t>(R * H));
    const auto [max_err, max_ref] = mlp_error(x, w13, wd, out, *rows, H, I, as);
    EXPECT_LE(max_err, 2e-2 * max_ref + 1e-3) << "counts " << (*rows)[0] << ", " << (*rows)[1] << ", ...";
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

}  // namespace
}  // namespace layerbench::moe
