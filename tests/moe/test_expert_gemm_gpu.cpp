// The expert kernels (fused gate/up GEMM + SwiGLU7: Hopper wgmma and mma.sync; Hopper down
// GEMM) against a CPU fp32 computation from the same bf16 inputs, on tile lists with partial tiles, K and column
// tails (d not a multiple of 64, I not a multiple of 64) and gaps between expert slots (the
// bucketed layout): rows outside every tile must stay untouched.
#include "collectives/cuda_internal.hpp"
#include "collectives/device.hpp"
#include "collectives/types.hpp"
#include "moe/cuda_kernels.cuh"
#include "moe/init.hpp"
#include "moe/ops.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace layerbench::moe {
namespace {

struct Case {
  std::int64_t d, inter;
  std::vector<int> counts;  // rows per expert
  std::int64_t gap;         // padding rows after each expert's slot
};

void check_kernel(const Case& cs, bool sm90) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  if (sm90 && !cuda::gate_up_swiglu_sm90_supported(cs.d, cs.inter)) GTEST_SKIP() << "not a compute capability 9.0 device";
  auto dev = make_cuda_device(0);
  const std::int64_t d = cs.d, I = cs.inter, E = static_cast<std::int64_t>(cs.counts.size());
  std::vector<std::int64_t> base(E);
  std::int64_t rows = 0;
  for (std::int64_t e = 0; e < E; ++e) {
    base[e] = rows;
    rows += cs.counts[e] + cs.gap;
  }
  std::vector<std::uint16_t> x(rows * d), w(E * d * 2 * I);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float_to_bf16_bits(seeded_value(11, 1, i, 1.7f));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = float_to_bf16_bits(seeded_value(11, 2, i, 1.0f / std::sqrt(float(d))));
  std::vector<cuda::ExpertTile> tiles;
  const std::int64_t tr = cuda::gate_up_swiglu_tile_rows();
  for (std::int64_t e = E - 1; e >= 0; --e)  // any order: the kernels take the list as given
    for (std::int64_t r = 0; r < cs.counts[e]; r += tr)
      tiles.push_back({base[e] + r, static_cast<int>(e), static_cast<int>(std::min<std::int64_t>(tr, cs.counts[e] - r))});
  std::vector<std::uint8_t> tile_bytes(tiles.size() * sizeof(cuda::ExpertTile));
  std::memcpy(tile_bytes.data(), tiles.data(), tile_bytes.size());
  constexpr std::uint16_t kPoison = 0x7f7f;
  Buffer dx = dev->upload(x), dw = dev->upload(w), dt = dev->upload(tile_bytes);
  Buffer dact = dev->upload(std::vector<std::uint16_t>(rows * I, kPoison));
  const auto st = detail::cuda_stream(dev->compute_stream());
  const auto* xs = static_cast<const cuda::bf16*>(dx.data());
  const auto* w13 = static_cast<const cuda::bf16*>(dw.data());
  auto* act = static_cast<cuda::bf16*>(dact.data());
  const auto* tl = static_cast<const cuda::ExpertTile*>(dt.data());
  const auto nt = static_cast<std::int64_t>(tiles.size());
  Buffer dwk;
  if (sm90) {
    dwk = dev->alloc(static_cast<std::size_t>(cuda::w13_kmajor_elems(E, d, I)) * 2);
    cuda::prepare_w13_kmajor(w13, static_cast<cuda::bf16*>(dwk.data()), E, d, I, st);
    cuda::gate_up_swiglu_sm90(xs, rows, static_cast<const cuda::bf16*>(dwk.data()), E, act, tl, nt, d, I, st);
  } else {
    cuda::gate_up_swiglu(xs, w13, act, tl, nt, d, I, st);
  }
  const auto got = dev->download<std::uint16_t>(act, rows * I);

