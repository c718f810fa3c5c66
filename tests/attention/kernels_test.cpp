// Host kernels: pack/unpack round trips (padding zero on the way in, never leaking on the way
// out) and the CPU attention against a direct softmax.
#include "attention/kernels.hpp"
#include "attention/reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace layerbench::attention {

TEST(HostKernels, PackPadsAndUnpackSlices) {
  auto k = make_host_kernels(DType::fp32);
  const SliceShape p{2, 3, 7, 8, 4};  // B=2, S=3, H=7 padded to 8 = 2 slices of 4
  std::vector<float> x(2 * 3 * 7 * 8);  // [B, S, H, D]
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i + 1);
  std::vector<float> packed(2 * 3 * 2 * 4 * 8, -1.f);  // [U, S, B, Hl, D]
  k->pack_heads(x.data(), packed.data(), p, 0, 2, {});
  // slice 1, s=2, b=1, hl=3 is head 7: padding, zero.
  for (int d = 0; d < 8; ++d) EXPECT_EQ(packed[(((1 * 3 + 2) * 2 + 1) * 4 + 3) * 8 + d], 0.f);
  // slice 1, s=1, b=0, hl=2 is head 6.
  EXPECT_EQ(packed[(((1 * 3 + 1) * 2 + 0) * 4 + 2) * 8 + 5], x[((0 * 3 + 1) * 7 + 6) * 8 + 5]);
  // Poison the padded heads: nothing of them may reach the output.
  for (int s = 0; s < 3; ++s)
    for (int b = 0; b < 2; ++b)
      for (int d = 0; d < 8; ++d)
        packed[(((1 * 3 + s) * 2 + b) * 4 + 3) * 8 + d] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> back(x.size(), 0.f);
  k->unpack_heads(packed.data(), back.data(), p, 2, {});
  EXPECT_EQ(back, x);
}

TEST(HostKernels, SingleSlicePackOfJointHeads) {
  auto k = make_host_kernels(DType::bf16);
  const SliceShape p{1, 2, 6, 8, 3};
  std::vector<std::uint16_t> x(2 * 6 * 8);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::uint16_t>(i);
  std::vector<std::uint16_t> out(2 * 3 * 8);
  k->pack_heads(x.data(), out.data(), p, 1, 1, {});  // heads 3..5
  EXPECT_EQ(out[(1 * 3 + 2) * 8 + 7], x[(1 * 6 + 5) * 8 + 7]);
}

TEST(Reference, MatchesDirectSoftmax) {
  const int B = 1, S = 5, H = 2, D = 4;
  std::vector<float> q(B * S * H * D), kk(q.size()), v(q.size()), o(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) {
    q[i] = random_value(1, 0, i, DType::fp32);
    kk[i] = random_value(1, 1, i, DType::fp32);
    v[i] = random_value(1, 2, i, DType::fp32);
  }
  auto k = make_host_kernels(DType::fp32);
  const AttentionShape a{B, S, S, H, D, 0.5f};
  k->attention(q.data(), kk.data(), v.data(), o.data(), a, {});  // [S, B, H, D]
  for (int s = 0; s < S; ++s)
    for (int h = 0; h < H; ++h) {
      std::vector<double> w(S);
      double sum = 0;
      for (int j = 0; j < S; ++j) {
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += q[(s * H + h) * D + d] * kk[(j * H + h) * D + d];
        w[j] = std::exp(0.5 * dot);
        sum += w[j];
      }
      for (int d = 0; d < D; ++d) {
        double ref = 0;
        for (int j = 0; j < S; ++j) ref += w[j] / sum * v[(j * H + h) * D + d];
        EXPECT_NEAR(o[(s * H + h) * D + d], ref, 1e-5);
      }
    }
}

TEST(Reference, RandomValuesAreFreshAndUnitScale) {
  double s2 = 0;
  int zeros = 0;
  for (std::uint64_t i = 0; i < 10000; ++i) {
    const float x = random_value(42, 1, i, DType::bf16);
    s2 += x * x;
    zeros += x == 0.f;
  }
  EXPECT_NEAR(s2 / 10000, 1.0, 0.05);
  EXPECT_LT(zeros, 5);
  EXPECT_NE(random_value(42, 1, 7, DType::fp32), random_value(42, 2, 7, DType::fp32));
}

}  // namespace layerbench::attention
