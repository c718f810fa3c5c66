// The FP8 (e4m3) grouped expert GEMMs on Hopper at edge shapes (K off the 128-wide step, N off
// the column block, one-row and empty experts, half tiles, odd tile counts): rowwise
// (moe/hopper/fp8_grouped_sm90.cuh) in every launch variant's pairing, and block-scaled
// (moe/hopper/fp8_block_sm90.cuh, DeepSeek-V3's 1x128 / 128x128 recipe) with the act quantization
// separate and fused into gate/up: act and y, poisoned first, against the CPU oracle on the
// dequantized operands (moe/fp8.hpp) on every row, and the device quantizers against the host's
// bit for bit. Skips without a compute capability 9.0 device.
#include "collectives/types.hpp"
#include "common/usage.hpp"
#include "moe/fp8.hpp"
#include "moe/hopper/fp8_block_sm90.cuh"
#include "moe/hopper/fp8_grouped_sm90.cuh"
#include "moe/hopper/std_grouped_sm90.cuh"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
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
  // The fused path: gate/up quantizing its act per row per 128 columns in the epilogue (the host's
  // 1x128 quantization of the bf16 act above, bit for bit), down promoting every 128 K on it.
  const std::int64_t KI = (I + 127) / 128;
  std::uint8_t* dfq = nullptr;
  float* dfs = nullptr;
  __nv_bfloat16* dyq = nullptr;
  void* bwork = nullptr;
  CK(cudaMalloc(&dfq, static_cast<std::size_t>(R * I)));
  CK(cudaMalloc(&dfs, static_cast<std::size_t>(R * KI) * 4));
  CK(cudaMalloc(&dyq, static_cast<std::size_t>(R * h) * 2));
  CK(cudaMalloc(&bwork, static_cast<std::size_t>(cuda::fp8_block_work_bytes(R, E, h, I))));
  CK(cudaMemset(dfq, 0x7F, static_cast<std::size_t>(R * I)));
  CK(cudaMemset(dyq, 0xFF, static_cast<std::size_t>(R * h) * 2));
  const auto bw = cuda::fp8_block_work(bwork, R, E, h, I);
  cuda::fp8_block_tiles(dcounts, E, h, I, bw, nullptr);
  cuda::fp8_gate_up_q_sm90(dx, dxs, R, h, dw13, dw13s, E, I, dfq, dfs, w.gu, w.gu_max, w.live, act, nullptr);
  cuda::fp8_rowwise_down_1x128_sm90(dfq, dfs, R, I, dwd, dwds, E, h, dyq, bw.dn, bw.dn_max, bw.live + 1, nullptr);
  CK(cudaDeviceSynchronize());
  const auto hq1 = fp8::quantize(a.data(), 1, R, I, fp8::Scaling::block_1x128);
  EXPECT_EQ(download(dfq, static_cast<std::size_t>(R * I)), hq1.q) << "fused act codes";
  EXPECT_EQ(download(dfs, static_cast<std::size_t>(R * KI)), hq1.scales) << "fused act scales";
  const auto yq = to_float(download(reinterpret_cast<const std::uint16_t*>(dyq), static_cast<std::size_t>(R * h)));
  const double eyq = fp8::relative_error(yq, fp8::grouped_down(fp8::dequantize(hq1), fp8::dequantize(wd), counts, I, h));
  EXPECT_LE(eyq, 1e-2) << "down on the 1x128 act against the oracle";
  std::printf("fp8 rowwise h %lld I %lld E %lld (%s): ||act - ref|| / ||ref|| %.3g, ||y - ref|| / ||ref|| %.3g; "
              "fused 1x128 act: y %.3g\n",
              static_cast<long long>(h), static_cast<long long>(I), static_cast<long long>(E), variant, ea, ey, eyq);
  for (void* p : {static_cast<void*>(dfq), static_cast<void*>(dfs), static_cast<void*>(dyq), bwork}) CK(cudaFree(p));
  for (void* p : {static_cast<void*>(dx), static_cast<void*>(dxs), static_cast<void*>(dw13), static_cast<void*>(dw13s),
                  static_cast<void*>(dwd), static_cast<void*>(dwds), static_cast<void*>(dcounts), static_cast<void*>(dact),
                  static_cast<void*>(dy), static_cast<void*>(daq), static_cast<void*>(das), work})
    CK(cudaFree(p));
  cuda::std_grouped_set_variant(cuda::StdGroupedVariant{});
}


