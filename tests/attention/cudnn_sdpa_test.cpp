// cuDNN SDPA (both graph forms) and the CUDA copy kernels against the host implementations.
#include "attention/cudnn_sdpa.hpp"
#include "attention/kernels.hpp"
#include "attention/reference.hpp"
#include "collectives/device.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace layerbench::attention {
namespace {

std::vector<std::uint16_t> random_bf16(std::size_t n, int tensor) {
  std::vector<std::uint16_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = float_to_bf16_bits(random_value(7, tensor, i, DType::bf16));
  return v;
}

void check_path(const std::string& path) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  if (path == "unified" && CudnnSdpa::runtime_version() < 91301) GTEST_SKIP() << "cuDNN < 9.13.1";
  auto dev = make_cuda_device(0);
  const AttentionShape a{2, 256, 384, 3, 128, 1.0f / std::sqrt(128.0f)};
  const std::size_t nq = 256 * 2 * 3 * 128, nkv = 384 * 2 * 3 * 128;
  const auto q = random_bf16(nq, 0), k = random_bf16(nkv, 1), v = random_bf16(nkv, 2);  // [S, B, H, D]
  Buffer dq = dev->upload(q), dk = dev->upload(k), dv = dev->upload(v), dout = dev->alloc(nq * 2);
  auto kernels = make_cuda_kernels(DType::bf16, path);
  kernels->prepare(a);
  kernels->attention(dq.data(), dk.data(), dv.data(), dout.data(), a, dev->compute_stream());
  const auto got = dev->download<std::uint16_t>(dout.data(), nq);
  std::vector<std::uint16_t> ref(nq);
  make_host_kernels(DType::bf16)->attention(q.data(), k.data(), v.data(), ref.data(), a, {});
  double err = 0;
  for (std::size_t i = 0; i < nq; ++i)
    err = std::max(err, static_cast<double>(std::fabs(bf16_bits_to_float(got[i]) - bf16_bits_to_float(ref[i]))));
  EXPECT_LT(err, 2e-2) << kernels->describe();
  std::printf("%s: max_abs_err %.3g\n", kernels->describe().c_str(), err);
}

}  // namespace

TEST(CudnnSdpa, UnifiedMatchesReference) { check_path("unified"); }
TEST(CudnnSdpa, CompositeMatchesReference) { check_path("composite"); }

// GQA (6 query heads on 2 K/V heads), one request of a batch of 2 seen through row strides, and
// the LSE output: cuDNN against the host kernels; then two key halves merged by LSE on the
// device against one call over all keys.
TEST(CudnnSdpa, GqaStridedStatsAndMerge) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  if (CudnnSdpa::runtime_version() < 91301) GTEST_SKIP() << "cuDNN < 9.13.1 (no unified op)";
  auto dev = make_cuda_device(0);
  const long long B = 2, Sq = 192, Skv = 320, D = 128;
  const int H = 6, Hk = 2;
  const auto q = random_bf16(static_cast<std::size_t>(Sq * B * H * D), 10);
  const auto k = random_bf16(static_cast<std::size_t>(Skv * B * Hk * D), 11);
  const auto v = random_bf16(static_cast<std::size_t>(Skv * B * Hk * D), 12);
  Buffer dq = dev->upload(q), dk = dev->upload(k), dv = dev->upload(v);
  auto cuda = make_cuda_kernels(DType::bf16, "unified");
  auto host = make_host_kernels(DType::bf16);
  const Stream s = dev->compute_stream();
  // Request 1 alone, all keys.
  AttentionShape a{1, Sq, Skv, H, static_cast<int>(D), 1.0f / std::sqrt(128.0f)};
  a.kv_heads = Hk;
  a.q_row = B * H * D;
  a.kv_row = B * Hk * D;
  const std::size_t q_off = static_cast<std::size_t>(H * D), k_off = static_cast<std::size_t>(Hk * D);
  const std::size_t n_o = q.size();
  Buffer dout = dev->alloc(n_o * 2), dlse = dev->alloc(static_cast<std::size_t>(H * Sq) * 4);
  dev->memset(dout.data(), 0, n_o * 2, s);
  cuda->attention(dq.as<std::uint16_t>() + q_off, dk.as<std::uint16_t>() + k_off, dv.as<std::uint16_t>() + k_off,
                  dout.as<std::uint16_t>() + q_off, a, s, dlse.as<float>());
  std::vector<std::uint16_t> ref(n_o, 0);
  std::vector<float> ref_lse(static_cast<std::size_t>(H * Sq));
  host->attention(q.data() + q_off, k.data() + k_off, v.data() + k_off, ref.data() + q_off, a, {}, ref_lse.data());
  const auto got = dev->download<std::uint16_t>(dout.data(), n_o);
  const auto got_lse = dev->download<float>(dlse.data(), ref_lse.size());
  double err = 0, lse_err = 0;
  for (std::size_t i = 0; i < n_o; ++i)
    err = std::max(err, static_cast<double>(std::fabs(bf16_bits_to_float(got[i]) - bf16_bits_to_float(ref[i]))));
  for (std::size_t i = 0; i < ref_lse.size(); ++i) lse_err = std::max(lse_err, static_cast<double>(std::fabs(got_lse[i] - ref_lse[i])));
  EXPECT_LT(err, 2e-2);
  EXPECT_LT(lse_err, 1e-2);
  std::printf("GQA strided: max_abs_err %.3g, LSE %.3g (%s)\n", err, lse_err, cuda->describe().c_str());

  // Both requests: keys [0, 128) and [128, 320) merged by LSE == one call over all keys.
  AttentionShape whole{B, Sq, Skv, H, static_cast<int>(D), a.scale};
  whole.kv_heads = Hk;
  // Each half writes its own slot and LSE range; one merge reads both (as a Ring plan does).
  const std::size_t n_lse = static_cast<std::size_t>(B * H * Sq);
  Buffer dref = dev->alloc(n_o * 2), dparts = dev->alloc(2 * n_o * 2), dpl = dev->alloc(2 * n_lse * 4);
  Buffer dmerged = dev->alloc(n_o * 2);
  cuda->attention(dq.data(), dk.data(), dv.data(), dref.data(), whole, s, nullptr);
  std::vector<Partial> partials;
  for (const auto& [k0, nk] : {std::pair<long long, long long>{0, 128}, {128, 192}}) {
    AttentionShape half = whole;
    half.seq_kv = nk;
    const std::size_t off = static_cast<std::size_t>(k0 * B * Hk * D);
    const int slot = static_cast<int>(partials.size());
    partials.push_back({0, Sq, -1, slot * B * Sq, slot});
    cuda->attention(dq.data(), dk.as<std::uint16_t>() + off, dv.as<std::uint16_t>() + off,
                    dparts.as<std::uint16_t>() + static_cast<std::size_t>(slot) * n_o, half, s,
                    dpl.as<float>() + static_cast<std::size_t>(slot) * n_lse);
  }
  cuda->merge(dparts.data(), dpl.as<float>(), partials, dmerged.data(), {Sq, B, H, static_cast<int>(D)}, s);
  const auto merged = dev->download<std::uint16_t>(dmerged.data(), n_o), one = dev->download<std::uint16_t>(dref.data(), n_o);
  double merr = 0;
  for (std::size_t i = 0; i < n_o; ++i)
    merr = std::max(merr, static_cast<double>(std::fabs(bf16_bits_to_float(merged[i]) - bf16_bits_to_float(one[i]))));
  EXPECT_LT(merr, 2e-2);
  std::printf("LSE merge of two key halves vs one call: max_abs_err %.3g\n", merr);
}

