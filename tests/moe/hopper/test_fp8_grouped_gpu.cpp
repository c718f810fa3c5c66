// The FP8 (e4m3, rowwise) grouped expert GEMMs on Hopper (moe/hopper/fp8_grouped_sm90.cuh) at edge
// shapes (K off the 128-wide step, N off the 256-wide block, one-row and empty experts, half
// tiles, odd tile counts), every launch variant's pairing: act and y, poisoned with NaN first,
// against the CPU oracle on the dequantized operands (moe/fp8.hpp) on every row, and the device
// quantizer against the host's bit for bit. Skips without a compute capability 9.0 device.
#include "collectives/types.hpp"
#include "moe/fp8.hpp"
#include "moe/hopper/fp8_grouped_sm90.cuh"
#include "moe/hopper/std_grouped_sm90.cuh"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace layerbench::moe {
namespace {

#define CK(x) ASSERT_EQ((x), cudaSuccess) << #x

template <class T>
T* upload(const std::vector<T>& v) {
  T* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, std::max<std::size_t>(v.size(), 16) * sizeof(T)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return p;
}
template <class T>
std::vector<T> download(const T* p, std::size_t n) {
  std::vector<T> v(n);
  EXPECT_EQ(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

std::vector<float> randn(std::int64_t n, std::uint32_t seed, float scale) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = d(g);
  return v;
}

std::vector<float> to_float(const std::vector<std::uint16_t>& b) {
  std::vector<float> f(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) f[i] = bf16_bits_to_float(b[i]);
  return f;
}

void run_case(std::int64_t h, std::int64_t I, const std::vector<std::int64_t>& counts, const ActivationSpec& act,
              const char* variant) {
  SCOPED_TRACE(::testing::Message() << "h " << h << " I " << I << " E " << counts.size() << " " << variant);
  const auto E = static_cast<std::int64_t>(counts.size());
  std::int64_t R = 0;
  for (auto c : counts) R += c;
  cuda::std_grouped_set_variant(cuda::parse_grouped_variant(variant));
  const auto x = fp8::quantize(randn(R * h, 1, 1.7f).data(), 1, R, h, fp8::Scaling::rowwise);
  const auto w13 = fp8::quantize(randn(E * 2 * I * h, 2, 1.0f / std::sqrt(float(h))).data(), 1, E * 2 * I, h,
                                 fp8::Scaling::rowwise);
  const auto wd = fp8::quantize(randn(E * h * I, 3, 1.0f / std::sqrt(float(I))).data(), 1, E * h, I,
                                fp8::Scaling::rowwise);
  auto* dx = upload(x.q);
  auto* dxs = upload(x.scales);
  auto* dw13 = upload(w13.q);
  auto* dw13s = upload(w13.scales);
  auto* dwd = upload(wd.q);
  auto* dwds = upload(wd.scales);
  auto* dcounts = upload(std::vector<int>(counts.begin(), counts.end()));
  __nv_bfloat16 *dact = nullptr, *dy = nullptr;
  std::uint8_t* daq = nullptr;
  float* das = nullptr;
  void* work = nullptr;
  CK(cudaMalloc(&dact, static_cast<std::size_t>(R * I) * 2));
  CK(cudaMalloc(&dy, static_cast<std::size_t>(R * h) * 2));
  CK(cudaMalloc(&daq, static_cast<std::size_t>(R * I)));
  CK(cudaMalloc(&das, static_cast<std::size_t>(R) * 4));
  CK(cudaMalloc(&work, static_cast<std::size_t>(cuda::std_grouped_work_bytes(R, E, h, I))));
  CK(cudaMemset(dact, 0xFF, static_cast<std::size_t>(R * I) * 2));
  CK(cudaMemset(dy, 0xFF, static_cast<std::size_t>(R * h) * 2));
  const auto w = cuda::std_grouped_work(work, R, E, h, I);
  cuda::std_grouped_tiles(dcounts, E, cuda::std_gate_up_blocks(I), cuda::std_down_blocks(h), w.gu, w.gu_max, w.dn,
                          w.dn_max, w.live, nullptr);
  cuda::fp8_gate_up_sm90(dx, dxs, R, h, dw13, dw13s, E, I, dact, w.gu, w.gu_max, w.live, act, nullptr);
  cuda::fp8_quantize_rows(dact, R, I, daq, das, nullptr);
  cuda::fp8_down_sm90(daq, das, R, I, dwd, dwds, E, h, dy, w.dn, w.dn_max, w.live + 1, nullptr);
  CK(cudaDeviceSynchronize());
  const auto a = to_float(download(reinterpret_cast<const std::uint16_t*>(dact), static_cast<std::size_t>(R * I)));
  const auto ref_a = fp8::grouped_gate_up(fp8::dequantize(x), fp8::dequantize(w13), counts, h, I, act);
  const double ea = fp8::relative_error(a, ref_a);
  EXPECT_LE(ea, 1e-2) << "gate/up + GLU against the oracle";
  // The device's quantization of act equals the host's; down against the oracle on it.
  const auto hq = fp8::quantize(a.data(), 1, R, I, fp8::Scaling::rowwise);
  EXPECT_EQ(download(daq, static_cast<std::size_t>(R * I)), hq.q);
  EXPECT_EQ(download(das, static_cast<std::size_t>(R)), hq.scales);
  const auto yv = to_float(download(reinterpret_cast<const std::uint16_t*>(dy), static_cast<std::size_t>(R * h)));
  const double ey = fp8::relative_error(yv, fp8::grouped_down(fp8::dequantize(hq), fp8::dequantize(wd), counts, I, h));
  EXPECT_LE(ey, 1e-2) << "down against the oracle";
  std::printf("fp8 rowwise h %lld I %lld E %lld (%s): ||act - ref|| / ||ref|| %.3g, ||y - ref|| / ||ref|| %.3g\n",
              static_cast<long long>(h), static_cast<long long>(I), static_cast<long long>(E), variant, ea, ey);
  for (void* p : {static_cast<void*>(dx), static_cast<void*>(dxs), static_cast<void*>(dw13), static_cast<void*>(dw13s),
                  static_cast<void*>(dwd), static_cast<void*>(dwds), static_cast<void*>(dcounts), static_cast<void*>(dact),
                  static_cast<void*>(dy), static_cast<void*>(daq), static_cast<void*>(das), work})
    CK(cudaFree(p));
  cuda::std_grouped_set_variant(cuda::StdGroupedVariant{});
}

class Fp8GroupedGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = cuda::fp8_grouped_unsupported(256, 256, 1);
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

TEST_F(Fp8GroupedGpu, EdgeShapesMatchTheOracle) {
  ActivationSpec silu;
  ActivationSpec clamped;
  clamped.kind = Activation::swiglu_clamped;
  for (const char* v : {"paired", "unpaired+whole-tiles", "paired+pair-order"}) {
    run_case(144, 48, {1, 0, 130, 64, 257}, silu, v);       // K = 144: one full and one partial step
    run_case(384, 272, {200, 5, 0, 1}, clamped, v);         // I = 272: a gate/up block of 16 columns; h off 256
  }
}

TEST_F(Fp8GroupedGpu, UnsupportedShapesSayWhy) {
  EXPECT_NE(cuda::fp8_grouped_unsupported(136, 256, 4), "");  // 136 bytes: not a 16-byte row stride
  EXPECT_NE(cuda::fp8_grouped_unsupported(256, 256, 0), "");
  EXPECT_NE(cuda::fp8_grouped_unsupported(256, 256, cuda::kStdGroupedMaxExperts + 1), "");
}

}  // namespace
}  // namespace layerbench::moe