std::vector<std::uint16_t> to_bf16(const std::vector<float>& f) {
  std::vector<std::uint16_t> b(f.size());
  for (std::size_t i = 0; i < f.size(); ++i) b[i] = float_to_bf16_bits(f[i]);
  return b;
}

int signed_code(std::uint8_t v) { return (v & 0x80u) ? -static_cast<int>(v & 0x7Fu) : static_cast<int>(v & 0x7Fu); }

// Where a gate/up act is not finite (its buffer starts as NaN: an entry no unit wrote): how many,
// the first rows with their experts, the list units that hold the first such row, the units whose
// rows came out whole, and how many entries are still not finite after `relaunch` (the same GEMM
// once more after a device sync: 0 there means the first launch read an unfinished tile list).
std::string unwritten_act(const std::vector<float>& a, std::int64_t R, std::int64_t I,
                          const std::vector<std::int64_t>& counts, const cuda::StdGroupedWork& w,
                          const std::function<std::vector<float>()>& relaunch) {
  auto not_finite = [](const std::vector<float>& v) {
    std::int64_t bad = 0;
    for (float f : v) bad += !std::isfinite(f);
    return bad;
  };
  const std::int64_t bad = not_finite(a);
  if (bad == 0) return {};
  std::vector<std::int64_t> first_row(counts.size() + 1, 0);
  for (std::size_t e = 0; e < counts.size(); ++e) first_row[e + 1] = first_row[e] + counts[e];
  auto row_ok = [&](std::int64_t row, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c)
      if (!std::isfinite(a[static_cast<std::size_t>(row * I + c)])) return false;
    return true;
  };
  std::string where;
  std::int64_t shown = 0, bad_row = -1;
  for (std::int64_t row = 0; row < R && shown < 8; ++row) {
    if (row_ok(row, 0, I)) continue;
    if (bad_row < 0) bad_row = row;
    const auto e = std::upper_bound(first_row.begin(), first_row.end(), row) - first_row.begin() - 1;
    where += " (row " + std::to_string(row) + ": expert " + std::to_string(e) + " row " +
             std::to_string(row - first_row[static_cast<std::size_t>(e)]) + ")";
    ++shown;
  }
  int live_n = 0;
  std::vector<cuda::StdTile> tl(static_cast<std::size_t>(w.gu_max));
  if (cudaMemcpy(&live_n, w.live, sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(tl.data(), w.gu, tl.size() * sizeof(cuda::StdTile), cudaMemcpyDeviceToHost) != cudaSuccess)
    return std::to_string(bad) + " act entries not finite (the tile list could not be read back)";
  std::string holds, whole;
  int whole_n = 0;
  for (int u = 0; u < live_n && u < static_cast<int>(tl.size()); ++u) {
    const auto& t = tl[static_cast<std::size_t>(u)];
    if (t.valid <= 0) continue;
    const std::string desc = "[unit " + std::to_string(u) + ": expert " + std::to_string(t.expert) + " rows " +
                             std::to_string(t.row0) + "+" + std::to_string(t.valid) + " block " +
                             std::to_string(t.block) + "]";
    if (bad_row >= t.row0 && bad_row < t.row0 + t.valid) holds += " " + desc;
    bool ok = true;
    for (std::int64_t r = t.row0; r < t.row0 + t.valid && ok; ++r)
      ok = row_ok(r, std::int64_t{t.block} * 128, std::min<std::int64_t>(I, std::int64_t{t.block} * 128 + 128));
    if (ok && ++whole_n <= 4) whole += " " + desc;
  }
  return std::to_string(bad) + " of " + std::to_string(R * I) + " act entries not finite; first rows:" + where +
         "; live units " + std::to_string(live_n) + " of " + std::to_string(w.gu_max) + "; units holding row " +
         std::to_string(bad_row) + ":" + holds + "; " + std::to_string(whole_n) + " units came out whole:" + whole +
         "; after a second launch: " + std::to_string(not_finite(relaunch())) + " not finite";
}

