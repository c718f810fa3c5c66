// The cuBLASLt FP8 GEMM (moe/fp8_lt.hpp) against the CPU oracle on the dequantized operands:
// A and W quantized rowwise on the device (moe/fp8_quant.cuh, checked bit for bit against the
// host's recipe), the GEMM's bf16 output against the double product of the dequantized values, at
// shapes off the 128 step (m odd, k and n multiples of 16 only). Skips below compute capability 8.9 (no e4m3 GEMMs in cuBLASLt).
#include "collectives/cuda_internal.hpp"
#include "collectives/device.hpp"
#include "collectives/error.hpp"
#include "collectives/types.hpp"
#include "moe/fp8.hpp"
#include "moe/fp8_lt.hpp"
#include "moe/fp8_quant.cuh"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace layerbench::moe {
namespace {

std::vector<float> bf16_randn(std::int64_t n, std::uint32_t seed, float scale, std::vector<std::uint16_t>& bits) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(static_cast<std::size_t>(n));
  bits.resize(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    bits[i] = float_to_bf16_bits(d(g));
    v[i] = bf16_bits_to_float(bits[i]);
  }
  return v;
}

void run_case(std::int64_t m, std::int64_t n, std::int64_t k) {
  SCOPED_TRACE(::testing::Message() << "m " << m << " n " << n << " k " << k);
  auto dev = make_cuda_device(0);
  int major = 0, minor = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), cudaSuccess);
  if (major * 10 + minor < 89) GTEST_SKIP() << "cuBLASLt runs e4m3 GEMMs on compute capability 8.9 or newer";
  // From 8.9 on the GEMM must be planned: a refusal is a failure, not a skip.
  ASSERT_EQ(fp8_lt_unsupported(m, n, k), "");
  std::vector<std::uint16_t> ab, wb;
  const auto a = bf16_randn(m * k, 11, 1.0f, ab);
  const auto w = bf16_randn(n * k, 12, 0.05f, wb);
  Buffer da = dev->upload(ab), dw = dev->upload(wb);
  Buffer qa = dev->alloc(static_cast<std::size_t>(m * k)), qw = dev->alloc(static_cast<std::size_t>(n * k));
  Buffer sa = dev->alloc(static_cast<std::size_t>(4 * m)), sw = dev->alloc(static_cast<std::size_t>(4 * n));
  Buffer c = dev->alloc(static_cast<std::size_t>(2 * m * n));
  const Stream s = dev->compute_stream();
  const auto st = detail::cuda_stream(s);
  cuda::fp8_quantize_rows(da.as<__nv_bfloat16>(), m, k, qa.as<std::uint8_t>(), sa.as<float>(), st);
  cuda::fp8_quantize_rows(dw.as<__nv_bfloat16>(), n, k, qw.as<std::uint8_t>(), sw.as<float>(), st);
  dev->memset(c.data(), 0x7f, c.bytes(), s);  // poisoned: every element must be written
  auto gemm = make_fp8_lt_gemm(*dev, m, n, k);
  gemm->run(qa.data(), sa.as<float>(), qw.data(), sw.as<float>(), c.data(), s);
  dev->synchronize(s);

  // The device quantizers equal the host's recipe bit for bit.
  const auto ha = fp8::quantize(a.data(), 1, m, k, fp8::Scaling::rowwise);
  const auto hw = fp8::quantize(w.data(), 1, n, k, fp8::Scaling::rowwise);
  EXPECT_EQ(dev->download<std::uint8_t>(qa.data(), ha.q.size()), ha.q);
  EXPECT_EQ(dev->download<float>(sa.data(), ha.scales.size()), ha.scales);
  EXPECT_EQ(dev->download<std::uint8_t>(qw.data(), hw.q.size()), hw.q);

  // The oracle: the double product of the dequantized operands.
  const auto da_f = fp8::dequantize(ha), dw_f = fp8::dequantize(hw);
  std::vector<double> ref(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::int64_t l = 0; l < k; ++l) acc += double(da_f[i * k + l]) * double(dw_f[j * k + l]);
      ref[i * n + j] = acc;
    }
  const auto out_bits = dev->download<std::uint16_t>(c.data(), static_cast<std::size_t>(m * n));
  std::vector<float> out(out_bits.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = bf16_bits_to_float(out_bits[i]);
  const double err = fp8::relative_error(out, ref);
  std::printf("cuBLASLt e4m3 rowwise m %lld n %lld k %lld: rel. L2 error %.5f (%s)\n", static_cast<long long>(m),
              static_cast<long long>(n), static_cast<long long>(k), err, gemm->describe().c_str());
  // bf16 output rounding (2^-9 relative) plus fast accumulation's fp32 sums: well under 1e-2.
  EXPECT_LT(err, 1e-2);
}

TEST(Fp8LtGemmGpu, MatchesTheOracleOnDequantizedOperands) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  run_case(257, 384, 272);
  run_case(1, 128, 128);
  run_case(96, 2048, 768);
}

TEST(Fp8LtGemmGpu, RefusesWhatCublasLtDoesNotTake) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  auto dev = make_cuda_device(0);
  EXPECT_NE(fp8_lt_unsupported(64, 100, 128), "");  // n not a multiple of 16
  EXPECT_THROW(make_fp8_lt_gemm(*dev, 64, 128, 120), UsageError);  // k not a multiple of 16
}

}  // namespace
}  // namespace layerbench::moe
