// The FP8 dispatch row (moe/standard/fp8_dispatch.hpp): its size, its layout against fp8::quantize's 1x128
// recipe, the scales of a partial last group, the rounding, the amax floor and the round trip.
#include "moe/fp8.hpp"
#include "moe/standard/fp8_dispatch.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace layerbench::moe::fp8 {
namespace {

std::vector<float> random_row(std::int64_t n, std::uint32_t seed, float spread) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(n));
  for (auto& v : x) v = d(rng) * std::exp(spread * d(rng));  // magnitudes over several binades
  return x;
}

TEST(Fp8DispatchRow, BytesPerRow) {
  EXPECT_EQ(dispatch_scale_groups(7168), 56);
  EXPECT_EQ(dispatch_row_bytes(7168), 7392);  // 51.6% of BF16's 14336 bytes (DeepEP's figure)
  EXPECT_EQ(dispatch_row_bytes(5120), 5280);
  EXPECT_EQ(dispatch_row_bytes(2048), 2112);
  EXPECT_EQ(dispatch_row_bytes(128), 132);
  EXPECT_EQ(dispatch_row_bytes(129), 137);  // a partial group of one channel has its own scale
  EXPECT_EQ(dispatch_row_bytes(200), 208);
  EXPECT_EQ(dispatch_row_bytes(32), 36);
  EXPECT_EQ(dispatch_row_bytes(2), 6);
}

// The row is fp8::quantize's 1x128 matrix of one row: the same e4m3 bytes, then the same scales.
TEST(Fp8DispatchRow, EqualsThe1x128Recipe) {
  for (std::int64_t h : {2, 32, 128, 130, 200, 7168}) {
    const auto x = random_row(h, static_cast<std::uint32_t>(h), 1.5f);
    std::vector<std::uint8_t> row(static_cast<std::size_t>(dispatch_row_bytes(h)));
    quantize_dispatch_row(x.data(), h, row.data());
    const Quantized q = quantize(x.data(), 1, 1, h, Scaling::block_1x128);
    ASSERT_EQ(static_cast<std::int64_t>(q.scales.size()), dispatch_scale_groups(h));
    for (std::int64_t c = 0; c < h; ++c) ASSERT_EQ(row[c], q.q[c]) << "hidden " << h << " channel " << c;
    for (std::int64_t g = 0; g < dispatch_scale_groups(h); ++g) {
      EXPECT_EQ(dispatch_row_scale(row.data(), h, g), q.scales[g]) << h;
      float direct = 0;  // at byte hidden + 4 g, native order (not 4-aligned for h = 2, 130)
      std::memcpy(&direct, row.data() + h + 4 * g, 4);
      EXPECT_EQ(direct, q.scales[g]);
    }
    std::vector<float> back(static_cast<std::size_t>(h));
    dequantize_dispatch_row(row.data(), h, back.data());
    EXPECT_EQ(back, dequantize(q)) << h;
  }
}

// hidden 200: channels 0..127 one group, 128..199 a partial one whose scale is its own amax / 448.
TEST(Fp8DispatchRow, PartialLastGroupHasItsOwnScale) {
  std::vector<float> x(200, 0.0f);
  for (int c = 0; c < 128; ++c) x[c] = (c % 2 ? -1.0f : 1.0f) * 100.0f * float(c + 1) / 128.0f;
  for (int c = 128; c < 200; ++c) x[c] = 0.001f * float(c - 127);  // amax 0.072
  std::vector<std::uint8_t> row(static_cast<std::size_t>(dispatch_row_bytes(200)));
  quantize_dispatch_row(x.data(), 200, row.data());
  EXPECT_EQ(dispatch_row_scale(row.data(), 200, 0), 100.0f / 448.0f);
  EXPECT_EQ(dispatch_row_scale(row.data(), 200, 1), x[199] / 448.0f);  // 0.072: group 1's own amax
  EXPECT_EQ(row[199], 0x7E);  // the partial group's amax maps to 448
  EXPECT_EQ(row[127], 0xFE);  // -100 -> -448 (c = 127 is odd)
  std::vector<float> back(200);
  dequantize_dispatch_row(row.data(), 200, back.data());
  for (int c = 128; c < 200; ++c) EXPECT_NEAR(back[c], x[c], std::fabs(x[c]) / 16) << c;  // not flushed by group 0's scale
}

// Scale 1 (amax 448): the e4m3 bytes are the format's round to nearest even and saturation.
TEST(Fp8DispatchRow, RoundsToNearestEvenAndSaturates) {
  std::vector<float> x = {448.0f, 1.0625f, 1.1875f, -432.0f, 0.5f * 0x1p-9f, 1.5f * 0x1p-9f, 0.0f, -0.0f};
  std::vector<std::uint8_t> row(static_cast<std::size_t>(dispatch_row_bytes(8)));
  quantize_dispatch_row(x.data(), 8, row.data());
  EXPECT_EQ(dispatch_row_scale(row.data(), 8, 0), 1.0f);
  const std::vector<std::uint8_t> want = {0x7E, 0x38, 0x3A, 0xFE, 0x00, 0x02, 0x00, 0x80};
  EXPECT_EQ(std::vector<std::uint8_t>(row.begin(), row.begin() + 8), want);
  std::vector<float> back(8);
  dequantize_dispatch_row(row.data(), 8, back.data());
  EXPECT_EQ(back[0], 448.0f);
  EXPECT_EQ(back[1], 1.0f);
  EXPECT_EQ(back[2], 1.25f);
  EXPECT_EQ(back[3], -448.0f);
  EXPECT_EQ(back[5], 2 * 0x1p-9f);
}

// An all-zero group takes the floored scale 1e-4 / 448 and comes back zero.
TEST(Fp8DispatchRow, AmaxFloor) {
  std::vector<float> x(256, 0.0f);
  x[200] = 3.0f;
  std::vector<std::uint8_t> row(static_cast<std::size_t>(dispatch_row_bytes(256)));
  quantize_dispatch_row(x.data(), 256, row.data());
  EXPECT_EQ(dispatch_row_scale(row.data(), 256, 0), kAmaxFloor / kE4m3Max);
  EXPECT_EQ(dispatch_row_scale(row.data(), 256, 1), 3.0f / kE4m3Max);
  std::vector<float> back(256);
  dequantize_dispatch_row(row.data(), 256, back.data());
  for (int c = 0; c < 128; ++c) EXPECT_EQ(back[c], 0.0f);
  EXPECT_FLOAT_EQ(back[200], 3.0f);
}

// The round trip: within half an e4m3 ulp (1/16 relative) of each value, or of the subnormal
// step 2^-9 s for the smallest ones.
TEST(Fp8DispatchRow, RoundTripError) {
  for (std::int64_t h : {130, 7168}) {
    const auto x = random_row(h, 7u + static_cast<std::uint32_t>(h), 2.0f);
    std::vector<std::uint8_t> row(static_cast<std::size_t>(dispatch_row_bytes(h)));
    quantize_dispatch_row(x.data(), h, row.data());
    std::vector<float> back(static_cast<std::size_t>(h));
    dequantize_dispatch_row(row.data(), h, back.data());
    for (std::int64_t c = 0; c < h; ++c) {
      const float s = dispatch_row_scale(row.data(), h, c / kBlock);
      const float bound = std::max(std::fabs(x[c]) / 16.0f, s * 0x1p-10f) * 1.0001f;
      ASSERT_LE(std::fabs(back[c] - x[c]), bound) << "hidden " << h << " channel " << c;
    }
  }
}

}  // namespace
}  // namespace layerbench::moe::fp8