// The block-scaled path: operands quantized on the device from bf16 (checked against the host's
// quantization of the same values), then gate/up + GLU (bf16 act) -> 1x128 quantization -> down,
// and gate/up with the e4m3 quantization fused -> down.
void run_block_case(std::int64_t h, std::int64_t I, const std::vector<std::int64_t>& counts, const ActivationSpec& act,
                    const char* variant) {
  SCOPED_TRACE(::testing::Message() << "block h " << h << " I " << I << " E " << counts.size() << " " << variant);
  cuda::std_grouped_set_variant(cuda::parse_grouped_variant(variant));
  const auto E = static_cast<std::int64_t>(counts.size());
  std::int64_t R = 0;
  for (auto c : counts) R += c;
  const std::int64_t KH = (h + 127) / 128, KI = (I + 127) / 128;
  const auto blk = fp8::Scaling::block_128x128, row = fp8::Scaling::block_1x128;
  const auto xb = to_bf16(randn(R * h, 11, 1.7f)), w13b = to_bf16(randn(E * 2 * I * h, 12, 1.0f / std::sqrt(float(h))));
  const auto wdb = to_bf16(randn(E * h * I, 13, 1.0f / std::sqrt(float(I))));
  const auto x = fp8::quantize(to_float(xb).data(), 1, R, h, row);
  const auto w13 = fp8::quantize(to_float(w13b).data(), 2 * E, I, h, blk);
  const auto wd = fp8::quantize(to_float(wdb).data(), E, h, I, blk);
  auto* dxb = upload(xb);
  auto* dw13b = upload(w13b);
  auto* dwdb = upload(wdb);
  auto* dcounts = upload(std::vector<int>(counts.begin(), counts.end()));
  std::uint8_t *dx = nullptr, *dw13 = nullptr, *dwd = nullptr, *daq = nullptr, *dfq = nullptr;
  float *dxs = nullptr, *dw13s = nullptr, *dwds = nullptr, *das = nullptr, *dfs = nullptr;
  __nv_bfloat16 *dact = nullptr, *dy = nullptr, *dyf = nullptr;
  void* work = nullptr;
  auto n = [](std::int64_t v) { return static_cast<std::size_t>(std::max<std::int64_t>(v, 16)); };
  CK(cudaMalloc(&dx, n(R * h)));
  CK(cudaMalloc(&dxs, n(R * KH) * 4));
  CK(cudaMalloc(&dw13, n(E * 2 * I * h)));
  CK(cudaMalloc(&dw13s, n(2 * E * KI * KH) * 4));
  CK(cudaMalloc(&dwd, n(E * h * I)));
  CK(cudaMalloc(&dwds, n(E * KH * KI) * 4));
  CK(cudaMalloc(&daq, n(R * I)));
  CK(cudaMalloc(&das, n(R * KI) * 4));
  CK(cudaMalloc(&dfq, n(R * I)));
  CK(cudaMalloc(&dfs, n(R * KI) * 4));
  CK(cudaMalloc(&dact, n(R * I) * 2));
  CK(cudaMalloc(&dy, n(R * h) * 2));
  CK(cudaMalloc(&dyf, n(R * h) * 2));
  CK(cudaMalloc(&work, static_cast<std::size_t>(cuda::fp8_block_work_bytes(R, E, h, I))));
  CK(cudaMemset(dact, 0xFF, n(R * I) * 2));
  CK(cudaMemset(dy, 0xFF, n(R * h) * 2));
  CK(cudaMemset(dyf, 0xFF, n(R * h) * 2));
  CK(cudaMemset(dfq, 0x7F, n(R * I)));
  CK(cudaMemset(dfs, 0xFF, n(R * KI) * 4));
  const auto w = cuda::fp8_block_work(work, R, E, h, I);
  cuda::fp8_quantize_1x128(reinterpret_cast<const __nv_bfloat16*>(dxb), R, h, dx, dxs, nullptr);
  cuda::fp8_quantize_128x128(reinterpret_cast<const __nv_bfloat16*>(dw13b), 2 * E, I, h, dw13, dw13s, nullptr);
  cuda::fp8_quantize_128x128(reinterpret_cast<const __nv_bfloat16*>(dwdb), E, h, I, dwd, dwds, nullptr);
  cuda::fp8_block_tiles(dcounts, E, h, I, w, nullptr);
  cuda::fp8_block_gate_up_sm90(dx, dxs, R, h, dw13, dw13s, E, I, dact, nullptr, nullptr, w.gu, w.gu_max, w.live, act,
                               nullptr);
  cuda::fp8_quantize_1x128(dact, R, I, daq, das, nullptr);
  cuda::fp8_block_down_sm90(daq, das, R, I, dwd, dwds, E, h, dy, w.dn, w.dn_max, w.live + 1, nullptr);
  cuda::fp8_block_gate_up_sm90(dx, dxs, R, h, dw13, dw13s, E, I, nullptr, dfq, dfs, w.gu, w.gu_max, w.live, act,
                               nullptr);
  cuda::fp8_block_down_sm90(dfq, dfs, R, I, dwd, dwds, E, h, dyf, w.dn, w.dn_max, w.live + 1, nullptr);
  CK(cudaDeviceSynchronize());
  // The device quantizers equal the host's.
  EXPECT_EQ(download(dx, static_cast<std::size_t>(R * h)), x.q);
  EXPECT_EQ(download(dxs, static_cast<std::size_t>(R * KH)), x.scales);
  EXPECT_EQ(download(dw13, static_cast<std::size_t>(E * 2 * I * h)), w13.q);
  EXPECT_EQ(download(dw13s, static_cast<std::size_t>(2 * E * KI * KH)), w13.scales);
  EXPECT_EQ(download(dwd, static_cast<std::size_t>(E * h * I)), wd.q);
  EXPECT_EQ(download(dwds, static_cast<std::size_t>(E * KH * KI)), wd.scales);
  const auto a = to_float(download(reinterpret_cast<const std::uint16_t*>(dact), static_cast<std::size_t>(R * I)));
  const std::string unwritten = unwritten_act(a, R, I, counts, w, [&] {
    cuda::fp8_block_gate_up_sm90(dx, dxs, R, h, dw13, dw13s, E, I, dact, nullptr, nullptr, w.gu, w.gu_max, w.live, act,
                                 nullptr);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return to_float(download(reinterpret_cast<const std::uint16_t*>(dact), static_cast<std::size_t>(R * I)));
  });
  EXPECT_EQ(unwritten, "") << "block gate/up + GLU: every act entry written";
  const auto ref_a = fp8::grouped_gate_up(fp8::dequantize(x), fp8::dequantize(w13), counts, h, I, act);
  const double ea = fp8::relative_error(a, ref_a);
  EXPECT_LE(ea, 1e-2) << "block gate/up + GLU against the oracle";
  const auto hq = fp8::quantize(a.data(), 1, R, I, row);
  EXPECT_EQ(download(daq, static_cast<std::size_t>(R * I)), hq.q);
  EXPECT_EQ(download(das, static_cast<std::size_t>(R * KI)), hq.scales);
  const auto wdd = fp8::dequantize(wd);
  const auto yv = to_float(download(reinterpret_cast<const std::uint16_t*>(dy), static_cast<std::size_t>(R * h)));
  const double ey = fp8::relative_error(yv, fp8::grouped_down(fp8::dequantize(hq), wdd, counts, I, h));
  EXPECT_LE(ey, 1e-2) << "block down against the oracle";
  // Fused: codes within one step of, scales within 2^-8 of the host's quantization of the bf16 act.
  fp8::Quantized f;
  f.scaling = row;
  f.rows = R;
  f.cols = I;
  f.q = download(dfq, static_cast<std::size_t>(R * I));
  f.scales = download(dfs, static_cast<std::size_t>(R * KI));
  std::int64_t far = 0, off = 0;
  for (std::size_t i = 0; i < f.q.size(); ++i) far += std::abs(signed_code(f.q[i]) - signed_code(hq.q[i])) > 1;
  for (std::size_t i = 0; i < f.scales.size(); ++i)
    off += !(std::fabs(f.scales[i] - hq.scales[i]) <= hq.scales[i] * 0x1p-8f);
  EXPECT_EQ(far, 0) << "fused e4m3 codes more than one step from the host's";
  EXPECT_EQ(off, 0) << "fused scales off the host's";
  const auto fd = fp8::dequantize(f);
  std::vector<float> fdv(fd.begin(), fd.end());
  const double ef = fp8::relative_error(fdv, ref_a);
  EXPECT_LE(ef, 5e-2) << "fused e4m3 act against the oracle (e4m3 rounding)";
  const auto yfv = to_float(download(reinterpret_cast<const std::uint16_t*>(dyf), static_cast<std::size_t>(R * h)));
  const double eyf = fp8::relative_error(yfv, fp8::grouped_down(fd, wdd, counts, I, h));
  EXPECT_LE(eyf, 1e-2) << "block down on the fused act against the oracle";
  std::printf("fp8 block h %lld I %lld E %lld (%s): ||act - ref|| / ||ref|| %.3g, ||y - ref|| / ||ref|| %.3g; fused: "
              "e4m3 act %.3g, y %.3g\n",
              static_cast<long long>(h), static_cast<long long>(I), static_cast<long long>(E), variant, ea, ey, ef, eyf);
  for (void* p : {static_cast<void*>(dxb), static_cast<void*>(dw13b), static_cast<void*>(dwdb), static_cast<void*>(dcounts),
                  static_cast<void*>(dx), static_cast<void*>(dxs), static_cast<void*>(dw13), static_cast<void*>(dw13s),
                  static_cast<void*>(dwd), static_cast<void*>(dwds), static_cast<void*>(daq), static_cast<void*>(das),
                  static_cast<void*>(dfq), static_cast<void*>(dfs), static_cast<void*>(dact), static_cast<void*>(dy),
                  static_cast<void*>(dyf), work})
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
  for (const char* v : {"paired", "unpaired+whole-tiles", "paired+pair-order", "paired+staggered", "unpaired+staggered"}) {
    run_case(144, 48, {1, 0, 130, 64, 257}, silu, v);       // K = 144: one full and one partial step
    run_case(384, 272, {200, 5, 0, 1}, clamped, v);         // I = 272: a gate/up block of 16 columns; h off 256
  }
}

