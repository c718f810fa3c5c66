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
