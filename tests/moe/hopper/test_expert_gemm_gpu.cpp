// The expert kernels (fused gate/up GEMM + SwiGLU7: Hopper wgmma and mma.sync; Hopper down
// GEMM) against a CPU fp32 computation from the same bf16 inputs, on tile lists with partial
// tiles, K and column tails (d not a multiple of 64, I not a multiple of 64) and gaps between
// expert slots (the bucketed layout): rows outside every tile must stay untouched.
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
#include <cstring>
#include <functional>
#include <vector>

namespace layerbench::moe {
namespace {

struct Case {
  std::int64_t d, inter;
  std::vector<int> counts;  // rows per expert
  std::int64_t gap;         // padding rows after each expert's slot
};

constexpr std::uint16_t kPoison = 0x7f7f;

// Expert slots (count + gap rows each, in expert order) and their 128-row tiles, listed in
// reverse expert order: the kernels take the list as given.
struct Slots {
  std::vector<std::int64_t> base;
  std::int64_t rows = 0;
  std::vector<std::uint8_t> tile_bytes;  // cuda::ExpertTile[]
  std::int64_t n_tiles = 0;
};

Slots make_slots(const Case& cs, std::int64_t tile_rows = kExpertTileRows) {
  Slots s;
  const auto E = static_cast<std::int64_t>(cs.counts.size());
  s.base.resize(E);
  for (std::int64_t e = 0; e < E; ++e) {
    s.base[e] = s.rows;
    s.rows += cs.counts[e] + cs.gap;
  }
  std::vector<int> order(E);
  for (std::int64_t e = 0; e < E; ++e) order[e] = static_cast<int>(E - 1 - e);
  std::vector<cuda::ExpertTile> tiles(static_cast<std::size_t>(expert_tile_count(cs.counts, order, tile_rows)));
  fill_expert_tiles(cs.counts, s.base, order, tiles, tile_rows);
  s.tile_bytes.resize(tiles.size() * sizeof(cuda::ExpertTile));
  std::memcpy(s.tile_bytes.data(), tiles.data(), s.tile_bytes.size());
  s.n_tiles = static_cast<std::int64_t>(tiles.size());
  return s;
}

std::vector<std::uint16_t> seeded_bf16(std::size_t n, std::uint32_t tensor, float scale) {
  std::vector<std::uint16_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = float_to_bf16_bits(seeded_value(11, tensor, i, scale));
  return v;
}

// Compares `got` (rows, cols) with ref(e, row, col) on every live row and checks that padding
// rows still hold the poison; tolerance 1% of |ref| + 0.2% of max |ref|.
void compare(const char* what, const Case& cs, const Slots& s, std::int64_t cols, const std::vector<std::uint16_t>& got,
             const std::function<float(std::int64_t e, std::int64_t r, std::int64_t c)>& ref_of) {
  std::vector<float> ref(got.size(), 0.0f);
  double max_ref = 0, max_err = 0;
  for (std::size_t e = 0; e < cs.counts.size(); ++e)
    for (std::int64_t r = s.base[e]; r < s.base[e] + cs.counts[e]; ++r)
      for (std::int64_t c = 0; c < cols; ++c) {
        ref[r * cols + c] = ref_of(static_cast<std::int64_t>(e), r, c);
        max_ref = std::max(max_ref, double(std::fabs(ref[r * cols + c])));
      }
  std::int64_t bad = 0, padding_written = 0;
  for (std::size_t e = 0; e < cs.counts.size(); ++e)
    for (std::int64_t r = s.base[e]; r < s.base[e] + cs.counts[e] + cs.gap; ++r)
      for (std::int64_t c = 0; c < cols; ++c) {
        const std::uint16_t v = got[r * cols + c];
        if (r >= s.base[e] + cs.counts[e]) {
          padding_written += v != kPoison;
          continue;
        }
        const double want = ref[r * cols + c], err = std::fabs(double(bf16_bits_to_float(v)) - want);
        max_err = std::max(max_err, err);
        if (err > 1e-2 * std::fabs(want) + 2e-3 * max_ref) {
          if (bad < 5)
            std::printf("expert %zu row %lld col %lld: got %g want %g\n", e, static_cast<long long>(r - s.base[e]),
                        static_cast<long long>(c), bf16_bits_to_float(v), want);
          ++bad;
        }
      }
  std::printf("%s d %lld I %lld: max_abs_err %.3g (max |ref| %.3g), %lld bad, %lld padding rows written\n", what,
              static_cast<long long>(cs.d), static_cast<long long>(cs.inter), max_err, max_ref,
              static_cast<long long>(bad), static_cast<long long>(padding_written));
  EXPECT_GT(max_ref, 0.1);
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(padding_written, 0);
}

// act = swiglu7(x W13[e][:, :I], x W13[e][:, I:]) through a gate/up kernel (sm90: the Hopper
// kernel in variant v).
void check_gate_up(const Case& cs, bool sm90, const cuda::Sm90Variant& v = {},
                   std::int64_t tile_rows = kExpertTileRows) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  if (sm90 && !cuda::gate_up_swiglu_sm90_supported(cs.d, cs.inter)) GTEST_SKIP() << "not a compute capability 9.0 device";
  auto dev = make_cuda_device(0);
  const std::int64_t d = cs.d, I = cs.inter, E = static_cast<std::int64_t>(cs.counts.size());
  const Slots s = make_slots(cs, tile_rows);
  const auto x = seeded_bf16(s.rows * d, 1, 1.7f), w = seeded_bf16(E * d * 2 * I, 2, 1.0f / std::sqrt(float(d)));
  Buffer dx = dev->upload(x), dw = dev->upload(w), dt = dev->upload(s.tile_bytes);
  Buffer dact = dev->upload(std::vector<std::uint16_t>(s.rows * I, kPoison));
  const auto st = detail::cuda_stream(dev->compute_stream());
  const auto* xs = dx.as<cuda::bf16>();
  const auto* tl = dt.as<cuda::ExpertTile>();
  if (sm90) {
    Buffer dwk = dev->alloc(static_cast<std::size_t>(cuda::w13_kmajor_elems(E, d, I)) * 2);
    cuda::prepare_w13_kmajor(dw.as<cuda::bf16>(), dwk.as<cuda::bf16>(), E, d, I, st);
    cuda::gate_up_swiglu_sm90(xs, s.rows, dwk.as<cuda::bf16>(), E, dact.as<cuda::bf16>(), tl, s.n_tiles, d, I, st, false, v,
                              tile_rows);
    dev->synchronize(dev->compute_stream());
  } else {
    cuda::gate_up_swiglu(xs, dw.as<cuda::bf16>(), dact.as<cuda::bf16>(), tl, s.n_tiles, d, I, st);
  }
  const auto got = dev->download<std::uint16_t>(dact.data(), s.rows * I);
  compare(sm90 ? (tile_rows == kWideTileRows ? "wgmma 192-row tiles" : "wgmma") : "mma.sync", cs, s, I, got, [&](std::int64_t e, std::int64_t r, std::int64_t c) {
    float g = 0, u = 0;
    for (std::int64_t k = 0; k < d; ++k) {
      const float xv = bf16_bits_to_float(x[r * d + k]);
      g += xv * bf16_bits_to_float(w[(e * d + k) * 2 * I + c]);
      u += xv * bf16_bits_to_float(w[(e * d + k) * 2 * I + I + c]);
    }
    return swiglu7(g, u);
  });
}

// yd = act W_down[e] through the Hopper down kernel in variant v.
void check_down(const Case& cs, const cuda::Sm90Variant& v = {}) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  if (!cuda::down_sm90_supported(cs.d, cs.inter)) GTEST_SKIP() << "not a compute capability 9.0 device";
  auto dev = make_cuda_device(0);
  const std::int64_t d = cs.d, I = cs.inter, E = static_cast<std::int64_t>(cs.counts.size());
  const Slots s = make_slots(cs);
  const auto a = seeded_bf16(s.rows * I, 3, 2.0f), w = seeded_bf16(E * I * d, 4, 1.0f / std::sqrt(float(I)));
  Buffer da = dev->upload(a), dw = dev->upload(w), dt = dev->upload(s.tile_bytes);
  Buffer dy = dev->upload(std::vector<std::uint16_t>(s.rows * d, kPoison));
  Buffer dwk = dev->alloc(static_cast<std::size_t>(cuda::wdown_kmajor_elems(E, I)) * 2);
  const auto st = detail::cuda_stream(dev->compute_stream());
  cuda::prepare_wdown_kmajor(dw.as<cuda::bf16>(), dwk.as<cuda::bf16>(), E, d, I, st);
  cuda::down_sm90(da.as<cuda::bf16>(), s.rows, dwk.as<cuda::bf16>(), E, dy.as<cuda::bf16>(), dt.as<cuda::ExpertTile>(),
                  s.n_tiles, d, I, st, nullptr, false, v);
  const auto got = dev->download<std::uint16_t>(dy.data(), s.rows * d);
  compare("down wgmma", cs, s, d, got, [&](std::int64_t e, std::int64_t r, std::int64_t c) {
    float acc = 0;
    for (std::int64_t k = 0; k < I; ++k) acc += bf16_bits_to_float(a[r * I + k]) * bf16_bits_to_float(w[(e * I + k) * d + c]);
    return acc;
  });
}