TEST_F(Fp8GroupedGpu, BlockScaledMatchesTheOracle) {
  ActivationSpec silu;
  ActivationSpec clamped;
  clamped.kind = Activation::swiglu_clamped;
  for (const char* v : {"paired", "unpaired", "paired+pair-order", "paired+staggered", "paired+ordered", "unpaired+ordered"}) {
    run_block_case(144, 48, {1, 0, 130, 64, 257}, silu, v);  // K = 144: one full and one partial scale block
    run_block_case(384, 272, {200, 5, 0, 1}, clamped, v);    // I = 272: a 16-column last block; h off 128
    run_block_case(256, 192, {65, 128, 3}, silu, v);         // I = 192: the last unit's second half past I
  }
}

// Several units per CTA and K steps past the ring's depth (h = 528: 5 steps; I = 400: 4), 24
// experts of uneven counts (empty, one row, 64 / 65 / 127 / 128 / 129, several hundred): the
// producer waits on freed stages, the parities flip, a CTA's staging buffer is reused from one
// unit to the next, and down's last 256-column block is partial (528 = 2 x 256 + 16).
TEST_F(Fp8GroupedGpu, BlockScaledManyUnitsPerCta) {
  ActivationSpec silu;
  const std::vector<std::int64_t> counts = {300, 0,   1,   64,  65,  127, 128, 129, 700, 257, 512, 383,
                                            64,  450, 2,   600, 333, 190, 420, 0,   256, 129, 611, 380};
  for (const char* v : {"paired", "unpaired", "paired+pair-order", "paired+staggered", "paired+ordered", "unpaired+ordered"})
    run_block_case(528, 400, counts, silu, v);
}

