// layerbench-moe-kernels: the fused expert gate/up + SwiGLU7 kernels alone, one GPU, on a
// synthetic load (experts with seeded random row counts around a mean), checked against each
// other before timing. Prints median / min ms over the timed launches and the useful rate
// (2 FLOP per MAC of the GEMM over live rows; tile padding not counted): the gate/up kernels
// and, on Hopper, the down kernel (checked against an fp64 product of sampled rows first).
//   layerbench-moe-kernels [--experts 1536] [--mean-rows 352] [--d 256] [--inter 1280]
#include "bench/cli/app.hpp"
#include "collectives/cuda_internal.hpp"
#include "collectives/device.hpp"
#include "collectives/types.hpp"
#include "moe/cuda_kernels.cuh"
#include "moe/init.hpp"
#include "stats/summary.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

using namespace layerbench;
using namespace layerbench::moe;

int main(int argc, char** argv) {
  CLI::App app{"layerbench-moe-kernels: the fused expert gate/up + SwiGLU7 kernels on one GPU"};
  layerbench::cli::init_app(app, "layerbench-moe-kernels");
  std::int64_t experts = 1536, mean_rows = 352, d = 256, inter = 1280;
  int iterations = 30, warmup = 5;
  double spread = 0.3;
  app.add_option("--experts", experts, "experts (an SP2 rank of the released geometry: 6 heads x 256)")->check(CLI::PositiveNumber);
  app.add_option("--mean-rows", mean_rows, "mean rows per expert (7500 x 2 tokens x top-6 / 256)")->check(CLI::PositiveNumber);
  app.add_option("--spread", spread, "row counts uniform in mean x [1 - spread, 1 + spread]")->check(CLI::Range(0.0, 1.0));
  app.add_option("--d", d, "d_head (K of the gate/up GEMM)")->check(CLI::Range(8, 256));
  app.add_option("--inter", inter, "expert intermediate size I")->check(CLI::PositiveNumber);
  app.add_option("--iterations", iterations, "timed launches")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed launches first")->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  if (d % 8 != 0 || inter % 8 != 0) {
    fmt::print(stderr, "error: --d and --inter must be multiples of 8\n");
    return 2;
  }
  if (cuda_device_count() == 0) {
    fmt::print(stderr, "error: no CUDA device\n");
    return 1;
  }
  auto dev = make_cuda_device(0);
  const auto st = detail::cuda_stream(dev->compute_stream());

  // Seeded counts, compact expert-major rows, 128-row tiles in expert order.
  std::vector<int> counts(experts);
  std::vector<std::int64_t> base(experts);
  std::int64_t rows = 0, live = 0;
  for (std::int64_t e = 0; e < experts; ++e) {
    const double u = seeded_value(5, 9, static_cast<std::uint64_t>(e), 1.0f);  // [-1, 1)
    counts[e] = std::max(1, static_cast<int>(std::lround(mean_rows * (1.0 + spread * u))));
    base[e] = rows;
    rows += counts[e];
    live += counts[e];
  }
  std::vector<int> order(experts);
  for (std::int64_t e = 0; e < experts; ++e) order[e] = static_cast<int>(e);
  std::vector<cuda::ExpertTile> tiles(static_cast<std::size_t>(expert_tile_count(counts, order)));
  fill_expert_tiles(counts, base, order, tiles);
  std::vector<std::uint8_t> tile_bytes(tiles.size() * sizeof(cuda::ExpertTile));
  std::memcpy(tile_bytes.data(), tiles.data(), tile_bytes.size());
  Buffer dt = dev->upload(tile_bytes);
  Buffer dx = dev->alloc(static_cast<std::size_t>(rows * d) * 2);
  Buffer dw = dev->alloc(static_cast<std::size_t>(experts * d * 2 * inter) * 2);
  Buffer dwk = dev->alloc(static_cast<std::size_t>(cuda::w13_kmajor_elems(experts, d, inter)) * 2);
  Buffer da = dev->alloc(static_cast<std::size_t>(rows * inter) * 2);
  Buffer db = dev->alloc(static_cast<std::size_t>(rows * inter) * 2);
  cuda::fill(dx.data(), true, {.seed = 3, .tensor = 1, .scale = 1.7f, .rows = rows, .cols = d, .full_cols = d, .ld = d}, st);
  cuda::fill(dw.data(), true, {.seed = 3, .tensor = 2, .scale = 1.0f / std::sqrt(float(d)), .rows = experts * d, .cols = 2 * inter, .full_cols = 2 * inter, .ld = 2 * inter}, st);
  const auto* xs = static_cast<const cuda::bf16*>(dx.data());
  const auto* w13 = static_cast<const cuda::bf16*>(dw.data());
  const auto* w13k = static_cast<const cuda::bf16*>(dwk.data());
  const auto* tl = static_cast<const cuda::ExpertTile*>(dt.data());
  const auto nt = static_cast<std::int64_t>(tiles.size());
  const bool sm90 = cuda::gate_up_swiglu_sm90_supported(d, inter);
  if (sm90) cuda::prepare_w13_kmajor(w13, static_cast<cuda::bf16*>(dwk.data()), experts, d, inter, st);

  // Check: the two kernels agree on every live row (both are checked against the CPU in
  // test_expert_gemm_gpu at small shapes).
  if (sm90) {
    cuda::gate_up_swiglu_sm90(xs, rows, w13k, experts, da.as<cuda::bf16>(), tl, nt, d, inter, st);
    cuda::gate_up_swiglu(xs, w13, db.as<cuda::bf16>(), tl, nt, d, inter, st);
    const auto a = dev->download<std::uint16_t>(da.data(), static_cast<std::size_t>(rows * inter));
    const auto b = dev->download<std::uint16_t>(db.data(), static_cast<std::size_t>(rows * inter));
    double err = 0, mx = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double x = bf16_bits_to_float(a[i]), y = bf16_bits_to_float(b[i]);
      err = std::max(err, std::fabs(x - y));
      mx = std::max(mx, std::fabs(y));
    }
    fmt::print("check: wgmma vs mma.sync max |diff| {:.3g} (max |out| {:.3g}) over {} rows\n", err, mx, rows);
    if (!(err <= 2e-2 * mx) || !(mx > 0)) {
      fmt::print(stderr, "error: the kernels disagree\n");
      return 1;
    }
  }

  const double flop = 2.0 * static_cast<double>(live) * static_cast<double>(d) * 2.0 * static_cast<double>(inter);
  fmt::print("experts {}, rows {} (mean {}, spread {}), d {}, I {}, tiles {}, {:.3f} TFLOP per launch\n", experts,
             rows, mean_rows, spread, d, inter, nt, flop * 1e-12);
  fmt::print("| kernel | median ms | min ms | TFLOP/s (median) |\n|---|---:|---:|---:|\n");
  double flop_scale = 1.0;  // the down GEMM has half the gate/up FLOPs
  const Stream cs = dev->compute_stream();
  auto timer = dev->make_timer();
  auto time = [&](const char* name, const std::function<void()>& launch) {
    for (int i = 0; i < warmup; ++i) launch();
    std::vector<double> ms;
    for (int i = 0; i < iterations; ++i) {
      timer->start(cs);
      launch();
      timer->stop(cs);
      ms.push_back(timer->elapsed_ms());
    }
    const auto sum = stats::summarize(ms);
    fmt::print("| {} | {:.4f} | {:.4f} | {:.1f} |\n", name, sum.median, sum.min,
               flop_scale * flop / (sum.median * 1e-3) * 1e-12);
  };
  if (sm90) {
    time("wgmma (sm_90a)", [&] { cuda::gate_up_swiglu_sm90(xs, rows, w13k, experts, da.as<cuda::bf16>(), tl, nt, d, inter, st); });
  }
  time("mma.sync", [&] { cuda::gate_up_swiglu(xs, w13, db.as<cuda::bf16>(), tl, nt, d, inter, st); });
  if (cuda::down_sm90_supported(d, inter)) {
    // The down GEMM over the same tiles: act (rows, I) x W_down (E, I, d).
    Buffer dwd = dev->alloc(static_cast<std::size_t>(experts * inter * d) * 2);
    Buffer dwdk = dev->alloc(static_cast<std::size_t>(cuda::wdown_kmajor_elems(experts, inter)) * 2);
    Buffer dy = dev->alloc(static_cast<std::size_t>(rows * d) * 2);
    cuda::fill(dwd.data(), true, {.seed = 3, .tensor = 4, .scale = 1.0f / std::sqrt(float(inter)), .rows = experts * inter, .cols = d, .full_cols = d, .ld = d}, st);
    cuda::prepare_wdown_kmajor(dwd.as<cuda::bf16>(), dwdk.as<cuda::bf16>(), experts, d, inter, st);
    if (!sm90)  // act comes from the gate/up kernel only on the wgmma path: seed it otherwise
      cuda::fill(da.data(), true, {.seed = 3, .tensor = 5, .scale = 1.0f, .rows = rows, .cols = inter, .full_cols = inter, .ld = inter}, st);
    // Check the down kernel before timing it: sampled rows of every 97th expert against an fp64
    // product of the same bf16 inputs (act from the gate/up kernel above).
    cuda::down_sm90(da.as<cuda::bf16>(), rows, dwdk.as<cuda::bf16>(), experts, dy.as<cuda::bf16>(), tl, nt, d, inter, st);
    const auto act = dev->download<std::uint16_t>(da.data(), static_cast<std::size_t>(rows * inter));
    const auto wdn = dev->download<std::uint16_t>(dwd.data(), static_cast<std::size_t>(experts * inter * d));
    const auto y = dev->download<std::uint16_t>(dy.data(), static_cast<std::size_t>(rows * d));
    double derr = 0, dmax = 0;
    std::int64_t checked = 0;
    for (std::int64_t e = 0; e < experts; e += 97) {
      for (std::int64_t r : {std::int64_t{0}, std::int64_t{counts[e] - 1}}) {
        const std::int64_t row = base[e] + r;
        for (std::int64_t col = 0; col < d; ++col) {
          double ref = 0;
          for (std::int64_t q = 0; q < inter; ++q)
            ref += double(bf16_bits_to_float(act[row * inter + q])) *
                   bf16_bits_to_float(wdn[(e * inter + q) * d + col]);
          derr = std::max(derr, std::fabs(ref - bf16_bits_to_float(y[row * d + col])));
          dmax = std::max(dmax, std::fabs(ref));
        }
        ++checked;
      }
    }
    fmt::print("check: down kernel vs fp64 max |diff| {:.3g} (max |ref| {:.3g}) over {} rows\n", derr, dmax, checked);
    if (!(derr <= 2e-2 * dmax) || !(dmax > 0)) {
      fmt::print(stderr, "error: the down kernel disagrees with the reference\n");
      return 1;
    }
    const double down_flop = 2.0 * static_cast<double>(live) * static_cast<double>(d) * static_cast<double>(inter);
    flop_scale = down_flop / flop;
    time("down GEMM, wgmma (sm_90a)", [&] {
      cuda::down_sm90(da.as<cuda::bf16>(), rows, dwdk.as<cuda::bf16>(), experts, dy.as<cuda::bf16>(), tl, nt, d, inter, st);
    });
  }
  return 0;
}
