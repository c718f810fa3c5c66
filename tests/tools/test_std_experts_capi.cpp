// liblayerbench_std_experts' C ABI (tools/std_experts_capi.h): bad input is answered with code 2
// and one message before any device work (host); on a GPU, the wgmma and per-expert paths run
// through the ABI on the caller's stream agree (bf16 rounding) at edge counts (1 row, empty
// experts, an expert over one 128-row tile), and "automatic" without a table is the per-expert path.
#include "tools/std_experts_capi.h"

#include "moe/magi2/cuda_kernels.cuh"
#include "moe/init.hpp"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::string last() { return lbse_last_error(); }

struct Handle {
  lbse_handle* h = nullptr;
  ~Handle() { lbse_destroy(h); }
};

TEST(StdExpertsCapi, RejectsBadPresetsPathsAndTables) {
  lbse_handle* h = nullptr;
  EXPECT_EQ(lbse_create("no-such-model", "wgmma", nullptr, &h), 2);
  EXPECT_EQ(h, nullptr);
  EXPECT_NE(last().find("no-such-model"), std::string::npos) << last();
  EXPECT_EQ(lbse_create("magi-2", "wgmma", nullptr, &h), 2);
  EXPECT_NE(last().find("not a standard block"), std::string::npos) << last();
  EXPECT_EQ(lbse_create("qwen3-30b-a3b", "fastest", nullptr, &h), 2);
  EXPECT_NE(last().find("fastest"), std::string::npos) << last();
  EXPECT_EQ(lbse_create("qwen3-30b-a3b", "wgmma:sideways", nullptr, &h), 2);
  EXPECT_NE(last().find("'sideways'"), std::string::npos) << last();
  EXPECT_EQ(lbse_create("qwen3-30b-a3b", "per-expert:unpaired", nullptr, &h), 2);
  EXPECT_NE(last().find("wgmma path only"), std::string::npos) << last();
  EXPECT_EQ(lbse_create("qwen3-30b-a3b", "automatic", "no/such/table.tsv", &h), 2);
  EXPECT_NE(last().find("no/such/table.tsv"), std::string::npos) << last();
  EXPECT_EQ(lbse_create(nullptr, "wgmma", nullptr, &h), 2);
  EXPECT_EQ(lbse_create("qwen3-30b-a3b", "wgmma", nullptr, nullptr), 2);
}

TEST(StdExpertsCapi, ShapeIsThePresets) {
  Handle g;
  ASSERT_EQ(lbse_create("qwen3-30b-a3b", "wgmma", nullptr, &g.h), 0) << last();
  std::int64_t hid = 0, inter = 0, experts = 0;
  ASSERT_EQ(lbse_shape(g.h, &hid, &inter, &experts), 0);
  EXPECT_EQ(hid, 2048);
  EXPECT_EQ(inter, 768);
  EXPECT_EQ(experts, 128);
  EXPECT_STREQ(lbse_path(g.h), "wgmma");
  EXPECT_EQ(lbse_shape(g.h, nullptr, &inter, &experts), 2);
}

TEST(StdExpertsCapi, WgmmaTakesLaunchModifiers) {
  Handle g;
  ASSERT_EQ(lbse_create("qwen3-30b-a3b", "wgmma:pair-order+in-place", nullptr, &g.h), 0) << last();
  EXPECT_STREQ(lbse_path(g.h), "wgmma:pair-order+in-place");
  Handle l2;
  ASSERT_EQ(lbse_create("qwen3-30b-a3b", "wgmma:a-evict-last+b-evict-first+at-once", nullptr, &l2.h), 0) << last();
  EXPECT_STREQ(lbse_path(l2.h), "wgmma:a-evict-last+b-evict-first+at-once");
  Handle bad;
  EXPECT_EQ(lbse_create("qwen3-30b-a3b", "wgmma:c-evict-last", nullptr, &bad.h), 2);
  EXPECT_NE(last().find("'c-evict-last'"), std::string::npos) << last();
  EXPECT_NE(last().find("a-/b- with evict-first"), std::string::npos) << last();
}

TEST(StdExpertsCapi, RunRejectsAShapeThatIsNotTheHandlesBeforeTouchingTheDevice) {
  Handle g;
  ASSERT_EQ(lbse_create("qwen3-30b-a3b", "per-expert", nullptr, &g.h), 0) << last();
  std::vector<std::int64_t> counts(128, 2);
  int dummy = 0;  // never dereferenced: every call below fails validation
  void* p = &dummy;
  EXPECT_EQ(lbse_run(g.h, p, p, p, p, counts.data(), 64, 256, nullptr), 2);
  EXPECT_NE(last().find("64 experts"), std::string::npos) << last();
  EXPECT_EQ(lbse_run(g.h, p, p, p, p, counts.data(), 128, 255, nullptr), 2);
  EXPECT_NE(last().find("sum to 256"), std::string::npos) << last();
  counts[3] = -1;
  EXPECT_EQ(lbse_run(g.h, p, p, p, p, counts.data(), 128, 253, nullptr), 2);
  EXPECT_NE(last().find("counts[3]"), std::string::npos) << last();
  counts[3] = 2;
  EXPECT_EQ(lbse_run(g.h, nullptr, p, p, p, counts.data(), 128, 256, nullptr), 2);
  EXPECT_EQ(lbse_run(g.h, p, p, p, p, nullptr, 128, 256, nullptr), 2);
  EXPECT_EQ(lbse_run(nullptr, p, p, p, p, counts.data(), 128, 256, nullptr), 2);
  std::fill(counts.begin(), counts.end(), 0);  // no rows: nothing to do, no device needed
  EXPECT_EQ(lbse_run(g.h, nullptr, p, p, nullptr, counts.data(), 128, 0, nullptr), 0) << last();
  EXPECT_STREQ(lbse_describe(g.h), "not run yet");
}

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