// The rowwise kernels over the same many units: the staggered warpgroups keep their offset from
// one tile to the next (and a warpgroup 0 with no rows in a tile still lets warpgroup 1 go).
TEST_F(Fp8GroupedGpu, RowwiseManyUnitsPerCta) {
  ActivationSpec silu;
  const std::vector<std::int64_t> counts = {300, 0,   1,   64,  65,  127, 128, 129, 700, 257, 512, 383,
                                            64,  450, 2,   600, 333, 190, 420, 0,   256, 129, 611, 380};
  for (const char* v : {"paired", "paired+staggered", "unpaired+staggered"}) run_case(528, 400, counts, silu, v);
}

// The launch variant's words (host only: runs without a GPU): the warpgroup schedules.
TEST(GroupedVariantWords, TheWarpgroupSchedules) {
  const auto v = cuda::parse_grouped_variant("unpaired+staggered");
  EXPECT_FALSE(v.paired);
  EXPECT_TRUE(v.staggered);
  EXPECT_FALSE(v.ordered);
  EXPECT_NE(cuda::describe(v).find("warpgroups staggered"), std::string::npos);
  const auto o = cuda::parse_grouped_variant("staggered+ordered");  // the last word holds
  EXPECT_TRUE(o.ordered);
  EXPECT_FALSE(o.staggered);
  EXPECT_NE(cuda::describe(o).find("warpgroups take turns"), std::string::npos);
  const auto d = cuda::parse_grouped_variant("ordered+in-step");
  EXPECT_FALSE(d.ordered || d.staggered);
  EXPECT_EQ(cuda::describe(d), cuda::describe(cuda::StdGroupedVariant{}));
  EXPECT_EQ(cuda::describe(d).find("warpgroups"), std::string::npos);
  EXPECT_THROW(cuda::parse_grouped_variant("paired+staggerd"), UsageError);
}

TEST_F(Fp8GroupedGpu, UnsupportedShapesSayWhy) {
  EXPECT_NE(cuda::fp8_block_unsupported(136, 256, 4, 64), "");
  EXPECT_NE(cuda::fp8_block_unsupported(256, 256, 0, 64), "");
  EXPECT_NE(cuda::fp8_block_unsupported(256, 256, 4, std::int64_t{1} << 31), "");
  EXPECT_NE(cuda::fp8_grouped_unsupported(136, 256, 4), "");  // 136 bytes: not a 16-byte row stride
  EXPECT_NE(cuda::fp8_grouped_unsupported(256, 256, 0), "");
  EXPECT_NE(cuda::fp8_grouped_unsupported(256, 256, cuda::kStdGroupedMaxExperts + 1), "");
}

}  // namespace
}  // namespace layerbench::moe
