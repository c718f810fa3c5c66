// The cuBLASLt FP8 GEMM (moe/fp8_lt.hpp) against the CPU oracle on the dequantized operands:
// A and W quantized rowwise on the device (moe/fp8_quant.cuh, checked bit for bit against the
// host's recipe), the GEMM's bf16 output against the double product of the dequantized values, at
// shapes off the 128 step (m odd, k and n multiples of 16 only); the FP8 experts' per-expert
// cuBLASLt fallback against the host FP8 experts. Skips below compute capability 8.9 (no e4m3 GEMMs
// in cuBLASLt).
#include "collectives/cuda_internal.hpp"
#include "collectives/device.hpp"
#include "collectives/error.hpp"
#include "collectives/types.hpp"
#include "moe/fp8.hpp"
#include "moe/fp8_lt.hpp"
#include "moe/fp8_quant.cuh"
#include "moe/standard/std_fp8_experts.hpp"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
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

// The FP8 experts' cuBLASLt fallback (moe/standard/std_fp8_lt_experts.cpp), run on this device
// whatever its compute capability, against the host FP8 experts (the oracle: the same recipe on
// the dequantized operands in fp32) at uneven counts with an empty and a one-row expert, K off the
// 128 step. The measure is the fused FP8 MoE one of sglang's test_block_fp8.py (TestW8A8BlockFP8FusedMoE: the
// act re-quantized between the GEMMs): mean |y - oracle| / mean |oracle| < 0.02. A max-abs bound
// does not fit here: the device rounds gate/up and the act to bf16 before the act's rowwise
// quantization and the oracle does not, so a row's act scale can differ and every e4m3 code of
// the row move with it (first GPU run: max |y - oracle| 3.5% of the oracle's largest value).
TEST(Fp8LtExpertsGpu, MatchTheHostOracle) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  auto dev = make_cuda_device(0);
  int major = 0, minor = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), cudaSuccess);
  if (major * 10 + minor < 89) GTEST_SKIP() << "cuBLASLt runs e4m3 GEMMs on compute capability 8.9 or newer";
  for (const Activation kind : {Activation::silu_glu, Activation::swiglu_clamped}) {
    ActivationSpec act;
    act.kind = kind;
    const std::vector<std::int64_t> rows = {5, 0, 37, 1};
    const std::int64_t E = 4, H = 256, I = 144, R = 43;
    const Fp8ExpertShape shape{ExpertPrecision::fp8_rowwise, E, H, I, R, act};
    ASSERT_EQ(lt_fp8_experts_unsupported(shape), "");
    std::vector<std::uint16_t> xb, w13b, wdb;
    const auto x = bf16_randn(R * H, 21, 1.0f, xb);
    const auto w13 = bf16_randn(E * 2 * I * H, 22, 0.06f, w13b);
    const auto wd = bf16_randn(E * H * I, 23, 0.08f, wdb);
    auto host = make_host_fp8_experts(shape);
    std::vector<float> ha(static_cast<std::size_t>(R * I)), hy(static_cast<std::size_t>(R * H));
    host->set_weights(w13.data(), wd.data(), Stream{});
    host->mlp(x.data(), ha.data(), hy.data(), rows, Stream{});

    auto lt = make_lt_fp8_experts(*dev, shape);
    Buffer dx = dev->upload(xb), dw13 = dev->upload(w13b), dwd = dev->upload(wdb);
    Buffer da = dev->alloc(static_cast<std::size_t>(2 * R * I)), dy = dev->alloc(static_cast<std::size_t>(2 * R * H));
    const Stream s = dev->compute_stream();
    dev->memset(dy.data(), 0x7f, dy.bytes(), s);  // poisoned: every row must be written
    lt->set_weights(dw13.data(), dwd.data(), s);
    lt->mlp(dx.data(), da.data(), dy.data(), rows, s);
    dev->synchronize(s);
    const auto yb = dev->download<std::uint16_t>(dy.data(), static_cast<std::size_t>(R * H));
    double abs_diff = 0, abs_ref = 0, max_diff = 0, scale = 0;
    for (std::size_t i = 0; i < yb.size(); ++i) {
      const double g = bf16_bits_to_float(yb[i]), r = hy[i];
      ASSERT_TRUE(std::isfinite(g)) << "row " << i / static_cast<std::size_t>(H);
      abs_diff += std::fabs(g - r);
      abs_ref += std::fabs(r);
      max_diff = std::max(max_diff, std::fabs(g - r));
      scale = std::max(scale, std::fabs(r));
    }
    ASSERT_GT(abs_ref, 0.0);
    const double mean_rel = abs_diff / abs_ref;
    std::printf("cuBLASLt FP8 experts (%s): mean |y - oracle| / mean |oracle| %.4g; max |y - oracle| %.4g of |oracle| "
                "max %.4g\n",
                kind == Activation::silu_glu ? "silu_glu" : "swiglu_clamped", mean_rel, max_diff, scale);
    EXPECT_LT(mean_rel, 0.02) << lt->path();
  }
}

TEST(Fp8LtGemmGpu, RefusesWhatCublasLtDoesNotTake) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  auto dev = make_cuda_device(0);
  EXPECT_NE(fp8_lt_unsupported(64, 100, 128), "");  // n not a multiple of 16
  EXPECT_THROW(make_fp8_lt_gemm(*dev, 64, 128, 120), UsageError);  // k not a multiple of 16
  // The fallback takes the rowwise recipe only, and says so.
  const Fp8ExpertShape block{ExpertPrecision::fp8_block, 4, 256, 144, 64, {}};
  EXPECT_NE(lt_fp8_experts_unsupported(block).find("fp8-rowwise recipe only"), std::string::npos);
}

}  // namespace
}  // namespace layerbench::moe