TEST(StdExpertsCapi, WithoutADeviceARunIsARuntimeFailure) {
  if (have_gpu()) GTEST_SKIP() << "a device is present";
  Handle g;
  ASSERT_EQ(lbse_create("qwen3-30b-a3b", "wgmma", nullptr, &g.h), 0) << last();
  std::vector<std::int64_t> counts(128, 1);
  int dummy = 0;
  void* p = &dummy;
  EXPECT_EQ(lbse_run(g.h, p, p, p, p, counts.data(), 128, 128, nullptr), 1);
  EXPECT_FALSE(last().empty());
}

float bf16_to_float(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void* seeded(std::int64_t rows, std::int64_t cols, std::uint32_t tensor, float scale) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, static_cast<std::size_t>(rows * cols) * 2), cudaSuccess);
  layerbench::moe::cuda::fill(p, true, {.seed = 5, .tensor = tensor, .scale = scale, .rows = rows, .cols = cols,
                                        .full_cols = cols, .ld = cols}, nullptr);
  return p;
}

std::vector<std::uint16_t> run_path(const char* path, const std::vector<std::int64_t>& counts, std::int64_t rows,
                                    const void* x, const void* w13, const void* wd, cudaStream_t st,
                                    std::string* taken) {
  Handle g;
  EXPECT_EQ(lbse_create("qwen3-30b-a3b", path, nullptr, &g.h), 0) << last();
  void* y = nullptr;
  EXPECT_EQ(cudaMalloc(&y, static_cast<std::size_t>(rows * 2048) * 2), cudaSuccess);
  EXPECT_EQ(cudaMemsetAsync(y, 0xff, static_cast<std::size_t>(rows * 2048) * 2, st), cudaSuccess);  // NaN
  EXPECT_EQ(lbse_run(g.h, x, w13, wd, y, counts.data(), 128, rows, st), 0) << last();
  std::vector<std::uint16_t> out(static_cast<std::size_t>(rows * 2048));
  EXPECT_EQ(cudaMemcpyAsync(out.data(), y, out.size() * 2, cudaMemcpyDeviceToHost, st), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(st), cudaSuccess);
  cudaFree(y);
  *taken = lbse_path(g.h);
  return out;
}

TEST(StdExpertsCapi, PathsThroughTheAbiAgreeOnTheCallersStream) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const std::int64_t H = 2048, I = 768, E = 128;
  std::vector<std::int64_t> counts(E);
  for (std::int64_t e = 0; e < E; ++e) counts[e] = e % 5 == 0 ? 0 : e % 7 + 1;
  counts[1] = 1;
  counts[7] = 130;
  std::int64_t rows = 0;
  for (auto c : counts) rows += c;
  void* x = seeded(rows, H, 1, std::sqrt(3.0f));
  void* w13 = seeded(E * 2 * I, H, 2, std::sqrt(3.0f / H));
  void* wd = seeded(E * H, I, 3, std::sqrt(3.0f / I));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaStream_t st = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
  std::string t1, t2, t3;
  const auto ref = run_path("per-expert", counts, rows, x, w13, wd, st, &t1);
  const auto wg = run_path("wgmma", counts, rows, x, w13, wd, st, &t2);
  const auto au = run_path("automatic", counts, rows, x, w13, wd, st, &t3);
  std::string t4;
  const auto wv = run_path("wgmma:unpaired+whole-tiles+in-place", counts, rows, x, w13, wd, st, &t4);
  EXPECT_EQ(t4, "wgmma:unpaired+whole-tiles+in-place");
  EXPECT_EQ(wv, wg);  // every launch variant computes the same bits
  // No table: the device's default, the grouped wgmma kernels on sm_90 (bit for bit their output),
  // elsewhere per-expert cuBLAS over 4 streams at 128 local experts (bit for bit per-expert's).
  int major = 0, minor = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), cudaSuccess);
  const bool sm90 = major == 9 && minor == 0;
  EXPECT_EQ(t3, sm90 ? "wgmma" : "multi-stream");
  EXPECT_EQ(au, sm90 ? wg : ref);
  double err = 0, mx = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double a = bf16_to_float(ref[i]), b = bf16_to_float(wg[i]);
    ASSERT_TRUE(std::isfinite(a) && std::isfinite(b)) << "row " << i / H;
    err = std::max(err, std::fabs(a - b));
    mx = std::max(mx, std::fabs(a));
  }
  EXPECT_GT(mx, 0.0);
  EXPECT_LE(err, 2e-2 * mx) << "wgmma vs per-expert through the ABI (" << t2 << ")";
  cudaStreamDestroy(st);
  cudaFree(x);
  cudaFree(w13);
  cudaFree(wd);
}

}  // namespace