  std::int64_t bad = 0, untouched_bad = 0;
  double max_ref = 0, max_err = 0;
  std::vector<float> ref(rows * I, 0.0f);
  for (std::int64_t e = 0; e < E; ++e)
    for (std::int64_t r = base[e]; r < base[e] + cs.counts[e]; ++r)
      for (std::int64_t c = 0; c < I; ++c) {
        float g = 0, u = 0;
        for (std::int64_t k = 0; k < d; ++k) {
          const float xv = bf16_bits_to_float(x[r * d + k]);
          g += xv * bf16_bits_to_float(w[(e * d + k) * 2 * I + c]);
          u += xv * bf16_bits_to_float(w[(e * d + k) * 2 * I + I + c]);
        }
        ref[r * I + c] = swiglu7(g, u);
        max_ref = std::max(max_ref, double(std::fabs(ref[r * I + c])));
      }
  for (std::int64_t e = 0; e < E; ++e) {
    for (std::int64_t r = base[e]; r < base[e] + cs.counts[e] + cs.gap; ++r) {
      const bool live = r < base[e] + cs.counts[e];
      for (std::int64_t c = 0; c < I; ++c) {
        const std::uint16_t v = got[r * I + c];
        if (!live) {
          untouched_bad += v != kPoison;
          continue;
        }
        const double err = std::fabs(double(bf16_bits_to_float(v)) - ref[r * I + c]);
        max_err = std::max(max_err, err);
        if (err > 1e-2 * std::fabs(ref[r * I + c]) + 2e-3 * max_ref) {
          if (bad < 5)
            std::printf("expert %lld row %lld col %lld: got %g want %g\n", static_cast<long long>(e),
                        static_cast<long long>(r - base[e]), static_cast<long long>(c), bf16_bits_to_float(v),
                        ref[r * I + c]);
          ++bad;
        }
      }
    }
  }
  std::printf("%s d %lld I %lld: max_abs_err %.3g (max |ref| %.3g), %lld bad, %lld padding rows written\n",
              sm90 ? "wgmma" : "mma.sync", static_cast<long long>(d), static_cast<long long>(I), max_err, max_ref,
              static_cast<long long>(bad), static_cast<long long>(untouched_bad));
  EXPECT_GT(max_ref, 0.1);
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(untouched_bad, 0);
}

