// FP8 e4m3 on the host (moe/fp8.hpp): the format's exact values, rounding and saturation, the
// scale recipes' round trips, and the grouped expert oracle.
#include "moe/fp8.hpp"
#include "moe/config/router.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace layerbench::moe::fp8 {
namespace {

TEST(Fp8E4m3, ExactValuesOfTheFormat) {
  EXPECT_EQ(e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(e4m3_to_float(0xFE), -448.0f);
  EXPECT_TRUE(std::isnan(e4m3_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3_to_float(0xFF)));
  EXPECT_EQ(e4m3_to_float(0x78), 256.0f);  // exponent 15 is a normal binade in e4m3fn
  EXPECT_EQ(e4m3_to_float(0x08), 0x1p-6f);  // smallest normal
  EXPECT_EQ(e4m3_to_float(0x01), 0x1p-9f);  // smallest subnormal
  EXPECT_EQ(e4m3_to_float(0x07), 7 * 0x1p-9f);
  EXPECT_EQ(e4m3_to_float(0x38), 1.0f);
  EXPECT_EQ(e4m3_to_float(0x39), 1.125f);
  EXPECT_EQ(e4m3_to_float(0x80), -0.0f);
  // Every finite code round-trips.
  for (int v = 0; v < 256; ++v) {
    if ((v & 0x7F) == 0x7F) continue;
    EXPECT_EQ(e4m3_from_float(e4m3_to_float(static_cast<std::uint8_t>(v))), v) << v;
  }
}

TEST(Fp8E4m3, SaturatesAndKeepsNaN) {
  EXPECT_EQ(e4m3_from_float(448.0f), 0x7E);
  EXPECT_EQ(e4m3_from_float(460.0f), 0x7E);
  EXPECT_EQ(e4m3_from_float(1e30f), 0x7E);
  EXPECT_EQ(e4m3_from_float(std::numeric_limits<float>::infinity()), 0x7E);
  EXPECT_EQ(e4m3_from_float(-std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_EQ(e4m3_from_float(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(e4m3_from_float(-std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(e4m3_from_float(-1e-30f), 0x80);
  EXPECT_EQ(e4m3_from_float(0x1p-11f), 0x00);  // under half the smallest subnormal
}

TEST(Fp8E4m3, RoundsToNearestTiesToEven) {
  // 1 + 1/16 is halfway between 1 (0x38, even) and 1.125 (0x39): to 1; 1.1875 between 1.125 and
  // 1.25 (0x3A, even): up.
  EXPECT_EQ(e4m3_from_float(1.0625f), 0x38);
  EXPECT_EQ(e4m3_from_float(std::nextafter(1.0625f, 2.0f)), 0x39);
  EXPECT_EQ(e4m3_from_float(1.1875f), 0x3A);
  EXPECT_EQ(e4m3_from_float(std::nextafter(1.1875f, 0.0f)), 0x39);
  // 432 is halfway between 416 (0x7D) and 448 (0x7E, even).
  EXPECT_EQ(e4m3_from_float(432.0f), 0x7E);
  EXPECT_EQ(e4m3_from_float(std::nextafter(432.0f, 0.0f)), 0x7D);
  // Subnormal ties: 1.5 * 2^-9 -> 2 * 2^-9 (even), 0.5 * 2^-9 -> 0, 2.5 * 2^-9 -> 2 * 2^-9.
  EXPECT_EQ(e4m3_from_float(1.5f * 0x1p-9f), 0x02);
  EXPECT_EQ(e4m3_from_float(0.5f * 0x1p-9f), 0x00);
  EXPECT_EQ(e4m3_from_float(2.5f * 0x1p-9f), 0x02);
  EXPECT_EQ(e4m3_from_float(7.5f * 0x1p-9f), 0x08);  // up into the smallest normal
  // Every midpoint between neighbouring positive codes goes to the even one.
  for (int v = 0; v < 0x7E; ++v) {
    const float mid = (e4m3_to_float(static_cast<std::uint8_t>(v)) + e4m3_to_float(static_cast<std::uint8_t>(v + 1))) / 2;
    EXPECT_EQ(e4m3_from_float(mid), (v & 1) ? v + 1 : v) << v;
    EXPECT_EQ(e4m3_from_float(-mid), 0x80 | ((v & 1) ? v + 1 : v)) << v;
  }
}

std::vector<float> randn(std::int64_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = d(g);
  return v;
}

TEST(Fp8Quantize, ScalesPerRecipe) {
  // 2 groups of 200 rows x 300 columns: neither is a multiple of 128 (edge blocks).
  const std::int64_t G = 2, R = 200, C = 300;
  auto x = randn(G * R * C, 1);
  x[5] = 3000.0f;  // row 0, column 5: its row, its 1x128 group and its 128x128 block take this amax
  const auto rw = quantize(x.data(), G, R, C, Scaling::rowwise);
  const auto b1 = quantize(x.data(), G, R, C, Scaling::block_1x128);
  const auto bb = quantize(x.data(), G, R, C, Scaling::block_128x128);
  ASSERT_EQ(rw.scales.size(), static_cast<std::size_t>(G * R));
  ASSERT_EQ(b1.scales.size(), static_cast<std::size_t>(G * R * 3));
  ASSERT_EQ(bb.scales.size(), static_cast<std::size_t>(G * 2 * 3));
  EXPECT_EQ(rw.scales[0], 3000.0f / 448.0f);
  EXPECT_EQ(b1.scales[0], 3000.0f / 448.0f);
  EXPECT_EQ(bb.scales[0], 3000.0f / 448.0f);
  EXPECT_EQ(rw.q[5], 0x7E);  // the group's amax lands on 448 exactly
  EXPECT_LT(b1.scales[1], 10.0f / 448.0f);  // row 0's second group does not see it
  EXPECT_LT(bb.scales[1], 10.0f / 448.0f);
  EXPECT_LT(bb.scales[3], 10.0f / 448.0f);  // block row 1 of group 0
  // Group 1's first block starts at row 200: it is not mixed with group 0's last rows.
  float amax = 0;
  for (std::int64_t r = 200; r < 328; ++r)
    for (std::int64_t c = 0; c < 128; ++c) amax = std::max(amax, std::fabs(x[static_cast<std::size_t>(r * C + c)]));
  EXPECT_EQ(bb.scales[6], amax / 448.0f);
  // Round trip: every element within half an e4m3 ulp (2^-4 relative to the element, or the
  // subnormal step of its scale), and scaled codes at most 448.
  for (const auto* m : {&rw, &b1, &bb}) {
    const auto d = dequantize(*m);
    for (std::int64_t i = 0; i < G * R * C; ++i) {
      const float s = m->scale_at(i / C, i % C), v = x[static_cast<std::size_t>(i)];
      EXPECT_LE(std::fabs(v / s), 448.0f * (1 + 1e-6f));
      EXPECT_LE(std::fabs(d[static_cast<std::size_t>(i)] - v), std::max(std::fabs(v) / 16, s * 0x1p-10f) * (1 + 1e-5f))
          << to_string(m->scaling) << " element " << i;
    }
  }
}

TEST(Fp8Quantize, AllZeroGroupUsesTheFloor) {
  std::vector<float> x(256, 0.0f);
  x[200] = 1.0f;
  const auto m = quantize(x.data(), 1, 1, 256, Scaling::block_1x128);
  EXPECT_EQ(m.scales[0], kAmaxFloor / kE4m3Max);
  EXPECT_EQ(m.scales[1], 1.0f / kE4m3Max);
  const auto d = dequantize(m);
  EXPECT_EQ(d[0], 0.0f);
  EXPECT_EQ(d[200], 1.0f);
}

TEST(Fp8Oracle, GroupedGemmsMatchAPlainLoop) {
  const std::int64_t h = 96, I = 40, E = 3;
  const std::vector<std::int64_t> counts{2, 0, 3};
  auto x = randn(5 * h, 2), w13 = randn(E * 2 * I * h, 3, 0.1f), wd = randn(E * h * I, 4, 0.1f);
  ActivationSpec act;
  const auto a = grouped_gate_up(x, w13, counts, h, I, act);
  ASSERT_EQ(a.size(), static_cast<std::size_t>(5 * I));
  // row 3 belongs to expert 2; column 7
  double g = 0, u = 0;
  for (std::int64_t k = 0; k < h; ++k) {
    g += double(x[3 * h + k]) * w13[static_cast<std::size_t>((2 * 2 * I + 7) * h + k)];
    u += double(x[3 * h + k]) * w13[static_cast<std::size_t>((2 * 2 * I + I + 7) * h + k)];
  }
  EXPECT_NEAR(a[3 * I + 7], glu(float(g), float(u), act), 1e-6);
  std::vector<float> af(a.begin(), a.end());
  const auto y = grouped_down(af, wd, counts, I, h);
  double s = 0;
  for (std::int64_t k = 0; k < I; ++k) s += double(af[1 * I + k]) * wd[static_cast<std::size_t>((0 * h + 11) * I + k)];
  EXPECT_NEAR(y[1 * h + 11], s, 1e-9);
  EXPECT_LT(relative_error(std::vector<float>(y.begin(), y.end()), y), 1e-7);  // fp32 rounding of the output only
  auto bad = std::vector<float>(y.begin(), y.end());
  bad[0] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isinf(relative_error(bad, y)));
}

}  // namespace
}  // namespace layerbench::moe::fp8