const Case kCases[] = {
    {256, 128, {200, 77, 133, 1}, 5},  // the released d_head; partial tiles; 1-row expert
    {200, 72, {129, 64, 3}, 8},        // K tail (d % 64 = 8) and column tail (I % 64 = 8)
    {64, 192, {300}, 0},               // one k slab, three column blocks
    {128, 64, {0, 70, 0, 2}, 4},       // two k slabs, one column block, empty experts
    {192, 136, {5}, 0},                // three k slabs, fewer rows than a tile in the matrix
};

// The kernels' variants besides the defaults (cuda::Sm90Variant): each flag flipped, and L2
// prefetching into the next tile (distance beyond the 20 k steps of I 1280).
std::vector<cuda::Sm90Variant> variants() {
  std::vector<cuda::Sm90Variant> out(6);
  out[1].tanh_sigmoid = !out[1].tanh_sigmoid;
  out[2].staged_epilogue = !out[2].staged_epilogue;
  out[3].half_tiles = !out[3].half_tiles;
  out[4].down_prefetch = 8;
  out[4].down_prefetch_b = true;
  out[4].gate_up_prefetch = 16;
  out[5].staged_epilogue = out[5].half_tiles = false;
  out[5].down_prefetch = 30;
  out[5].gate_up_prefetch = 5;
  return out;
}