// yd = act W_down[e] through the Hopper down kernel, against the CPU (fp32 from bf16 inputs).
void check_down(const Case& cs) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  if (!cuda::down_sm90_supported(cs.d, cs.inter)) GTEST_SKIP() << "not a compute capability 9.0 device";
  auto dev = make_cuda_device(0);
  const std::int64_t d = cs.d, I = cs.inter, E = static_cast<std::int64_t>(cs.counts.size());
  std::vector<std::int64_t> base(E);
  std::int64_t rows = 0;
  for (std::int64_t e = 0; e < E; ++e) {
    base[e] = rows;
    rows += cs.counts[e] + cs.gap;
  }
  std::vector<std::uint16_t> a(rows * I), w(E * I * d);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = float_to_bf16_bits(seeded_value(13, 1, i, 2.0f));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = float_to_bf16_bits(seeded_value(13, 2, i, 1.0f / std::sqrt(float(I))));
  std::vector<cuda::ExpertTile> tiles;
  const std::int64_t tr = cuda::gate_up_swiglu_tile_rows();
  for (std::int64_t e = 0; e < E; ++e)
    for (std::int64_t r = 0; r < cs.counts[e]; r += tr)
      tiles.push_back({base[e] + r, static_cast<int>(e), static_cast<int>(std::min<std::int64_t>(tr, cs.counts[e] - r))});
  std::vector<std::uint8_t> tile_bytes(tiles.size() * sizeof(cuda::ExpertTile));
  std::memcpy(tile_bytes.data(), tiles.data(), tile_bytes.size());
  constexpr std::uint16_t kPoison = 0x7f7f;
  Buffer da = dev->upload(a), dw = dev->upload(w), dt = dev->upload(tile_bytes);
  Buffer dy = dev->upload(std::vector<std::uint16_t>(rows * d, kPoison));
  Buffer dwk = dev->alloc(static_cast<std::size_t>(cuda::wdown_kmajor_elems(E, I)) * 2);
  const auto st = detail::cuda_stream(dev->compute_stream());
  cuda::prepare_wdown_kmajor(static_cast<const cuda::bf16*>(dw.data()), static_cast<cuda::bf16*>(dwk.data()), E, d, I, st);
  cuda::down_sm90(static_cast<const cuda::bf16*>(da.data()), rows, static_cast<const cuda::bf16*>(dwk.data()), E,
                  static_cast<cuda::bf16*>(dy.data()), static_cast<const cuda::ExpertTile*>(dt.data()),
                  static_cast<std::int64_t>(tiles.size()), d, I, st);
  const auto got = dev->download<std::uint16_t>(dy.data(), rows * d);
  std::int64_t bad = 0, untouched_bad = 0;
  double max_ref = 0, max_err = 0;
  std::vector<float> ref(rows * d, 0.0f);
  for (std::int64_t e = 0; e < E; ++e)
    for (std::int64_t r = base[e]; r < base[e] + cs.counts[e]; ++r)
      for (std::int64_t c = 0; c < d; ++c) {
        float acc = 0;
        for (std::int64_t k = 0; k < I; ++k)
          acc += bf16_bits_to_float(a[r * I + k]) * bf16_bits_to_float(w[(e * I + k) * d + c]);
        ref[r * d + c] = acc;
        max_ref = std::max(max_ref, double(std::fabs(acc)));
      }
  for (std::int64_t e = 0; e < E; ++e)
    for (std::int64_t r = base[e]; r < base[e] + cs.counts[e] + cs.gap; ++r) {
      const bool live = r < base[e] + cs.counts[e];
      for (std::int64_t c = 0; c < d; ++c) {
        const std::uint16_t v = got[r * d + c];
        if (!live) {
          untouched_bad += v != kPoison;
          continue;
        }
        const double err = std::fabs(double(bf16_bits_to_float(v)) - ref[r * d + c]);
        max_err = std::max(max_err, err);
        if (err > 1e-2 * std::fabs(ref[r * d + c]) + 2e-3 * max_ref) {
          if (bad < 5)
            std::printf("expert %lld row %lld col %lld: got %g want %g\n", static_cast<long long>(e),
                        static_cast<long long>(r - base[e]), static_cast<long long>(c), bf16_bits_to_float(v),
                        ref[r * d + c]);
          ++bad;
        }
      }
    }
  std::printf("down wgmma d %lld I %lld: max_abs_err %.3g (max |ref| %.3g), %lld bad, %lld padding rows written\n",
              static_cast<long long>(d), static_cast<long long>(I), max_err, max_ref, static_cast<long long>(bad),
              static_cast<long long>(untouched_bad));
  EXPECT_GT(max_ref, 0.1);
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(untouched_bad, 0);
}

const Case kCases[] = {
    {256, 128, {200, 77, 133, 1}, 5},   // the released d_head; partial tiles; 1-row expert
    {200, 72, {129, 64, 3}, 8},         // K tail (d % 64 = 8) and column tail (I % 64 = 8)
    {64, 192, {300}, 0},                // one k slab, three column blocks
};

TEST(ExpertGemmGpu, HopperKernelMatchesTheCpu) {
  for (const auto& c : kCases) check_kernel(c, true);
}
TEST(ExpertGemmGpu, HopperDownKernelMatchesTheCpu) {
  for (const auto& c : kCases) check_down(c);
  check_down({256, 1280, {130, 5}, 3});  // the released I: 20 k steps per tile
}
TEST(ExpertGemmGpu, MmaSyncKernelMatchesTheCpu) {
  for (const auto& c : kCases) check_kernel(c, false);
}

}  // namespace
}  // namespace layerbench::moe