// The merge kernel against the host merge: partials of one request each, over different row
// ranges and slots (a masked plan's shape), for 16-byte chunks (D = 128) and single values (D = 20).
TEST(CudaKernels, MergeMatchesHost) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  auto dev = make_cuda_device(0);
  for (int d : {128, 20}) {
    const long long rows = 64, B = 2;
    const int H = 3;
    const std::vector<Partial> partials = {{0, 64, 0, 0, 0}, {10, 40, 0, 64, 1}, {0, 64, 1, 104, 0}, {0, 30, 1, 168, 1}};
    const std::size_t n_o = static_cast<std::size_t>(rows * B * H * d), n_lse = static_cast<std::size_t>(198 * H);
    const auto parts = random_bf16(2 * n_o, 20);
    std::vector<float> lse(n_lse);
    for (std::size_t i = 0; i < n_lse; ++i) lse[i] = 4.0f * random_value(7, 21, i, DType::fp32);
    std::vector<std::uint16_t> want(n_o);
    const MergeShape m{rows, B, H, d};
    make_host_kernels(DType::bf16)->merge(parts.data(), lse.data(), partials, want.data(), m, {});
    Buffer dparts = dev->upload(parts), dlse = dev->upload(lse), dout = dev->alloc(n_o * 2);
    auto cuda = make_cuda_kernels(DType::bf16);
    cuda->merge(dparts.data(), dlse.as<float>(), partials, dout.data(), m, dev->compute_stream());
    const auto got = dev->download<std::uint16_t>(dout.data(), n_o);
    double err = 0;
    for (std::size_t i = 0; i < n_o; ++i)
      err = std::max(err, static_cast<double>(std::fabs(bf16_bits_to_float(got[i]) - bf16_bits_to_float(want[i]))));
    EXPECT_LT(err, 2e-2) << "D = " << d;
    std::printf("merge of 4 partials (D = %d) vs host: max_abs_err %.3g\n", d, err);
  }
}

TEST(CudaKernels, PackUnpackMatchHost) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  auto dev = make_cuda_device(0);
  for (int d : {128, 20}) {  // 16-byte chunks and the 2-byte fallback
    const SliceShape p{2, 5, 7, d, 4};
    const auto x = random_bf16(static_cast<std::size_t>(2 * 5 * 7 * d), 3);
    const std::size_t np = static_cast<std::size_t>(2 * 5 * 2 * 4 * d);
    std::vector<std::uint16_t> want(np), back(x.size());
    auto host = make_host_kernels(DType::bf16);
    host->pack_heads(x.data(), want.data(), p, 0, 2, {});
    auto cuda = make_cuda_kernels(DType::bf16);
    Buffer dx = dev->upload(x), dp = dev->alloc(np * 2), dback = dev->alloc(x.size() * 2);
    dev->memset(dp.data(), 0xff, np * 2, dev->compute_stream());  // padding must be rewritten
    cuda->pack_heads(dx.data(), dp.data(), p, 0, 2, dev->compute_stream());
    EXPECT_EQ(dev->download<std::uint16_t>(dp.data(), np), want);
    cuda->unpack_heads(dp.data(), dback.data(), p, 2, dev->compute_stream());
    EXPECT_EQ(dev->download<std::uint16_t>(dback.data(), x.size()), x);
  }
}

}  // namespace layerbench::attention