TEST(ExpertGemmGpu, HopperKernelMatchesTheCpu) {
  for (const auto& v : variants())
    for (const auto& c : kCases) check_gate_up(c, true, v);
}
// The wide kernel (192-row tiles, three consumer warpgroups; built with the tanh sigmoid):
// tiles of 1, 2 and 3 live 64-row blocks, K and column tails, more tiles than SMs.
TEST(ExpertGemmGpu, HopperWideKernelMatchesTheCpu) {
  for (const int pf : {0, 12}) {
    cuda::Sm90Variant v;
    v.gate_up_prefetch = pf;
    for (const auto& c : kCases) check_gate_up(c, true, v, kWideTileRows);
    check_gate_up({256, 1280, {400, 192, 129, 250}, 2}, true, v, kWideTileRows);  // the released I
    check_gate_up({64, 136, std::vector<int>(150, 200), 1}, true, v, kWideTileRows);
  }
}
TEST(ExpertGemmGpu, HopperDownKernelMatchesTheCpu) {
  for (const auto& v : variants()) {
    for (const auto& c : kCases) check_down(c, v);
    check_down({256, 1280, {130, 5}, 3}, v);  // the released I: 20 k steps per tile
    // More tiles than SMs: the persistent CTAs walk the list more than once; 2-row half tiles
    // among them.
    check_down({64, 64, std::vector<int>(160, 130), 2}, v);
  }
}
TEST(ExpertGemmGpu, MmaSyncKernelMatchesTheCpu) {
  for (const auto& c : kCases) check_gate_up(c, false);
}

}  // namespace
}  // namespace layerbench::moe
